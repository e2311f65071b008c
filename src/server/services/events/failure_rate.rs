//! The breaker's failure-rate rule (docs/events.md, "Breaker"): with
//! `events.breaker_failure_rate` set, a round whose attempts failed reads the receiver's
//! tallies of the current and the previous five minutes (every console's, in DynamoDB) and
//! opens the breaker when that share of them failed: a receiver that fails every other
//! request never makes a run long enough, and would walk half its actions to dead letters.
//! Minutes from before the breaker last closed are not judged: they hold the failures that
//! opened it.

use super::ingest::Events;
use crate::model::outbox::ReceiverName;
use crate::server::domain::redact::redact;
use crate::server::store::events::breaker::{self as store, Breaker};
use crate::server::store::events::health::{self as tallies, Tally};
use crate::server::store::events::outbox::SHARDS;

/// The failure-rate rule: whether the window's tally `t` opens the breaker.
fn rate_opens(t: &Tally, rate_pct: i64, min_attempts: i64) -> bool {
    rate_pct > 0
        && t.attempts >= min_attempts.max(1) as u64
        && t.failed * 100 >= rate_pct as u64 * t.attempts
}

impl Events {
    /// After a round whose attempts failed: the failure-rate rule over the current and the
    /// previous five-minute tallies of every console. Not worth failing the round for.
    pub(super) async fn judge_failure_rate(&self, name: &ReceiverName, seen: &Breaker) {
        let cfg = &self.config.events;
        if cfg.breaker_failure_rate <= 0 || seen.breaker_id.is_some() {
            return;
        }
        let now_ms = self.clock.now().timestamp_millis();
        let from = now_ms - tallies::BUCKET_MS;
        let from = from - from.rem_euclid(tallies::BUCKET_MS);
        if seen.closed_at_ms >= from {
            // The window still holds the failures that opened it last time.
            return;
        }
        let judged = async {
            let h = tallies::read(&self.store, &seen.receiver, SHARDS, from, now_ms).await?;
            let t = h.total_since(from);
            if !rate_opens(&t, cfg.breaker_failure_rate, cfg.breaker_min_attempts) {
                return Ok(false);
            }
            // The errors this round's failures stored, not the ones the round started with.
            let errors = store::load(&self.store, &seen.receiver).await?.last_errors;
            let minutes = (now_ms - from + 59_999) / 60_000;
            let mut why = format!(
                "{} of {} attempts failed in the last {minutes} minutes ({} %, the rule says {} %)",
                t.failed,
                t.attempts,
                t.failed * 100 / t.attempts.max(1),
                cfg.breaker_failure_rate
            );
            if !errors.is_empty() {
                why = format!("{why}; last: {}", errors.join("; "));
            }
            self.open_breaker(name, &seen.receiver, &why).await
        };
        if let Err(e) = judged.await {
            tracing::warn!(error = %redact(&e.to_string()), "the receiver's failure rate not judged");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(attempts: u64, failed: u64) -> Tally {
        Tally {
            bucket_ms: 0,
            attempts,
            delivered: attempts - failed,
            failed,
        }
    }

    #[test]
    fn the_failure_rate_rule_opens_at_its_share_once_there_are_enough_attempts() {
        assert!(rate_opens(&window(20, 10), 50, 20), "exactly the share");
        assert!(!rate_opens(&window(20, 9), 50, 20), "just under it");
        assert!(!rate_opens(&window(19, 19), 50, 20), "too few attempts");
        assert!(!rate_opens(&window(100, 100), 0, 20), "0: no rule");
        assert!(rate_opens(&window(1, 1), 100, 0), "at least one attempt");
        assert!(!rate_opens(&window(0, 0), 100, 0));
    }
}
