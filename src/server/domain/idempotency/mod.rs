//! The idempotency engine (design doc 4): run an operation at most once per key.
//!
//! Better than the usual libraries in four ways: a key is an HMAC of its inputs under a
//! server secret (no guessing); a duplicate costs one DynamoDB request (the failed claim
//! returns the existing item); only the claim's owner (by nonce) can record a result; and
//! the engine counts its own outcomes per scope and hour for the monitoring page.

pub mod health;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::server::clock::Clock;
use crate::server::config::{Config, Environment, IdempotencySection};
use crate::server::ids::{hex, random_hex};
use crate::server::store::idempotency::{
    self as store, Claim, Finish, Guarded, KeyItem, Reclaim, FAILED, STARTED, SUCCEEDED,
};
use crate::server::store::{Store, StoreError};

// --- keys ---------------------------------------------------------------------------------

/// The HMAC key. Never printed.
#[derive(Clone)]
pub struct Secret(Arc<Vec<u8>>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Secret {
        Secret(Arc::new(bytes.into()))
    }

    /// The configured secret; in dev without one, the one generated on first start and
    /// kept in `<data_dir>/idempotency-secret` (created with mode 0600).
    pub fn resolve(config: &Config) -> Result<Secret, String> {
        if !config.idempotency.secret.is_empty() {
            return Ok(Secret::new(
                config.idempotency.secret.expose().as_bytes().to_vec(),
            ));
        }
        if config.env != Environment::Dev {
            return Err("IDEMPOTENCY_SECRET is required outside dev".into());
        }
        load_or_create(&config.data_dir.join("idempotency-secret"))
    }
}

fn load_or_create(path: &Path) -> Result<Secret, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(existing) = std::fs::read_to_string(path) {
        let existing = existing.trim();
        if existing.len() >= 32 {
            return Ok(Secret::new(existing.as_bytes().to_vec()));
        }
        return Err(format!("{} is shorter than 32 bytes", path.display()));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let secret = random_hex(32);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(secret.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Secret::new(secret.into_bytes()))
}

/// HMAC-SHA256 (RFC 2104) over SHA-256.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::{KeyInit, Mac};
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Free text enters a key only as this: SHA-256 of the trimmed, whitespace-collapsed text.
pub fn hash_text(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    sha256_hex(collapsed.as_bytes())
}

/// The inputs a key is derived from. Values are identifiers and numbers; free text goes
/// in through [`KeyInputs::text`], which stores only its hash.
#[derive(Clone, Debug, Default)]
pub struct KeyInputs(BTreeMap<String, Value>);

impl KeyInputs {
    pub fn new() -> Self {
        KeyInputs::default()
    }

    pub fn id(mut self, name: &str, value: impl Into<String>) -> Self {
        self.0.insert(name.into(), Value::String(value.into()));
        self
    }

    pub fn num(mut self, name: &str, value: i64) -> Self {
        self.0.insert(name.into(), Value::from(value));
        self
    }

    pub fn flag(mut self, name: &str, value: bool) -> Self {
        self.0.insert(name.into(), Value::Bool(value));
        self
    }

    pub fn text(mut self, name: &str, raw: &str) -> Self {
        self.0
            .insert(format!("{name}_sha256"), Value::String(hash_text(raw)));
        self
    }

    /// Deterministic: sorted keys, no whitespace, tenant and scope bound in.
    pub fn canonical(&self, tenant: &str, scope: &str) -> String {
        let mut top = Map::new();
        top.insert(
            "inputs".into(),
            Value::Object(self.0.clone().into_iter().collect()),
        );
        top.insert("scope".into(), Value::String(scope.into()));
        top.insert("tenant".into(), Value::String(tenant.into()));
        // serde_json's Map is a BTreeMap here (no preserve_order): keys come out sorted.
        Value::Object(top).to_string()
    }

    /// A fingerprint of a request, for "same key, different request" checks.
    pub fn fingerprint(&self) -> String {
        sha256_hex(self.canonical("", "").as_bytes())
    }
}

pub fn key_hash(secret: &Secret, tenant: &str, scope: &str, inputs: &KeyInputs) -> String {
    hex(&hmac_sha256(
        &secret.0,
        inputs.canonical(tenant, scope).as_bytes(),
    ))
}

// --- responses ----------------------------------------------------------------------------

