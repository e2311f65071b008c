//! Every `TransactWriteItems` goes through [`transact`], and every single write that
//! DynamoDB may throttle or find in a transaction's way through [`retrying`]. On AWS a
//! transaction is cancelled when another in-flight one holds any of its items, and any
//! write is throttled past a partition's (or an item's) rate; the SDKs retry neither a
//! cancelled transaction nor a conflicting write. Both helpers retry what DynamoDB did not
//! do, with jittered exponential backoff, within a budget; past it the caller gets
//! [`StoreError::Busy`] (the API answers 503 with `Retry-After`).
//!
//! A transaction that may have been applied but whose answer was lost (a timeout, a reset
//! connection, a 5xx) is sent again with the same client request token: within DynamoDB's
//! ten-minute window, a token that already succeeded succeeds again without writing.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason, TransactWriteItem};

use super::error::{busy_code, Busy};
use super::{Store, StoreError};

pub type Item = HashMap<String, AttributeValue>;

/// How many times, and how patiently, a refused write is tried again.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

/// About two seconds in all: long enough to ride out a conflict or a throttle burst, short
/// enough that the client is told "503, retry" before its own timeout.
pub const BUDGET: Budget = Budget {
    attempts: 9,
    base: Duration::from_millis(10),
    cap: Duration::from_millis(500),
};

/// "Full jitter": a random pause up to the exponential bound, so that writers that
/// collided do not collide again in step.
pub async fn backoff(budget: Budget, attempt: u32) {
    let bound = budget
        .base
        .saturating_mul(1u32 << attempt.min(16))
        .min(budget.cap);
    let mut b = [0u8; 4];
    let r = getrandom::fill(&mut b).map_or(0, |_| u32::from_le_bytes(b));
    let ms = bound.as_millis() as u64;
    let pause = Duration::from_millis(ms / 2 + u64::from(r) % (ms / 2 + 1));
    tokio::time::sleep(pause).await;
}

