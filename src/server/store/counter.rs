//! Counts the requests a store sends, by operation. Tests use it to prove what a call
//! costs (a duplicate is one request) and that user-facing pages never Scan.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};

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
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let op = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown");
        self.0.add(op);
        Ok(())
    }
}
