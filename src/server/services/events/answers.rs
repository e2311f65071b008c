//! What an attempt's answer changes (docs/events.md, "Delivery"): where it leaves the
//! action (delivered, a retry at the schedule's next time, a dead letter; a probe's
//! unspent), and beyond it the receiver's health, the delivery metrics, the breaker (a failure counted, a probe's
//! answer closing it), and what some answers mean for every action: 410 turns the receiver
//! off, a 429 with `Retry-After` pauses every console's sends.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use serde_json::json;

use super::dispatch::Attempt;
use super::ingest::{iso, Events};
use super::receiver::Target;
use crate::server::ids::random_hex;
use crate::server::outbound::Answer;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::outbox::{self, Ending};
use crate::server::store::events::{health, receiver, ActionRecord, ActionStatus};
use crate::server::store::StoreError;

impl Events {
    /// What a recorded attempt changes beyond its action: the receiver's health, the
    /// metrics, the breaker (a failure counted, a probe's answer closing it) and what the
    /// answer means for every action. True when the receiver answered.
    pub(super) async fn after_attempt(
        &self,
        mine: &ActionRecord,
        to: &Attempt<'_>,
        end: &Ending<'_>,
        answer: &Answer,
    ) -> Result<bool, StoreError> {
        self.count_health(mine, to.target, end, answer.receiver_failed())
            .await;
        let counted = match end.status {
            ActionStatus::Delivered => "delivered",
            ActionStatus::Dead => "dead",
            _ => "retry",
        };
        let took = std::time::Duration::from_millis(end.this_try.ms.max(0) as u64);
        crate::server::metrics::delivery(counted, took);
        let name = &to.target.name;
        let answered = self.count_breaker(name, answer, to.breaker, to.stop).await;
        if answered && to.probe {
            self.close_after_probe(name, to.breaker, answer).await;
        }
        self.answered_for_all(answer, to.target, to.stop, self.clock.now())
            .await?;
        Ok(answered)
    }

    /// What an answer means for every action, not only the answered one: 410 turns the
    /// receiver off; 429 with `Retry-After` pauses every console's sends.
    async fn answered_for_all(
        &self,
        answer: &Answer,
        target: &Target,
        stop: &AtomicBool,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        match answer {
            Answer::Gone => {
                stop.store(true, Ordering::SeqCst);
                self.receiver_gone(target, now).await
            }
            Answer::Retry {
                status: 429,
                retry_after: Some(pause),
            } => {
                stop.store(true, Ordering::SeqCst);
                self.back_off(&target.name, *pause, now).await;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Counts a recorded attempt in the receiver's health. The delivery is recorded; its
    /// place in the health figures is not worth failing the round for.
    async fn count_health(
        &self,
        mine: &ActionRecord,
        target: &Target,
        end: &Ending<'_>,
        failed: bool,
    ) {
        let counted = health::Attempt {
            receiver: &health::receiver_key(&target.url_text),
            shard: outbox::shard_of(&mine.conversation_id),
            delivered: end.status == ActionStatus::Delivered,
            failed,
            error: Some(end.this_try.result.as_str()),
            now_ms: end.now_ms,
        };
        if let Err(e) = health::count(&self.store, &counted).await {
            tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "receiver health not counted");
        }
    }

    /// The receiver answered 410 Gone: delivery to it stops until an admin turns it on.
    async fn receiver_gone(&self, target: &Target, now: DateTime<Utc>) -> Result<(), StoreError> {
        let mut audit = AuditItem::new(
            receiver::AUDIT_PARTITION,
            "receiver_change",
            now,
            &match target.name.is_default() {
                true => format!("gone-{}", now.timestamp_millis()),
                false => format!("gone-{}-{}", target.name.as_str(), now.timestamp_millis()),
            },
            self.config.ttl.audit_days,
        );
        audit.result = "delivery turned off: the receiver answered 410 Gone".into();
        audit.action_payload_redacted =
            json!({"enabled": false, "receiver": target.name.as_str()}).to_string();
        let reason = "The receiver answered 410 Gone.";
        // A receiver only the settings name has no item to turn off yet: store it first.
        if target.name.is_default() {
            self.store_settings_receiver(now).await?;
        }
        let name = &target.name;
        receiver::disable_gone(
            &self.store,
            name,
            &target.url_text,
            reason,
            &iso(now),
            &audit,
        )
        .await?;
        tracing::warn!("the receiver answered 410 Gone: delivery turned off");
        Ok(())
    }

    /// Where an attempt leaves the action: its status, when it may go next (a retry), and
    /// whether the attempt stays out of its schedule. A probe that is to be sent again goes
    /// behind the other parked actions (the next probe is another), its schedule unspent:
    /// no probe makes a dead letter.
    pub(super) fn where_it_goes(
        &self,
        mine: &ActionRecord,
        to: &Attempt<'_>,
        answer: &Answer,
        now: DateTime<Utc>,
    ) -> (ActionStatus, i64, bool) {
        let unspent = to.probe
            && matches!(
                answer,
                Answer::Retry { .. } | Answer::Unreachable(_) | Answer::Unknown(_)
            );
        let status = match unspent {
            true => ActionStatus::Retry,
            false => self.next_status(mine, answer),
        };
        let next_at_ms = match (status, answer) {
            (
                ActionStatus::Retry,
                Answer::Retry {
                    retry_after: Some(wait),
                    ..
                },
            ) if unspent => now.timestamp_millis() + wait.as_millis() as i64,
            (ActionStatus::Retry, _) if unspent => now.timestamp_millis(),
            (ActionStatus::Retry, _) => self.next_attempt_at(mine, answer, now),
            _ => 0,
        };
        (status, next_at_ms, unspent)
    }

    /// Where an attempt leaves the action: delivered, a retry while the schedule lasts, or a
    /// dead letter.
    fn next_status(&self, mine: &ActionRecord, answer: &Answer) -> ActionStatus {
        match answer {
            Answer::Delivered(_) => ActionStatus::Delivered,
            Answer::Gone | Answer::Refused(_) => ActionStatus::Dead,
            Answer::Retry { .. } | Answer::Unreachable(_) | Answer::Unknown(_) => {
                let made = (mine.attempts - mine.round_start).max(1) as u32;
                if made >= self.schedule.attempts() {
                    ActionStatus::Dead
                } else {
                    ActionStatus::Retry
                }
            }
        }
    }

    /// When the next attempt may go: the schedule's pause (varied by up to a tenth), never
    /// sooner than the receiver's `Retry-After`.
    fn next_attempt_at(&self, mine: &ActionRecord, answer: &Answer, now: DateTime<Utc>) -> i64 {
        let made = (mine.attempts - mine.round_start).max(1) as u32;
        let retry_after = match answer {
            Answer::Retry { retry_after, .. } => *retry_after,
            _ => None,
        };
        let jitter = f64::from(u16::from_str_radix(&random_hex(2), 16).unwrap_or(0)) / 65535.0;
        let pause = self
            .schedule
            .pause(made + 1, jitter, retry_after)
            .unwrap_or_default();
        now.timestamp_millis() + pause.as_millis() as i64
    }
}
