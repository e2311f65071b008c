//! A receiver's health as people read it (docs/events.md, "Receiver health"): attempts and
//! deliveries of the last hour, its last success, since when it fails and its last error,
//! and the alert rule of a receiver that failed every attempt over [`ALERT_WINDOW_MS`].

use chrono::{DateTime, TimeZone, Utc};

use crate::model::outbox::{ReceiverHealth, ReceiverName};
use crate::server::config::Config;
use crate::server::store::events::health::{self as store, receiver_key, Health};
use crate::server::store::events::receiver;
use crate::server::store::{Store, StoreError};

/// The window the alert rule judges.
pub const ALERT_WINDOW_MS: i64 = 15 * 60_000;
/// Attempts the window needs before its failures mean anything.
pub const ALERT_MIN_ATTEMPTS: u64 = 3;

const HOUR_MS: i64 = 3_600_000;

/// The URL side effects to `name` go to now (the saved receiver, else for `default` the
/// settings'), if any.
pub async fn current_url(
    store: &Store,
    config: &Config,
    name: &ReceiverName,
) -> Result<Option<String>, StoreError> {
    let url = match receiver::load(store, name).await? {
        Some(item) => item.url,
        None if name.is_default() => config.events.webhook_url.clone(),
        None => String::new(),
    };
    Ok((!url.is_empty()).then_some(url))
}

/// The health of the receiver at `url`, as of `now`.
pub async fn of(
    store: &Store,
    url: &str,
    now: DateTime<Utc>,
) -> Result<ReceiverHealth, StoreError> {
    let now_ms = now.timestamp_millis();
    let shards = crate::server::store::events::outbox::SHARDS;
    let h = store::read(store, &receiver_key(url), shards, now_ms - HOUR_MS, now_ms).await?;
    Ok(view(&h, now_ms))
}

/// What the page and the alert rule read from the stored health.
pub fn view(h: &Health, now_ms: i64) -> ReceiverHealth {
    let (attempts, delivered) = h.since(now_ms - HOUR_MS);
    let (window_attempts, window_delivered) = h.since(now_ms - ALERT_WINDOW_MS);
    let at = |ms: Option<i64>| {
        ms.and_then(|ms| Utc.timestamp_millis_opt(ms).single())
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    };
    ReceiverHealth {
        attempts_last_hour: attempts,
        delivered_last_hour: delivered,
        window_attempts,
        window_delivered,
        every_attempt_failed: window_attempts >= ALERT_MIN_ATTEMPTS && window_delivered == 0,
        last_success: at(h.last_success_ms),
        failing_since: at(h.failing_since_ms),
        last_error: h.failing_since_ms.and(
            h.last_error
                .as_deref()
                .map(crate::server::domain::redact::redact),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::events::health::Tally;

    fn tally(bucket_ms: i64, attempts: u64, delivered: u64) -> Tally {
        Tally {
            bucket_ms,
            attempts,
            delivered,
            failed: attempts - delivered,
        }
    }

    #[test]
    fn a_receiver_fails_when_every_attempt_of_the_window_failed() {
        let now = 10 * HOUR_MS;
        let bucket = now - now.rem_euclid(store::BUCKET_MS);
        let mut h = Health {
            last_success_ms: Some(now - 2 * HOUR_MS),
            last_failure_ms: Some(now - 1000),
            last_error: Some("could not connect".into()),
            failing_since_ms: Some(now - HOUR_MS / 2),
            tallies: vec![tally(bucket - HOUR_MS / 2, 5, 0), tally(bucket, 3, 0)],
        };
        let v = view(&h, now);
        assert!(v.every_attempt_failed);
        assert_eq!((v.attempts_last_hour, v.delivered_last_hour), (8, 0));
        assert_eq!(v.last_error.as_deref(), Some("could not connect"));
        // Two attempts are too few to call it.
        h.tallies = vec![tally(bucket, 2, 0)];
        assert!(!view(&h, now).every_attempt_failed);
        // One delivery in the window: not failing every attempt.
        h.tallies = vec![tally(bucket, 9, 1)];
        assert!(!view(&h, now).every_attempt_failed);
        // Healthy again: no error is shown.
        h.failing_since_ms = None;
        assert_eq!(view(&h, now).last_error, None);
    }
}
