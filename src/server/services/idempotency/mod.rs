//! The idempotency engine (docs/idempotency.md): run an operation at most once per key.
//!
//! Better than the usual libraries in four ways: a key is an HMAC of its inputs under a
//! server secret (no guessing); a duplicate costs one DynamoDB request (the failed claim
//! returns the existing item); only the claim's owner (by nonce) can record a result; and
//! the engine counts its own outcomes per scope and hour for the monitoring page.
//!
//! `keys` derives keys, `responses` says what a stored response may hold, `counters` keeps
//! the hourly counts, `health` reads them back for the monitoring page, `lookup` finds keys
//! the way support asks and `links` says where a key leads.

mod counters;
pub mod health;
mod keys;
pub mod links;
mod lookup;
mod responses;
mod writes;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

pub use counters::hour_key;
use counters::Counters;
pub use keys::{
    hash_text, hmac_sha256, is_correlation_id, key_hash, sha256_hex, KeyInputs, Secret,
};
pub use responses::{SafeResponse, StopReason, Stored};
pub use writes::{Committal, Prepared};

use crate::server::clock::Clock;
use crate::server::config::IdempotencySection;
use crate::server::crypto::Seal;
use crate::server::ids::random_hex;
use crate::server::store::idempotency::{
    self as store, Claim, Finish, Guarded, KeyItem, KeyStatus, Reclaim,
};
use crate::server::store::{Store, StoreError};

/// One call: who, what kind of operation, which inputs.
pub struct Call<'a> {
    pub tenant: &'a str,
    pub scope: &'a str,
    pub inputs: &'a KeyInputs,
    /// The request as a whole; `None` means the key inputs are the whole request.
    pub fingerprint: Option<String>,
}

/// What [`Engine::begin`] found.
pub enum Begin {
    /// This caller owns the key now and must [`Ticket::succeed`] or [`Ticket::fail`].
    Claimed(Ticket),
    Replayed(Stored),
    InProgress {
        retry_after: Duration,
    },
    Mismatch,
}

/// Ownership of one claim.
pub struct Ticket {
    pub key_hash: String,
    pub attempt: u32,
    id: String,
    scope: String,
    nonce: String,
}

impl Ticket {
    /// Ownership of `claim` (this caller's), on its `attempt`.
    fn of(claim: &KeyItem, attempt: u32) -> Ticket {
        Ticket {
            key_hash: claim.key_hash.clone(),
            attempt,
            id: claim.id.clone(),
            scope: claim.scope.clone(),
            nonce: claim.claim_nonce.clone(),
        }
    }
}

/// What [`Engine::run`] did.
#[derive(Debug, PartialEq)]
pub enum Outcome<E> {
    /// The operation ran, now, in this call.
    Fresh(SafeResponse),
    /// It had already run; this is its stored response.
    Replayed(SafeResponse),
    /// Another call is running it; try again after this long.
    InProgress { retry_after: Duration },
    /// It ran in this call and failed; the next call with the key may retry.
    Failed(E),
    /// The key was used before with a different request.
    Mismatch,
}

/// What an operation gets to know about its attempt.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub key_hash: String,
    pub number: u32,
}

/// The engine. Cheap to clone; clones share their counters.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    secret: Secret,
    clock: Clock,
    settings: Arc<IdempotencySection>,
    counters: Arc<Mutex<Counters>>,
    /// This console's name in the counters it writes (each console writes its own).
    console: String,
}

/// How long recording a call's result is tried again while DynamoDB is busy or away:
/// past the chaos run's outages (up to 2 s), well within a request's deadline.
const RECORD_RESULT_FOR: Duration = Duration::from_secs(5);

impl Engine {
    pub fn new(store: Store, secret: Secret, clock: Clock, settings: IdempotencySection) -> Self {
        Engine {
            store,
            secret,
            clock,
            settings: Arc::new(settings),
            counters: Arc::default(),
            console: random_hex(6),
        }
    }

    pub fn settings(&self) -> &IdempotencySection {
        &self.settings
    }

    /// A key for another purpose, derived from the secret (HMAC of `label`), so one secret
    /// serves several uses without one use revealing another's key.
    pub fn subkey(&self, label: &str) -> [u8; 32] {
        self.secret.subkey(label)
    }

    /// The seal of one purpose under the server secret.
    pub fn seal(&self, purpose: &str) -> Seal {
        self.secret.seal(purpose)
    }

    pub fn key_hash(&self, tenant: &str, scope: &str, inputs: &KeyInputs) -> String {
        key_hash(&self.secret, tenant, scope, inputs)
    }

