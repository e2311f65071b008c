//! Counts the requests a store sends, by operation. Tests use it to prove what a call
//! costs (a duplicate is one request) and that user-facing pages never Scan.

use std::collections::BTreeMap;
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
        crate::server::metrics::dynamodb_request(op, result);
        Ok(())
    }
}

/// The result of a DynamoDB error answer, from its body: the error type, and for a
/// cancelled transaction its cancellation reasons.
fn classify(body: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(body);
    let has = |s: &str| text.contains(s);
    if has("TransactionConflict") || has("TransactionInProgress") {
        "conflict"
    } else if has("Throttl") || has("ProvisionedThroughputExceeded") || has("RequestLimitExceeded")
    {
        "throttled"
    } else if has("ConditionalCheckFailed") {
        "condition_failed"
    } else {
        "error"
    }
}