/// Runs `write` until it succeeds, fails for good, or the budget is spent; only throttles
/// and conflicts (where DynamoDB wrote nothing) are tried again.
pub async fn retrying<T, F, Fut>(mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut attempt = 0;
    loop {
        match write().await {
            Err(e) if e.is_retryable() && attempt + 1 < BUDGET.attempts => {
                crate::server::metrics::dynamodb_retry(e.operation().unwrap_or("unknown"));
                backoff(BUDGET, attempt).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Why one action of a cancelled transaction failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// This action was fine; another one failed.
    None,
    /// Its condition failed; the item as it was (when the action asked for it).
    ConditionFailed(Option<Item>),
    /// Another transaction held the item.
    Conflict,
    /// The item or its partition was over its rate.
    Throttled,
    /// Anything else (a validation error, an item collection too large, ...).
    Other(String),
}

impl Reason {
    pub fn of(r: &CancellationReason) -> Reason {
        match r.code().unwrap_or("None") {
            "None" => Reason::None,
            "ConditionalCheckFailed" => {
                Reason::ConditionFailed(r.item().filter(|i| !i.is_empty()).cloned())
            }
            "TransactionConflict" => Reason::Conflict,
            "ThrottlingError" | "ProvisionedThroughputExceeded" => Reason::Throttled,
            other => Reason::Other(other.to_string()),
        }
    }
}

/// The reasons of every action of a cancelled transaction, in action order.
pub fn reasons(e: &TransactWriteItemsError) -> Vec<Reason> {
    match e {
        TransactWriteItemsError::TransactionCanceledException(c) => {
            c.cancellation_reasons().iter().map(Reason::of).collect()
        }
        _ => Vec::new(),
    }
}

/// How a transaction ended, when it was not a failure.
#[derive(Debug)]
pub enum Outcome {
    Done,
    /// Conditions failed, nothing was written: `(action index, the item as it was)`.
    Refused(Vec<(usize, Option<Item>)>),
}

impl Outcome {
    /// The item action `index` found, if its condition failed.
    pub fn refused_at(&self, index: usize) -> Option<Option<&Item>> {
        match self {
            Outcome::Refused(r) => r
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, it)| it.as_ref()),
            Outcome::Done => None,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done)
    }

    /// The actions whose conditions failed, in action order.
    pub fn into_refusals(self) -> Vec<Refusal> {
        match self {
            Outcome::Refused(r) => r
                .into_iter()
                .map(|(index, item)| Refusal { index, item })
                .collect(),
            Outcome::Done => Vec::new(),
        }
    }
}

/// Writes prepared for one transaction. Opaque outside the store: a domain service gets
/// them from a store function and hands them to whoever commits them (the idempotency
/// engine's one-request path puts its key in front of them).
pub struct Writes(Vec<TransactWriteItem>);

impl Writes {
    pub(crate) fn new(actions: Vec<TransactWriteItem>) -> Writes {
        Writes(actions)
    }

    pub(crate) fn into_actions(self) -> Vec<TransactWriteItem> {
        self.0
    }

    /// How many writes: where writes joined after these begin.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These writes followed by `more`'s, in one transaction.
    pub fn and(mut self, more: Writes) -> Writes {
        self.0.extend(more.0);
        self
    }

    /// Commits the writes on their own, as one transaction.
    pub async fn commit(self, store: &Store) -> Result<Outcome, StoreError> {
        transact(store, self.0).await
    }
}

/// One of a transaction's [`Writes`] refused by its condition: its place among them, and
/// the item it found (when it asked for it). Read back by the store module that wrote it.
#[derive(Debug)]
pub struct Refusal {
    pub index: usize,
    item: Option<Item>,
}

impl Refusal {
    pub(crate) fn item(&self) -> Option<&Item> {
        self.item.as_ref()
    }

    /// The same refusal counted from `by` actions later (actions put in front).
    pub(crate) fn shifted(self, by: usize) -> Refusal {
        Refusal {
            index: self.index - by,
            item: self.item,
        }
    }
}

/// What one attempt came to.
enum Attempt {
    Ended(Outcome),
    /// DynamoDB wrote nothing; a new attempt may go (with a new token).
    Retry(Busy, String),
    /// Maybe applied: the next attempt must carry the same token.
    Ambiguous(String),
}

fn classify(
    result: Result<
        (),
        SdkError<TransactWriteItemsError, aws_sdk_dynamodb::config::http::HttpResponse>,
    >,
) -> Result<Attempt, StoreError> {
    let err = match result {
        Ok(()) => return Ok(Attempt::Ended(Outcome::Done)),
        Err(e) => e,
    };
    let detail = DisplayErrorContext(&err).to_string();
    let service = match err {
        SdkError::ServiceError(s) => s.into_err(),
        SdkError::ConstructionFailure(_) => {
            return Err(StoreError::Request {
                op: "TransactWriteItems",
                detail,
            })
        }
        _ => return Ok(Attempt::Ambiguous(detail)),
    };
    let rs = reasons(&service);
    if !rs.is_empty() {
        let refused: Vec<(usize, Option<Item>)> = rs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Reason::ConditionFailed(item) => Some((i, item.clone())),
                _ => None,
            })
            .collect();
        if !refused.is_empty() {
            return Ok(Attempt::Ended(Outcome::Refused(refused)));
        }
        if rs.contains(&Reason::Conflict) {
            return Ok(Attempt::Retry(Busy::Conflict, detail));
        }
        if rs.contains(&Reason::Throttled) {
            return Ok(Attempt::Retry(Busy::Throttled, detail));
        }
        return Err(StoreError::Request {
            op: "TransactWriteItems",
            detail,
        });
    }
    match busy_code(service.code()) {
        Some(Busy::Unreachable) => Ok(Attempt::Ambiguous(detail)),
        // The same token still running elsewhere: wait for it, same token.
        Some(Busy::Conflict) if service.code() == Some("TransactionInProgressException") => {
            Ok(Attempt::Ambiguous(detail))
        }
        Some(cause) => Ok(Attempt::Retry(cause, detail)),
        None => Err(StoreError::Request {
            op: "TransactWriteItems",
            detail,
        }),
    }
}

fn new_token() -> String {
    crate::server::ids::random_hex(16)
}

/// Runs one transaction to its end: done, or refused by its conditions (with the items
/// that refused it). Conflicts and throttles are retried within [`BUDGET`]; an answer
/// that never came is retried with the same client request token, and so is every retry
/// after it (a throttle after a lost answer must not make a second transaction of it).
pub async fn transact(
    store: &Store,
    actions: Vec<TransactWriteItem>,
) -> Result<Outcome, StoreError> {
    let mut token = new_token();
    // An answer that never came: the transaction may have been applied under this token,
    // and only this token can say so. Every retry after it keeps it, a refusal's too.
    let mut unsure = false;
    let mut attempt = 0;
    loop {
        let result = store
            .client()
            .transact_write_items()
            .set_transact_items(Some(actions.clone()))
            .client_request_token(&token)
            .send()
            .await
            .map(|_| ());
        let (cause, detail) = match classify(result)? {
            Attempt::Ended(outcome) => return Ok(outcome),
            Attempt::Retry(cause, detail) => {
                if !unsure {
                    token = new_token();
                }
                (cause, detail)
            }
            Attempt::Ambiguous(detail) => {
                unsure = true;
                (Busy::Unreachable, detail)
            }
        };
        attempt += 1;
        if attempt >= BUDGET.attempts {
            return Err(StoreError::Busy {
                op: "TransactWriteItems",
                cause,
                detail,
            });
        }
        tracing::debug!(attempt, cause = cause.as_str(), "transaction tried again");
        backoff(BUDGET, attempt - 1).await;
    }
}