    /// Claims the key, or says why not. Costs one request when the key is already there
    /// (replay, in progress, mismatch), two when it takes over a stale or failed claim.
    pub async fn begin(&self, call: &Call<'_>) -> Result<Begin, StoreError> {
        let now = self.clock.now();
        let mine = self.fresh_claim(call, now);
        let existing = match store::claim(&self.store, &mine, now.timestamp()).await? {
            Claim::Won => {
                self.count(call.scope, &["requests", "fresh"]);
                return Ok(Begin::Claimed(Ticket::of(&mine, 1)));
            }
            Claim::Exists(existing) => existing,
        };
        // A failed attempt had no effect: it may be retried, even with another request.
        if existing.fingerprint != mine.fingerprint && existing.status != KeyStatus::Failed {
            self.count(call.scope, &["requests", "mismatches"]);
            return Ok(Begin::Mismatch);
        }
        match existing.status {
            KeyStatus::Succeeded => {
                self.count(call.scope, &["requests", "replayed"]);
                Ok(Begin::Replayed(Stored::of(&existing)))
            }
            KeyStatus::Started if existing.stale_at > mine.started_at => {
                self.count(call.scope, &["requests", "in_progress"]);
                Ok(in_progress(&existing, mine.started_at))
            }
            // Stale `started` (takeover) or `failed` (retry).
            KeyStatus::Started | KeyStatus::Failed => self.reclaim(&mine, &existing).await,
        }
    }

    /// The `started` claim a first call writes: this caller's nonce, stale after the
    /// scope's `stale_seconds`, kept for its `ttl_hours`.
    fn fresh_claim(&self, call: &Call<'_>, now: DateTime<Utc>) -> KeyItem {
        let policy = self.settings.policy(call.scope);
        let now_ms = now.timestamp_millis();
        let key_hash = self.key_hash(call.tenant, call.scope, call.inputs);
        let stale_at = now_ms + policy.stale_seconds * 1000;
        KeyItem {
            id: KeyItem::id_for(call.tenant, call.scope, &key_hash),
            tenant: call.tenant.to_string(),
            scope: call.scope.to_string(),
            key_hash,
            fingerprint: call
                .fingerprint
                .clone()
                .unwrap_or_else(|| call.inputs.fingerprint()),
            status: KeyStatus::Started,
            claim_nonce: random_hex(16),
            response_json: None,
            response_status: None,
            response_headers: None,
            stop_reason: None,
            created_at: now_ms,
            updated_at: now_ms,
            started_at: now_ms,
            completed_at: None,
            expires_at: (now + chrono::Duration::hours(policy.ttl_hours)).timestamp(),
            attempt_count: 1,
            stale_at,
            watch: Some(KeyStatus::Started),
            watch_at: Some(stale_at),
            api_key_hash: call.inputs.get("principal").map(str::to_string),
            correlation_hash: call
                .inputs
                .correlation_id()
                .map(|c| self.correlation_hash(c)),
        }
    }

    /// Takes over a stale `started` claim or retries a `failed` one: exactly one racer
    /// wins; the others replay its result or wait for it.
    async fn reclaim(&self, mine: &KeyItem, existing: &KeyItem) -> Result<Begin, StoreError> {
        let now_ms = mine.started_at;
        let reclaim = Reclaim {
            id: &mine.id,
            seen_nonce: &existing.claim_nonce,
            seen_status: existing.status,
            new_nonce: &mine.claim_nonce,
            fingerprint: &mine.fingerprint,
            now_ms,
            stale_at: mine.stale_at,
        };
        let kind = if existing.status == KeyStatus::Started {
            "takeovers"
        } else {
            "retries"
        };
        match store::reclaim(&self.store, &reclaim).await? {
            Guarded::Done(now_item) => {
                self.count(&mine.scope, &["requests", "fresh", kind]);
                Ok(Begin::Claimed(Ticket::of(mine, now_item.attempt_count)))
            }
            Guarded::Lost(Some(other)) if other.status == KeyStatus::Succeeded => {
                self.count(&mine.scope, &["requests", "replayed"]);
                Ok(Begin::Replayed(Stored::of(&other)))
            }
            Guarded::Lost(other) => {
                self.count(&mine.scope, &["requests", "in_progress"]);
                Ok(other.map_or(
                    Begin::InProgress {
                        retry_after: Duration::from_secs(1),
                    },
                    |o| in_progress(&o, now_ms),
                ))
            }
        }
    }

    /// Records the owner's result. `Err(current)` when the claim was taken over meanwhile:
    /// nothing is written, and `current` is the record as it now stands.
    pub async fn succeed(
        &self,
        ticket: &Ticket,
        stored: &Stored,
    ) -> Result<Result<(), Option<Stored>>, StoreError> {
        self.finish(ticket, true, Some(stored), None).await
    }

