//! `login_attempts-<env>`: counters of recent sign-in attempts, one item per counter (a
//! name from one address, an address, a name from anywhere: the domain names them). An
//! attempt is counted before its password is checked, in one conditional write, so a burst
//! of concurrent guesses cannot all pass the check before any is counted; an attempt that
//! turns out right is taken back.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

use crate::server::store::item::{self, n, s};
use crate::server::store::schema::LOGIN_ATTEMPTS;
use crate::server::store::{tx, Store, StoreError};

/// One counter as stored.
#[derive(Clone, Debug, Default, Deserialize)]
struct CounterItem {
    #[serde(default)]
    n: i64,
    /// When the counter's window began (ms).
    #[serde(default)]
    window_start: i64,
    /// Until when (ms) the counter refuses every attempt.
    #[serde(default)]
    locked_until: Option<i64>,
    /// A full counter that meters instead of locking: when (ms) its next attempt may be
    /// checked, and how many were checked past its limit in this window.
    #[serde(default)]
    next_turn: Option<i64>,
    #[serde(default)]
    turns: u32,
}

/// The rule of one counter: at most `limit` attempts within `window` of the first.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub limit: u32,
    pub window: Duration,
}

/// What counting an attempt came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Counted: the `n`th attempt of the window that began at `window_start` (ms).
    Counted { n: u32, window_start: i64 },
    /// Not counted: the counter refuses attempts until then.
    Locked { until: DateTime<Utc> },
}

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Counts one attempt against `key` under `rule`, unless the key is locked or its window
/// is full.
pub async fn reserve(
    store: &Store,
    key: &str,
    rule: Rule,
    now: DateTime<Utc>,
) -> Result<Reserved, StoreError> {
    let expires_at = (now + rule.window * 2).timestamp();
    // A race with another attempt that opened a new window sends us round once more.
    for _ in 0..4 {
        match add_one(store, key, rule, now, expires_at).await? {
            Ok(counted) => return Ok(counted),
            Err(old) => {
                if let Some(until) = old.locked_until.filter(|u| *u > ms(now)) {
                    return Ok(Reserved::Locked { until: at(until) });
                }
                let open_window = old.window_start > ms(now - rule.window);
                if open_window && old.n >= i64::from(rule.limit) {
                    let until = at(old.window_start) + rule.window;
                    return Ok(Reserved::Locked { until });
                }
                if !open_window && open_new_window(store, key, now, expires_at, rule).await? {
                    return Ok(Reserved::Counted {
                        n: 1,
                        window_start: ms(now),
                    });
                }
            }
        }
    }
    Err(StoreError::Busy {
        op: "UpdateItem",
        cause: crate::server::store::Busy::Conflict,
        detail: "sign-in attempts of one counter kept racing".into(),
    })
}

/// One more attempt in the open window, unless it is full or the counter is locked; on
/// refusal, the counter as it was (empty when there was none).
async fn add_one(
    store: &Store,
    key: &str,
    rule: Rule,
    now: DateTime<Utc>,
    expires_at: i64,
) -> Result<Result<Reserved, CounterItem>, StoreError> {
    let table = store.table(LOGIN_ATTEMPTS.base);
    let req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("name", s(key))
        .update_expression("ADD n :one SET expires_at = :exp")
        .condition_expression(
            "window_start > :cutoff AND n < :limit \
             AND (attribute_not_exists(locked_until) OR locked_until <= :now)",
        )
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":cutoff", n(ms(now - rule.window)))
        .expression_attribute_values(":limit", n(rule.limit))
        .expression_attribute_values(":now", n(ms(now)))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(out) => {
                let item: CounterItem = serde_dynamo::from_item(out.attributes.unwrap_or_default())
                    .map_err(|e| StoreError::corrupt(&table, e))?;
                Ok(Ok(Reserved::Counted {
                    n: u32::try_from(item.n).unwrap_or(u32::MAX),
                    window_start: item.window_start,
                }))
            }
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(c) => {
                    let old = c.item.unwrap_or_default();
                    let old: CounterItem =
                        serde_dynamo::from_item(old).map_err(|e| StoreError::corrupt(&table, e))?;
                    Ok(Err(old))
                }
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// Starts a new window holding this attempt, if the old one (if any) has ended and the
/// counter is not locked. False: another attempt got there first.
async fn open_new_window(
    store: &Store,
    key: &str,
    now: DateTime<Utc>,
    expires_at: i64,
    rule: Rule,
) -> Result<bool, StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(LOGIN_ATTEMPTS.base))
        .key("name", s(key))
        .update_expression(
            "SET n = :one, window_start = :now, expires_at = :exp \
             REMOVE locked_until, next_turn, turns",
        )
        .condition_expression(
            "(attribute_not_exists(window_start) OR window_start <= :cutoff) \
             AND (attribute_not_exists(locked_until) OR locked_until <= :now)",
        )
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":now", n(ms(now)))
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":cutoff", n(ms(now - rule.window)));
    item::update_if(req).await
}

