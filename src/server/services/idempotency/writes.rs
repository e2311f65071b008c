//! The engine's one-request path, for operations whose whole effect is DynamoDB writes (a
//! kill-switch change, an audit record): the key, the effect and the answer go in one
//! transaction, conditioned on no live request holding the key. A new key costs that one
//! request and is never `started`; a duplicate is answered from the key the cancelled
//! transaction hands back, still one request. Operations with effects outside DynamoDB
//! keep the three-step path ([`Engine::run`]).

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use super::{in_progress, Attempt, Begin, Call, Engine, Outcome, SafeResponse, StopReason, Stored};
use crate::server::store::idempotency::{self as store, Committed, KeyItem, KeyStatus};
use crate::server::store::tx::{Refusal, Writes};
use crate::server::store::StoreError;

/// An operation's effect, ready to commit with its key.
pub struct Prepared {
    pub writes: Writes,
    /// What the caller is answered, now and on every replay.
    pub answer: Stored,
}

/// What [`Engine::commit`] did.
pub enum Committal<E> {
    /// The effect and its answer are stored, now, by this call.
    Done(Stored),
    /// The key was taken already: replay, in progress or mismatch, as [`Engine::begin`]
    /// says.
    Held(Begin),
    /// The operation refused to run, or its writes were refused: nothing is stored.
    Failed(E),
}