    pub async fn fail(
        &self,
        ticket: &Ticket,
        stop_reason: &str,
    ) -> Result<Result<(), Option<Stored>>, StoreError> {
        self.count(&ticket.scope, &["failures"]);
        self.finish(ticket, false, None, Some(stop_reason)).await
    }

    /// The operation refused on purpose (a 409: the client's business conflict). The key
    /// stays open for the client's corrected request, as after a failure, but it counts
    /// as a client error, not as a failure of the operation.
    pub async fn refuse(
        &self,
        ticket: &Ticket,
        stop_reason: &str,
    ) -> Result<Result<(), Option<Stored>>, StoreError> {
        self.count(&ticket.scope, &["client_errors"]);
        self.finish(ticket, false, None, Some(stop_reason)).await
    }

    async fn finish(
        &self,
        ticket: &Ticket,
        succeeded: bool,
        stored: Option<&Stored>,
        stop_reason: Option<&str>,
    ) -> Result<Result<(), Option<Stored>>, StoreError> {
        let f = Finish {
            id: &ticket.id,
            nonce: &ticket.nonce,
            succeeded,
            response_json: stored.map(|s| s.json.as_str()),
            response_status: stored.and_then(|s| s.status),
            response_headers: stored.and_then(|s| s.headers.as_deref()),
            stop_reason,
            now_ms: self.clock.now().timestamp_millis(),
        };
        // The operation has taken effect: its result is recorded before the answer goes,
        // through a DynamoDB away for a moment (the same write again, which recognises
        // itself if an earlier try landed), so that a retry of the key finds it.
        let began = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(200);
        let finished = loop {
            match store::finish(&self.store, &f).await {
                Err(StoreError::Busy { .. }) if began.elapsed() + pause < RECORD_RESULT_FOR => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                r => break r?,
            }
        };
        match finished {
            Guarded::Done(_) => Ok(Ok(())),
            Guarded::Lost(current) => {
                self.count(&ticket.scope, &["lost_ownership"]);
                tracing::warn!(
                    scope = %ticket.scope,
                    "idempotency claim was taken over before its owner finished; result not stored"
                );
                Ok(Err(current.and_then(|c| {
                    (c.status == KeyStatus::Succeeded).then(|| Stored::of(&c))
                })))
            }
        }
    }

    /// Runs `op` at most once per key. Its response is sanitized before it is stored, and
    /// the caller gets the sanitized form too, so a fresh answer and a replay are equal.
    pub async fn run<F, Fut, E>(&self, call: &Call<'_>, op: F) -> Result<Outcome<E>, StoreError>
    where
        F: FnOnce(Attempt) -> Fut,
        Fut: Future<Output = Result<Value, E>>,
        E: StopReason,
    {
        let ticket = match self.begin(call).await? {
            Begin::Claimed(t) => t,
            Begin::Replayed(stored) => {
                let v: Value = serde_json::from_str(&stored.json).unwrap_or(Value::Null);
                return Ok(Outcome::Replayed(SafeResponse::sanitize(&v)));
            }
            Begin::InProgress { retry_after } => return Ok(Outcome::InProgress { retry_after }),
            Begin::Mismatch => return Ok(Outcome::Mismatch),
        };
        let attempt = Attempt {
            key_hash: ticket.key_hash.clone(),
            number: ticket.attempt,
        };
        match op(attempt).await {
            Ok(value) => {
                let safe = SafeResponse::sanitize(&value);
                let json = serde_json::to_string(&safe).unwrap_or_else(|_| "{}".into());
                let stored = Stored {
                    status: None,
                    json,
                    headers: None,
                };
                match self.succeed(&ticket, &stored).await? {
                    Ok(()) => Ok(Outcome::Fresh(safe)),
                    // Taken over while running: the record's own result stands.
                    Err(Some(current)) => {
                        let v: Value = serde_json::from_str(&current.json).unwrap_or(Value::Null);
                        Ok(Outcome::Replayed(SafeResponse::sanitize(&v)))
                    }
                    Err(None) => Ok(Outcome::InProgress {
                        retry_after: Duration::from_secs(1),
                    }),
                }
            }
            Err(e) if e.answered() => {
                self.refuse(&ticket, &e.stop_reason()).await?.ok();
                Ok(Outcome::Failed(e))
            }
            Err(e) => {
                self.fail(&ticket, &e.stop_reason()).await?.ok();
                Ok(Outcome::Failed(e))
            }
        }
    }
}

/// Another call holds the key: retry when it may be stale, but within 1 to 2 s.
fn in_progress(holder: &KeyItem, now_ms: i64) -> Begin {
    let left = (holder.stale_at - now_ms).clamp(1000, 2000);
    Begin::InProgress {
        retry_after: Duration::from_millis(left as u64),
    }
}