/// Names that never reach the store, at any depth.
const BLOCKED: &[&str] = &[
    "_internal",
    "debug",
    "prompt",
    "prompts",
    "system_prompt",
    "systemPrompt",
    "error",
    "errors",
    "message",
    "stack",
    "stacktrace",
    "trace",
    "provider",
    "model",
    "requestId",
    "request_id",
    "text",
    "body",
    "raw",
    "content",
    "userText",
    "user_text",
    "email",
    "phone",
];

/// What an operation's response may leave behind (design doc 4's allow-list).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SafeResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    #[serde(
        rename = "createdActionRequestIds",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub created_action_request_ids: Vec<i64>,
    #[serde(rename = "traceId", default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(
        rename = "needsHuman",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub needs_human: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// A primitive, or a flat object of primitives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

fn is_primitive(v: &Value) -> bool {
    matches!(
        v,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
    )
}

impl SafeResponse {
    /// Keeps the allow-list and drops everything else, whatever the operation returned.
    pub fn sanitize(v: &Value) -> SafeResponse {
        let get = |k: &str| v.get(k);
        let data = match get("data") {
            Some(d) if is_primitive(d) => Some(d.clone()),
            Some(Value::Object(m)) => Some(Value::Object(
                m.iter()
                    .filter(|(k, v)| !BLOCKED.contains(&k.as_str()) && is_primitive(v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )),
            _ => None,
        };
        SafeResponse {
            ok: get("ok").and_then(Value::as_bool),
            stop_reason: get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_string),
            created_action_request_ids: get("createdActionRequestIds")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default(),
            trace_id: get("traceId").and_then(Value::as_str).map(str::to_string),
            needs_human: get("needsHuman").and_then(Value::as_bool),
            cached: get("cached").and_then(Value::as_bool),
            data,
        }
    }
}

// --- the engine -----------------------------------------------------------------------------

/// One call: who, what kind of operation, which inputs.
pub struct Call<'a> {
    pub tenant: &'a str,
    pub scope: &'a str,
    pub inputs: &'a KeyInputs,
    /// The request as a whole; `None` means the key inputs are the whole request.
    pub fingerprint: Option<String>,
}

/// A stored result, as replayed.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub status: Option<u16>,
    /// The body: for the HTTP layer the answer's bytes exactly, else sanitized JSON.
    pub json: String,
    /// The answer's own headers (HTTP layer), as a JSON list of `[name, value]`.
    pub headers: Option<String>,
}

impl Stored {
    /// What a succeeded key holds.
    fn of(item: &KeyItem) -> Stored {
        Stored {
            status: item.response_status,
            json: item.response_json.clone().unwrap_or_else(|| "{}".into()),
            headers: item.response_headers.clone(),
        }
    }
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

#[derive(Default)]
struct Counts(BTreeMap<&'static str, u64>);

/// The engine. Cheap to clone; clones share their counters.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    secret: Secret,
    clock: Clock,
    settings: Arc<IdempotencySection>,
    counters: Arc<Mutex<HashMap<(String, String), Counts>>>,
}

fn hour_of(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H").to_string()
}

impl Engine {
    pub fn new(store: Store, secret: Secret, clock: Clock, settings: IdempotencySection) -> Self {
        Engine {
            store,
            secret,
            clock,
            settings: Arc::new(settings),
            counters: Arc::default(),
        }
    }

    pub fn settings(&self) -> &IdempotencySection {
        &self.settings
    }

    /// A key for another purpose, derived from the secret (HMAC of `label`), so one secret
    /// serves several uses without one use revealing another's key.
    pub fn subkey(&self, label: &str) -> [u8; 32] {
        hmac_sha256(&self.secret.0, label.as_bytes())
    }

    pub fn key_hash(&self, tenant: &str, scope: &str, inputs: &KeyInputs) -> String {
        key_hash(&self.secret, tenant, scope, inputs)
    }

