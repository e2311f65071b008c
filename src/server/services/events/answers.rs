//! What an attempt's answer changes beyond its own action (docs/events.md, "Delivery"):
//! the receiver's health, the delivery metrics, the breaker (a failure counted, a probe's
//! answer closing it), and what some answers mean for every action: 410 turns the receiver
//! off, a 429 with `Retry-After` pauses every console's sends.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::dispatch::Attempt;
use super::ingest::{iso, Events};
use super::receiver::Target;
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
        self.count_health(mine, to.target, end).await;
        let counted = match end.status {
            ActionStatus::Delivered => "delivered",
            ActionStatus::Dead => "dead",
            _ => "retry",
        };
        let took = std::time::Duration::from_millis(end.this_try.ms.max(0) as u64);
        crate::server::metrics::delivery(counted, took);
        let answered = self.count_breaker(answer, to.breaker).await;
        if answered && to.probe_from.is_some() {
            self.close_after_probe(to.breaker, answer).await;
        }
        self.answered_for_all(answer, to.target, self.clock.now())
            .await?;
        Ok(answered)
    }

    /// What an answer means for every action, not only the answered one: 410 turns the
    /// receiver off; 429 with `Retry-After` pauses every console's sends.
    async fn answered_for_all(
        &self,
        answer: &Answer,
        target: &Target,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        match answer {
            Answer::Gone => self.receiver_gone(target, now).await,
            Answer::Retry {
                status: 429,
                retry_after: Some(pause),
            } => {
                self.back_off(*pause, now).await;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Counts a recorded attempt in the receiver's health. The delivery is recorded; its
    /// place in the health figures is not worth failing the round for.
    async fn count_health(&self, mine: &ActionRecord, target: &Target, end: &Ending<'_>) {
        let counted = health::Attempt {
            receiver: &health::receiver_key(&target.url_text),
            shard: outbox::shard_of(&mine.conversation_id),
            delivered: end.status == ActionStatus::Delivered,
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
            &format!("gone-{}", now.timestamp_millis()),
            self.config.ttl.audit_days,
        );
        audit.result = "delivery turned off: the receiver answered 410 Gone".into();
        audit.action_payload_redacted = json!({"enabled": false}).to_string();
        let reason = "The receiver answered 410 Gone.";
        // A receiver only the settings name has no item to turn off yet: store it first.
        self.store_settings_receiver(now).await?;
        receiver::disable_gone(&self.store, &target.url_text, reason, &iso(now), &audit).await?;
        tracing::warn!("the receiver answered 410 Gone: delivery turned off");
        Ok(())
    }
}