impl Engine {
    /// Waits up to `max` for a claim another call holds to finish; the stored result if
    /// it succeeded. Reads only (the claim is not touched, nothing is counted).
    pub async fn wait(&self, call: &Call<'_>, max: Duration) -> Result<Option<Stored>, StoreError> {
        let key_hash = self.key_hash(call.tenant, call.scope, call.inputs);
        let id = KeyItem::id_for(call.tenant, call.scope, &key_hash);
        let deadline = tokio::time::Instant::now() + max;
        loop {
            match store::get(&self.store, &id).await? {
                Some(item) if item.status == KeyStatus::Succeeded => {
                    return Ok(Some(Stored::of(&item)))
                }
                Some(item) if item.status == KeyStatus::Started => {}
                _ => return Ok(None),
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs the operation `prepare` describes at most once per key, in one transaction with
    /// the key. `refused` says why, when one of its writes' conditions fails.
    pub async fn commit<F, Fut, E>(
        &self,
        call: &Call<'_>,
        prepare: F,
        refused: impl FnOnce(Refusal) -> E,
    ) -> Result<Committal<E>, StoreError>
    where
        F: FnOnce(Attempt) -> Fut,
        Fut: Future<Output = Result<Prepared, E>>,
        E: StopReason,
    {
        let now = self.clock.now();
        let mut key = self.fresh_claim(call, now);
        let attempt = Attempt {
            key_hash: key.key_hash.clone(),
            number: 1,
        };
        let prepared = match prepare(attempt).await {
            Ok(p) => p,
            // It may have refused because this very request already ran (a double click
            // whose first click changed what it checks): the key says so.
            Err(e) => return self.not_run(call, &key, e).await,
        };
        finished(
            &mut key,
            &prepared.answer,
            self.clock.now().timestamp_millis(),
        );
        match store::commit(&self.store, &key, prepared.writes, key.started_at).await? {
            Committed::Done => {
                self.count(call.scope, &["requests", "fresh"]);
                Ok(Committal::Done(prepared.answer))
            }
            Committed::Held(held) => Ok(Committal::Held(self.held(&key, &held))),
            Committed::Refused(r) => {
                let e = refused(r);
                self.count(call.scope, &["requests", failed_as(&e)]);
                Ok(Committal::Failed(e))
            }
        }
    }

    /// [`Engine::commit`] for operations answered with JSON: the answer is sanitized as
    /// [`Engine::run`] does, so a fresh answer and a replay are equal.
    pub async fn run_writes<F, Fut, E>(
        &self,
        call: &Call<'_>,
        prepare: F,
        refused: impl FnOnce(Refusal) -> E,
    ) -> Result<Outcome<E>, StoreError>
    where
        F: FnOnce(Attempt) -> Fut,
        Fut: Future<Output = Result<(Writes, Value), E>>,
        E: StopReason,
    {
        let prepare = |attempt| async move {
            let (writes, value) = prepare(attempt).await?;
            let safe = SafeResponse::sanitize(&value);
            let json = serde_json::to_string(&safe).unwrap_or_else(|_| "{}".into());
            Ok(Prepared {
                writes,
                answer: Stored {
                    status: None,
                    json,
                    headers: None,
                },
            })
        };
        let parse = |stored: &Stored| {
            let v: Value = serde_json::from_str(&stored.json).unwrap_or(Value::Null);
            SafeResponse::sanitize(&v)
        };
        Ok(match self.commit(call, prepare, refused).await? {
            Committal::Done(stored) => Outcome::Fresh(parse(&stored)),
            Committal::Held(Begin::Replayed(stored)) => Outcome::Replayed(parse(&stored)),
            Committal::Held(Begin::InProgress { retry_after }) => {
                Outcome::InProgress { retry_after }
            }
            Committal::Held(Begin::Mismatch) => Outcome::Mismatch,
            // `held` never answers `Claimed`; were it to, the caller may simply try again.
            Committal::Held(Begin::Claimed(_)) => Outcome::InProgress {
                retry_after: Duration::from_secs(1),
            },
            Committal::Failed(e) => Outcome::Failed(e),
        })
    }

    /// The operation refused before writing. If a live request holds the key, that is the
    /// answer (one more read, on this path only); else the refusal is.
    async fn not_run<E: StopReason>(
        &self,
        call: &Call<'_>,
        mine: &KeyItem,
        e: E,
    ) -> Result<Committal<E>, StoreError> {
        match store::get(&self.store, &mine.id).await? {
            Some(held) if holds(&held, mine.started_at) => {
                Ok(Committal::Held(self.held(mine, &held)))
            }
            _ => {
                self.count(call.scope, &["requests", failed_as(&e)]);
                Ok(Committal::Failed(e))
            }
        }
    }

    /// What a key another request holds means for this one, counted as [`Engine::begin`]
    /// counts it.
    fn held(&self, mine: &KeyItem, held: &KeyItem) -> Begin {
        let scope = mine.scope.as_str();
        if held.fingerprint != mine.fingerprint {
            self.count(scope, &["requests", "mismatches"]);
            return Begin::Mismatch;
        }
        if held.status == KeyStatus::Succeeded {
            self.count(scope, &["requests", "replayed"]);
            return Begin::Replayed(Stored::of(held));
        }
        self.count(scope, &["requests", "in_progress"]);
        in_progress(held, mine.started_at)
    }
}

/// Whether `item` keeps a new request with its key from running: what the transaction's
/// condition refuses (live, and neither failed nor a stale claim).
fn holds(item: &KeyItem, now_ms: i64) -> bool {
    !item.is_expired(now_ms.div_euclid(1000))
        && match item.status {
            KeyStatus::Succeeded => true,
            KeyStatus::Started => item.stale_at > now_ms,
            KeyStatus::Failed => false,
        }
}

/// `key` as a finished request leaves it: succeeded, with its answer, no longer watched.
fn finished(key: &mut KeyItem, answer: &Stored, now_ms: i64) {
    key.status = KeyStatus::Succeeded;
    key.response_json = Some(answer.json.clone());
    key.response_status = answer.status;
    key.response_headers = answer.headers.clone();
    key.completed_at = Some(now_ms);
    key.updated_at = now_ms;
    key.watch = None;
    key.watch_at = None;
}

/// The counter of an operation that did not happen: a client error when it refused on
/// purpose, else a failure.
fn failed_as(e: &impl StopReason) -> &'static str {
    if e.answered() {
        "client_errors"
    } else {
        "failures"
    }
}
