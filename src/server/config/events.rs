//! The `[events]` settings (docs/events.md): where side effects go, how they are retried,
//! parked and paced, and the rules that decide events.

use serde::{Deserialize, Serialize};

use super::secret::Secret;
use crate::model::outbox::ReceiverLimits;

/// Event ingestion (docs/events.md): where side effects go and how events are decided.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EventsSection {
    /// The receiver side effects are POSTed to (Standard Webhooks), until an admin saves
    /// one on the Outbox page; empty: they wait in the outbox.
    pub webhook_url: String,
    /// The `whsec_...` secret messages to `webhook_url` are signed with (required with it).
    pub webhook_secret: Secret,
    /// How long one delivery attempt waits for the receiver's answer.
    pub webhook_timeout_ms: i64,
    /// Pauses between delivery attempts (`5s,5m,30m,2h,5h,10h,10h`: eight attempts over
    /// about 28 hours), each varied by up to a tenth; then the action is a dead letter.
    pub retry_schedule: String,
    /// How often each console looks for due side effects when it found none.
    pub dispatch_poll_ms: i64,
    /// Deliveries one console makes at once.
    pub dispatch_concurrency: i64,
    /// Failed attempts in a row (timeouts, 5xx, no connection) that open the receiver's
    /// breaker: deliveries park, their schedules unspent, until a probe gets an answer
    /// (docs/events.md, "Breaker"); 0: no breaker.
    pub breaker_failures: i64,
    /// While the breaker is open, one probe (the oldest parked side effect) this often.
    pub breaker_probe_seconds: i64,
    /// The breaker also opens when at least this percentage of the attempts of the last
    /// five to ten minutes failed (every console's, counted in DynamoDB); 0: no such rule.
    pub breaker_failure_rate: i64,
    /// Attempts those minutes need before their failure rate opens the breaker.
    pub breaker_min_attempts: i64,
    /// Requests per second every console together sends the receiver at most (counted in
    /// DynamoDB, docs/events.md, "Rate limit"); 0: no limit.
    pub receiver_rate: i64,
    /// Requests that may go at once after a quiet spell, above the rate: any window of w
    /// seconds holds at most `rate × w + burst` sends; 0: the rate (one second's worth).
    pub receiver_burst: i64,
    /// Requests every console together has at the receiver at once, at most (slots held in
    /// DynamoDB, docs/events.md, "Concurrency limit"); 0: no limit.
    pub receiver_concurrency: i64,
    /// How long side effects and dead letters are kept.
    pub outbox_days: i64,
    /// A claim on an event or an action older than this may be taken over (a crashed worker).
    pub lease_seconds: i64,
    /// A bulk job ends on a pass that finds nothing this long after an earlier empty pass:
    /// longer than the outbox index takes to show a write.
    pub bulk_confirm_ms: i64,
    /// Without a message id, the same text within one bucket of `created_at` is one event.
    pub hash_bucket_seconds: i64,
    /// Messages without an order number while the console waits for one, before escalating.
    pub order_flow_max_attempts: i64,
    /// Write the outbox's due group on `due-index` (128 partitions, a copy of one write
    /// unit) instead of `outbox-index` (8, the release before's). Every console of this
    /// release reads both: turn it on once no console of the release before runs (they
    /// read `outbox-index` alone). The next release writes `due-index` only.
    pub due_index: bool,
    /// Shards of a day's events on `event-day-index` that this console writes: 32 (the
    /// release before's, which reads only those) or 64. Every console of this release reads
    /// all 64: set 64 once no console of the release before runs.
    pub day_shards: u32,
    /// Keyword rules, in order: the first that matches sets intent and team; tags and risk
    /// flags add up over every rule that matches.
    pub rules: Vec<Rule>,
}

