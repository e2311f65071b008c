//! Counts the requests a store sends, by operation. Tests use it to prove what a call
//! costs (a duplicate is one request) and that user-facing pages never Scan.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;

#[derive(Debug, Default)]
pub struct RequestCounter {
    counts: Mutex<BTreeMap<String, u64>>,
    /// When DynamoDB last answered one of this store's requests (any answer of its own,
    /// a refused condition too), in Unix milliseconds; 0: never.
    answered_ms: AtomicI64,
    /// When a request last got no answer, or DynamoDB's own failure (a 5xx).
    failed_ms: AtomicI64,
}

/// What this store's own requests saw of DynamoDB lately, without asking it anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Its last request was answered, within the last [`REACH_WINDOW_MS`].
    Ok,
    /// Its last request got no answer, or DynamoDB's own failure.
    Failing,
    /// No request in the window.
    Unknown,
}

/// How recent a request must be to tell [`Reach`].
pub const REACH_WINDOW_MS: i64 = 60_000;

/// The machine's time (not the console's clock, which tests move).
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl RequestCounter {
    /// A copy of the counts so far: `{"PutItem": 3, ...}`.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    pub fn get(&self, op: &str) -> u64 {
        self.snapshot().get(op).copied().unwrap_or(0)
    }

    /// What the requests of the last minute saw.
    pub fn reach(&self) -> Reach {
        let now_ms = unix_ms();
        let answered = self.answered_ms.load(Ordering::Relaxed);
        let failed = self.failed_ms.load(Ordering::Relaxed);
        let last = answered.max(failed);
        if last == 0 || now_ms - last > REACH_WINDOW_MS {
            Reach::Unknown
        } else if failed > answered {
            Reach::Failing
        } else {
            Reach::Ok
        }
    }

    fn heard(&self, answered: bool) {
        let at = if answered {
            &self.answered_ms
        } else {
            &self.failed_ms
        };
        at.fetch_max(unix_ms(), Ordering::Relaxed);
    }

    fn add(&self, op: &str) {
        if let Ok(mut counts) = self.counts.lock() {
            *counts.entry(op.to_string()).or_default() += 1;
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct CountingInterceptor(Arc<RequestCounter>);

impl CountingInterceptor {
    pub(super) fn new(counter: Arc<RequestCounter>) -> Self {
        CountingInterceptor(counter)
    }
}

impl Intercept for CountingInterceptor {
    fn name(&self) -> &'static str {
        "ops-console-request-counter"
    }

    // Runs once per attempt, so retries count as the requests they are.
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let op = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown");
        self.0.add(op);
        let attempts = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
        if attempts > 1 {
            crate::server::metrics::dynamodb_retry(op);
        }
        Ok(())
    }

    // Once per attempt, with its answer (or none: the connection failed, or timed out).
    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        // The request has been sent away by now; the operation's name is in its metadata.
        let op = cfg.load::<Metadata>().map_or("unknown", |m| m.name());
        let result = match context.response() {
            None => "error",
            Some(r) if r.status().is_success() => "ok",
            Some(r) => classify(r.body().bytes().unwrap_or_default()),
        };
        self.0.heard(
            context
                .response()
                .is_some_and(|r| !r.status().is_server_error()),
        );
        crate::server::metrics::dynamodb_request(op, result);
        Ok(())
    }
}

/// The result of a DynamoDB error answer, from its error type (`__type`) and, for a
/// cancelled transaction, its cancellation reasons' codes; never from the rest of the body
/// (an item returned with a failed condition holds stored text).
fn classify(body: &[u8]) -> &'static str {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let kind = v["__type"].as_str().unwrap_or("");
    let kind = kind.rsplit('#').next().unwrap_or(kind);
    let reasons: Vec<&str> = v["CancellationReasons"]
        .as_array()
        .map(|r| r.iter().filter_map(|x| x["Code"].as_str()).collect())
        .unwrap_or_default();
    let any = |codes: &[&str]| codes.contains(&kind) || reasons.iter().any(|r| codes.contains(r));
    if any(&[
        "TransactionConflict",
        "TransactionConflictException",
        "TransactionInProgressException",
    ]) {
        "conflict"
    } else if any(&[
        "ThrottlingError",
        "ThrottlingException",
        "ProvisionedThroughputExceeded",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
    ]) {
        "throttled"
    } else if any(&["ConditionalCheckFailed", "ConditionalCheckFailedException"]) {
        "condition_failed"
    } else {
        "error"
    }
}

#[cfg(test)]
mod tests {
    use super::classify;

    #[test]
    fn results_come_from_the_error_type_and_reason_codes_only() {
        let failed = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{"body":{"S":"Throttling TransactionConflict"}}}"#;
        assert_eq!(classify(failed), "condition_failed");
        let cancelled = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"}]}"#;
        assert_eq!(classify(cancelled), "conflict");
        let throttled = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}"#;
        assert_eq!(classify(throttled), "throttled");
        assert_eq!(classify(b"not json"), "error");
    }
}