/// Takes back an attempt counted in the window that began at `window_start` (it was
/// right). A window that has moved on since is left alone.
pub async fn release(store: &Store, key: &str, window_start: i64) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(LOGIN_ATTEMPTS.base))
        .key("name", s(key))
        .update_expression("ADD n :minus")
        .condition_expression("window_start = :ws AND n > :zero")
        .expression_attribute_values(":minus", n(-1))
        .expression_attribute_values(":ws", n(window_start))
        .expression_attribute_values(":zero", n(0));
    item::update_if(req).await.map(|_| ())
}

/// Refuses every attempt against `key` until `until`.
pub async fn lock(
    store: &Store,
    key: &str,
    until: DateTime<Utc>,
    expires_at: i64,
) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(LOGIN_ATTEMPTS.base))
        .key("name", s(key))
        .update_expression("SET locked_until = :u, expires_at = :exp")
        .expression_attribute_values(":u", n(ms(until)))
        .expression_attribute_values(":exp", n(expires_at));
    tx::retrying(|| async {
        req.clone()
            .send()
            .await
            .map_err(StoreError::request("UpdateItem"))
    })
    .await?;
    Ok(())
}

/// Whether an attempt against a full counter that meters (an address past its limit) may
/// be checked now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Yes: the counter's next turn is `wait` later (it doubles with each turn taken).
    Taken { wait: Duration },
    /// No: not before `until`.
    Wait { until: DateTime<Utc> },
}

/// Takes the counter's next turn, if it has come: one attempt past the limit is checked
/// per turn, and each turn taken doubles the wait for the next, from `first` up to `most`
/// (the window's end resets both). Conditioned on the turn it read, so of attempts racing
/// for one turn exactly one takes it.
pub async fn take_turn(
    store: &Store,
    key: &str,
    first: Duration,
    most: Duration,
    now: DateTime<Utc>,
) -> Result<Turn, StoreError> {
    let stored: Option<CounterItem> = item::get(store, LOGIN_ATTEMPTS.base, "name", key).await?;
    let stored = stored.unwrap_or_default();
    if let Some(next) = stored.next_turn.filter(|t| *t > ms(now)) {
        return Ok(Turn::Wait { until: at(next) });
    }
    let wait = (first * 2i32.saturating_pow(stored.turns.min(16))).min(most);
    let req = store
        .client()
        .update_item()
        .table_name(store.table(LOGIN_ATTEMPTS.base))
        .key("name", s(key))
        .update_expression("SET next_turn = :next, turns = :turns")
        .condition_expression(
            "attribute_exists(window_start) AND window_start = :ws \
             AND (attribute_not_exists(next_turn) OR next_turn = :seen)",
        )
        .expression_attribute_values(":next", n(ms(now + wait)))
        .expression_attribute_values(":turns", n(stored.turns + 1))
        .expression_attribute_values(":ws", n(stored.window_start))
        .expression_attribute_values(":seen", n(stored.next_turn.unwrap_or(0)));
    Ok(if item::update_if(req).await? {
        Turn::Taken { wait }
    } else {
        // Another attempt took this turn.
        Turn::Wait { until: now + wait }
    })
}