impl Default for EventsSection {
    fn default() -> Self {
        EventsSection {
            webhook_url: String::new(),
            webhook_secret: Secret::default(),
            webhook_timeout_ms: 5_000,
            retry_schedule: crate::server::outbound::schedule::DEFAULT.into(),
            dispatch_poll_ms: 1_000,
            dispatch_concurrency: 4,
            breaker_failures: 5,
            breaker_probe_seconds: 30,
            breaker_failure_rate: 0,
            breaker_min_attempts: 20,
            receiver_rate: 0,
            receiver_burst: 0,
            receiver_concurrency: 0,
            outbox_days: 30,
            lease_seconds: 60,
            bulk_confirm_ms: 2_000,
            hash_bucket_seconds: 300,
            order_flow_max_attempts: 3,
            due_index: false,
            day_shards: crate::server::store::events::DAY_SHARDS_BEFORE,
            rules: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub name: String,
    /// Case-insensitive words or phrases; any one matches.
    pub keywords: Vec<String>,
    #[serde(default)]
    pub intent: String,
    #[serde(default)]
    pub team: String,
    #[serde(default)]
    pub confidence: f64,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub risk_flags: Vec<String>,
    /// An auto-reply type this intent may send (once per conversation).
    #[serde(default)]
    pub auto_reply: String,
    /// Assign the conversation to this assignee or queue.
    #[serde(default)]
    pub assign: String,
}

impl EventsSection {
    /// The receiver's limits these settings give, until an admin saves the receiver's own.
    pub fn limits(&self) -> ReceiverLimits {
        ReceiverLimits {
            rate: self.receiver_rate,
            burst: self.receiver_burst,
            concurrency: self.receiver_concurrency,
        }
    }
}

/// Limits refused: which one (`rate`, `burst`, `concurrency`) and the rule it breaks.
#[derive(Debug, PartialEq, Eq)]
pub struct LimitsError {
    pub field: &'static str,
    pub rule: String,
}

/// The receiver's limits as every console can keep them (the settings' and an admin's):
/// up to 8 items share the rate, so past 6000 a second each would near DynamoDB's 1000
/// writes a second per item; the items are as many as the burst has sends, so the burst
/// must be big enough that each takes at most 750 a second.
pub fn check_limits(l: &ReceiverLimits) -> Result<(), LimitsError> {
    let within = |field, v: i64, hi: i64| {
        if (0..=hi).contains(&v) {
            Ok(())
        } else {
            Err(LimitsError {
                field,
                rule: format!("must be between 0 and {hi}"),
            })
        }
    };
    within("rate", l.rate, 6_000)?;
    within("burst", l.burst, 6_000)?;
    let least = (l.rate + 749) / 750;
    if l.burst > 0 && l.burst < least {
        return Err(LimitsError {
            field: "burst",
            rule: format!(
                "must be at least {least} with a rate of {} (each of the burst's items takes at most 750 sends a second)",
                l.rate
            ),
        });
    }
    within("concurrency", l.concurrency, 256)
}

#[cfg(test)]
mod tests {
    use super::{check_limits, ReceiverLimits};

    fn with(rate: i64, burst: i64, concurrency: i64) -> ReceiverLimits {
        ReceiverLimits {
            rate,
            burst,
            concurrency,
        }
    }

    #[test]
    fn the_burst_is_the_rate_unless_set_and_none_without_a_rate() {
        assert_eq!(with(0, 40, 0).burst(), 0);
        assert_eq!(with(10, 0, 0).burst(), 10);
        assert_eq!(with(10, 3, 0).burst(), 3);
    }

    #[test]
    fn limits_are_checked_each_by_its_rule() {
        let field = |l| check_limits(&l).map_err(|e| e.field);
        assert_eq!(field(with(0, 0, 0)), Ok(()));
        assert_eq!(field(with(6_000, 8, 256)), Ok(()));
        assert_eq!(field(with(6_001, 0, 0)), Err("rate"));
        assert_eq!(field(with(-1, 0, 0)), Err("rate"));
        assert_eq!(field(with(10, 6_001, 0)), Err("burst"));
        assert_eq!(field(with(6_000, 7, 0)), Err("burst"));
        assert_eq!(field(with(10, 0, 257)), Err("concurrency"));
        assert_eq!(field(with(10, 0, -1)), Err("concurrency"));
    }
}