    fn count(&self, scope: &str, what: &[&'static str]) {
        let hour = hour_of(self.clock.now());
        if let Ok(mut counters) = self.counters.lock() {
            let bucket = counters.entry((scope.to_string(), hour)).or_default();
            for name in what {
                *bucket.0.entry(name).or_default() += 1;
            }
        }
    }

    /// Writes the counters gathered since the last flush (one update per scope and hour).
    /// On failure they are kept for the next flush.
    pub async fn flush_stats(&self) -> Result<(), StoreError> {
        let taken: Vec<((String, String), Counts)> = match self.counters.lock() {
            Ok(mut c) => c.drain().collect(),
            Err(_) => return Ok(()),
        };
        let expires = (self.clock.now() + chrono::Duration::days(35)).timestamp();
        let mut failed = Vec::new();
        let mut first_error = None;
        for ((scope, hour), counts) in taken {
            if let Err(e) = store::add_stats(&self.store, &scope, &hour, &counts.0, expires).await {
                first_error.get_or_insert(e);
                failed.push(((scope, hour), counts));
            }
        }
        if !failed.is_empty() {
            if let Ok(mut c) = self.counters.lock() {
                for (k, counts) in failed {
                    let bucket = c.entry(k).or_default();
                    for (name, v) in counts.0 {
                        *bucket.0.entry(name).or_default() += v;
                    }
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Claims the key, or says why not. Costs one request when the key is already there
    /// (replay, in progress, mismatch), two when it takes over a stale or failed claim.
    pub async fn begin(&self, call: &Call<'_>) -> Result<Begin, StoreError> {
        let policy = self.settings.policy(call.scope);
        let now = self.clock.now();
        let now_ms = now.timestamp_millis();
        let key_hash = self.key_hash(call.tenant, call.scope, call.inputs);
        let id = KeyItem::id_for(call.tenant, call.scope, &key_hash);
        let fingerprint = call
            .fingerprint
            .clone()
            .unwrap_or_else(|| call.inputs.fingerprint());
        let stale_at = now_ms + policy.stale_seconds * 1000;
        let nonce = random_hex(16);
        let item = KeyItem {
            id: id.clone(),
            tenant: call.tenant.to_string(),
            scope: call.scope.to_string(),
            key_hash: key_hash.clone(),
            fingerprint: fingerprint.clone(),
            status: STARTED.into(),
            claim_nonce: nonce.clone(),
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
            watch: Some(STARTED.into()),
            watch_at: Some(stale_at),
        };
        let ticket = |attempt: u32, nonce: String| Ticket {
            key_hash: key_hash.clone(),
            attempt,
            id: id.clone(),
            scope: call.scope.to_string(),
            nonce,
        };
        let existing = match store::claim(&self.store, &item, now.timestamp()).await? {
            Claim::Won => {
                self.count(call.scope, &["requests", "fresh"]);
                return Ok(Begin::Claimed(ticket(1, nonce)));
            }
            Claim::Exists(existing) => existing,
        };
        // A failed attempt had no effect: it may be retried, even with another request.
        if existing.fingerprint != fingerprint && existing.status != FAILED {
            self.count(call.scope, &["requests", "mismatches"]);
            return Ok(Begin::Mismatch);
        }
        let in_progress = |e: &KeyItem| {
            let left = (e.stale_at - now_ms).clamp(1000, 2000);
            Begin::InProgress {
                retry_after: Duration::from_millis(left as u64),
            }
        };
        match existing.status.as_str() {
            SUCCEEDED => {
                self.count(call.scope, &["requests", "replayed"]);
                Ok(Begin::Replayed(Stored::of(&existing)))
            }
            STARTED if existing.stale_at > now_ms => {
                self.count(call.scope, &["requests", "in_progress"]);
                Ok(in_progress(&existing))
            }
            status => {
                // Stale `started` (takeover) or `failed` (retry): exactly one racer wins.
                let reclaim = Reclaim {
                    id: &id,
                    seen_nonce: &existing.claim_nonce,
                    seen_status: status,
                    new_nonce: &nonce,
                    fingerprint: &fingerprint,
                    now_ms,
                    stale_at,
                };
                let kind = if status == STARTED {
                    "takeovers"
                } else {
                    "retries"
                };
                match store::reclaim(&self.store, &reclaim).await? {
                    Guarded::Done(now_item) => {
                        self.count(call.scope, &["requests", "fresh", kind]);
                        Ok(Begin::Claimed(ticket(now_item.attempt_count, nonce)))
                    }
                    Guarded::Lost(Some(other)) if other.status == SUCCEEDED => {
                        self.count(call.scope, &["requests", "replayed"]);
                        Ok(Begin::Replayed(Stored::of(&other)))
                    }
                    Guarded::Lost(other) => {
                        self.count(call.scope, &["requests", "in_progress"]);
                        Ok(other.map_or(
                            Begin::InProgress {
                                retry_after: Duration::from_secs(1),
                            },
                            |o| in_progress(&o),
                        ))
                    }
                }
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
        match store::finish(&self.store, &f).await? {
            Guarded::Done(_) => Ok(Ok(())),
            Guarded::Lost(current) => {
                self.count(&ticket.scope, &["lost_ownership"]);
                tracing::warn!(
                    scope = %ticket.scope,
                    "idempotency claim was taken over before its owner finished; result not stored"
                );
                Ok(Err(current.and_then(|c| {
                    (c.status == SUCCEEDED).then(|| Stored::of(&c))
                })))
            }
        }
    }

    /// Waits up to `max` for a claim another call holds to finish; the stored result if
    /// it succeeded. Reads only (the claim is not touched, nothing is counted).
    pub async fn wait(&self, call: &Call<'_>, max: Duration) -> Result<Option<Stored>, StoreError> {
        let key_hash = self.key_hash(call.tenant, call.scope, call.inputs);
        let id = KeyItem::id_for(call.tenant, call.scope, &key_hash);
        let deadline = tokio::time::Instant::now() + max;
        loop {
            match store::get(&self.store, &id).await? {
                Some(item) if item.status == SUCCEEDED => return Ok(Some(Stored::of(&item))),
                Some(item) if item.status == STARTED => {}
                _ => return Ok(None),
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
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
            Err(e) => {
                self.fail(&ticket, &e.stop_reason()).await?.ok();
                Ok(Outcome::Failed(e))
            }
        }
    }
}

/// A short, customer-safe name for why an operation stopped (no messages, no text).
pub trait StopReason {
    fn stop_reason(&self) -> String;
}

impl StopReason for String {
    fn stop_reason(&self) -> String {
        self.clone()
    }
}

impl StopReason for crate::model::AppError {
    fn stop_reason(&self) -> String {
        use crate::model::AppError as E;
        match self {
            E::Invalid { .. } => "invalid",
            E::Conflict(_) => "conflict",
            E::NotFound => "not_found",
            E::Forbidden | E::Unauthenticated => "refused",
            E::TooLarge(_) => "too_large",
            E::InProgress { .. } => "in_progress",
            _ => "error",
        }
        .into()
    }
}

// --- reading the health ---------------------------------------------------------------------

pub fn hour_key(t: DateTime<Utc>) -> String {
    hour_of(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex(&mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn canonical_inputs_are_sorted_and_text_is_hashed() {
        let a = KeyInputs::new()
            .id("b", "2")
            .num("a", 1)
            .text("note", "  Hello   world ");
        let b = KeyInputs::new()
            .text("note", "Hello world")
            .num("a", 1)
            .id("b", "2");
        assert_eq!(a.canonical("t", "s"), b.canonical("t", "s"));
        let c = a.canonical("t", "s");
        assert!(!c.contains("Hello"), "{c}");
        assert!(
            c.starts_with(r#"{"inputs":{"a":1,"b":"2","note_sha256":""#),
            "{c}"
        );
        let one = Secret::new(b"x".repeat(32));
        let two = Secret::new(b"y".repeat(32));
        assert_ne!(key_hash(&one, "t", "s", &a), key_hash(&two, "t", "s", &a));
        assert_ne!(
            key_hash(&one, "t", "s", &a),
            key_hash(&one, "t", "other", &a)
        );
        assert_eq!(key_hash(&one, "t", "s", &a), key_hash(&one, "t", "s", &b));
    }

    #[test]
    fn only_the_allow_list_survives() {
        let v = serde_json::json!({
            "ok": true, "stopReason": "done", "createdActionRequestIds": [1, 2],
            "traceId": "t1", "needsHuman": false, "cached": false,
            "data": {"version": 3, "prompt": "secret prompt", "nested": {"a": 1}, "text": "hi"},
            "_internal": {"x": 1}, "debug": "d", "prompt": "p", "error": {"message": "m"},
            "stack": "s", "provider": "openai", "model": "gpt", "requestId": "r",
        });
        let safe = SafeResponse::sanitize(&v);
        let json = serde_json::to_string(&safe).unwrap();
        assert_eq!(
            json,
            r#"{"ok":true,"stopReason":"done","createdActionRequestIds":[1,2],"traceId":"t1","needsHuman":false,"cached":false,"data":{"version":3}}"#
        );
    }
}
