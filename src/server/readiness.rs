//! Readiness (`/readyz`): whether every table is as this console expects, checked at most
//! once per [`READINESS_FOR`] however many probes ask.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::server::clock::Clock;
use crate::server::store::{schema, Store};

/// How long one readiness check answers every probe: a flood of probes costs DynamoDB's
/// control plane one check (two requests a table) per this long per console.
const READINESS_FOR: chrono::Duration = chrono::Duration::seconds(5);

/// The last readiness check of this console, shared by every probe while it is fresh;
/// probes that arrive while it runs wait for it rather than start their own.
#[derive(Default)]
pub struct Readiness {
    last: tokio::sync::Mutex<Option<(DateTime<Utc>, Vec<String>)>>,
}

impl Readiness {
    /// What differs from the tables this console expects (none: ready).
    pub async fn problems(&self, store: &Store, clock: &Clock) -> Vec<String> {
        let mut last = self.last.lock().await;
        let now = clock.now();
        if let Some((at, problems)) = last.as_ref() {
            if now - *at < READINESS_FOR && *at <= now {
                return problems.clone();
            }
        }
        let problems = check(store).await;
        *last = Some((now, problems.clone()));
        problems
    }
}

/// Asks DynamoDB to describe every table and its TTL.
async fn check(store: &Store) -> Vec<String> {
    match tokio::time::timeout(Duration::from_secs(5), schema::drift(store)).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check: DynamoDB failed");
            vec!["DynamoDB could not be asked (the console's log says why)".to_string()]
        }
        Err(_) => vec!["DynamoDB did not answer within 5 s".to_string()],
    }
}
