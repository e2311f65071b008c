//! Performing one side effect of a decision at most once: claim its key, deliver it to the
//! webhook (or queue it in the outbox when there is none), and record how it ended together
//! with its audit record. In safe mode nothing is delivered; the audit says so.

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use chrono::Duration;
use serde_json::json;

use super::ingest::{iso, retry_after, short, ActionOutcome, Events, IngestError};
use super::{Decision, PlannedAction};
use crate::server::ids::random_hex;
use crate::server::outbound::DeliveryError;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::{
    self as records, ActionEnd, ActionRecord, ActionStatus, Claim, EventRecord, RecordKind,
    TakeOver,
};

/// What claiming a side effect found.
enum ActionClaim {
    /// This worker may deliver it now: new, retried, or taken over.
    Mine(Box<ActionRecord>),
    /// It ended before (delivered, queued or rejected): a re-run skips it.
    Ended(ActionStatus),
}

/// How a delivery attempt ended, when it ended for good.
struct Delivered {
    status: ActionStatus,
    /// The audit record's result.
    result: String,
    /// `Some(sort key)`: it waits in the outbox.
    outbox_sk: Option<String>,
    /// What the webhook's caller is told.
    answer: &'static str,
}

impl ActionOutcome {
    fn of(action: &PlannedAction, result: String) -> ActionOutcome {
        ActionOutcome {
            action_type: action.action_type,
            target: action.target.clone(),
            key: action.key.clone(),
            result,
        }
    }
}

impl Events {
    /// Performs `action` once, whoever runs the event: a side effect that already ended is
    /// skipped, one claimed by a worker that vanished is taken over and delivered.
    pub(super) async fn side_effect(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        action: &PlannedAction,
        suppress: bool,
        actor: &str,
    ) -> Result<ActionOutcome, IngestError> {
        if suppress {
            let mut audit = self.effect_audit(rec, decision, action, "suppressed", actor);
            audit.result = "suppressed: safe_mode".into();
            records::audit_once(&self.store, &audit).await?;
            return Ok(ActionOutcome::of(action, "suppressed".into()));
        }
        let mine = match self.claim_action(rec, action).await? {
            ActionClaim::Mine(mine) => *mine,
            ActionClaim::Ended(status) => {
                return Ok(ActionOutcome::of(action, format!("already {status}")))
            }
        };
        if self
            .faults
            .crash_after_action_claim
            .swap(false, Ordering::SeqCst)
        {
            return Err(IngestError::SimulatedCrash);
        }
        // One audit record per attempt: its id carries the claim's attempt number.
        let attempt = format!("a{}", mine.attempts);
        let mut audit = self.effect_audit(rec, decision, action, &attempt, actor);
        let now_iso = iso(self.clock.now());
        let done = match self.deliver(rec, decision, action, &mine, &now_iso).await {
            Ok(done) => done,
            Err(why) => {
                audit.result = format!("fail: {why}");
                self.give_back(rec, action, &mine, &audit, &now_iso).await?;
                tracing::warn!(action = %action.key, reason = %why, "side effect not delivered; will retry");
                return Err(IngestError::DeliveryFailed(why));
            }
        };
        audit.result = done.result.clone();
        let end = ActionEnd {
            key: &action.key,
            nonce: &mine.claim_nonce,
            status: done.status,
            result: &done.result,
            now_iso: &now_iso,
            outbox_sk: done.outbox_sk.as_deref(),
        };
        if !records::finish_action(&self.store, &end, &audit).await? {
            return Err(IngestError::InProgress { retry_after: 1 });
        }
        Ok(ActionOutcome::of(action, done.answer.into()))
    }

    /// The side effect's audit record; `suffix` tells the steps apart (`suppressed`, or
    /// the attempt `a<n>`).
    fn effect_audit(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        action: &PlannedAction,
        suffix: &str,
        actor: &str,
    ) -> AuditItem {
        let id = format!("{}-{suffix}", short(&action.key));
        let mut audit = self.audit(rec, action.action_type.as_str(), &id, actor);
        audit.idempotency_key = action.key.clone();
        audit.action_payload_redacted = json!({
            "target": action.target,
            "intent": decision.intent,
            "event_key": rec.event_id,
        })
        .to_string();
        audit
    }

    /// Claims the side effect's key, or finds it ended; refused while another worker's
    /// lease runs.
    async fn claim_action(
        &self,
        rec: &EventRecord,
        action: &PlannedAction,
    ) -> Result<ActionClaim, IngestError> {
        let now = self.clock.now();
        let fresh = ActionRecord {
            event_id: action.key.clone(),
            kind: RecordKind::Action,
            action_type: action.action_type,
            target: action.target.clone(),
            conversation_id: rec.conversation_id.clone(),
            source_event: rec.event_id.clone(),
            status: ActionStatus::Claimed,
            result: None,
            created_at: iso(now),
            updated_at: iso(now),
            expires_at: (now + Duration::days(self.config.ttl.idempotency_days)).timestamp(),
            attempts: 1,
            claim_nonce: random_hex(16),
            lease_until_ms: now.timestamp_millis() + self.lease_ms(),
            outbox: None,
            outbox_sk: None,
        };
        let old = match records::put_claim(&self.store, &fresh, now.timestamp()).await? {
            Claim::Won => return Ok(ActionClaim::Mine(Box::new(fresh))),
            Claim::Exists(old) => old,
        };
        if old.status.is_final() {
            return Ok(ActionClaim::Ended(old.status));
        }
        if old.status == ActionStatus::Claimed && old.lease_until_ms > now.timestamp_millis() {
            return Err(IngestError::InProgress {
                retry_after: retry_after(old.lease_until_ms, now),
            });
        }
        let take = TakeOver {
            key: &action.key,
            seen_nonce: &old.claim_nonce,
            new_nonce: &fresh.claim_nonce,
            lease_until_ms: fresh.lease_until_ms,
        };
        match records::take_over_action(&self.store, &take).await? {
            Some(taken) => Ok(ActionClaim::Mine(Box::new(taken))),
            None => Err(IngestError::InProgress { retry_after: 1 }),
        }
    }

    /// Delivers the side effect to the webhook, or queues it when none is configured.
    /// `Err(why)`: the receiver could not take it now; worth retrying.
    async fn deliver(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        action: &PlannedAction,
        mine: &ActionRecord,
        now_iso: &str,
    ) -> Result<Delivered, String> {
        let Some(hook) = &self.webhook else {
            return Ok(Delivered {
                status: ActionStatus::Queued,
                result: "queued: outbox".into(),
                outbox_sk: Some(format!("{now_iso}#{}", action.key)),
                answer: "queued",
            });
        };
        let body = json!({
            "action_key": action.key,
            "action_type": action.action_type,
            "target": action.target,
            "conversation_id": rec.conversation_id,
            "event_key": rec.event_id,
            "source_message_id": rec.source_message_id,
            "intent": decision.intent,
            "team": decision.team,
            "attempt": mine.attempts,
        });
        match hook
            .deliver(&action.key, Bytes::from(body.to_string()))
            .await
        {
            Ok(code) => Ok(Delivered {
                status: ActionStatus::Delivered,
                result: format!("success: receiver answered {code}"),
                outbox_sk: None,
                answer: "delivered",
            }),
            Err(DeliveryError::Rejected(code)) => Ok(Delivered {
                status: ActionStatus::Rejected,
                result: format!("fail: receiver refused it ({code})"),
                outbox_sk: None,
                answer: "rejected",
            }),
            Err(DeliveryError::Retryable(why)) => Err(why),
        }
    }

    /// A delivery worth retrying failed: the side effect is marked `retry` (with its audit
    /// record) and the event is given back, so the helpdesk's next delivery takes it over
    /// at once.
    async fn give_back(
        &self,
        rec: &EventRecord,
        action: &PlannedAction,
        mine: &ActionRecord,
        audit: &AuditItem,
        now_iso: &str,
    ) -> Result<(), IngestError> {
        let end = ActionEnd {
            key: &action.key,
            nonce: &mine.claim_nonce,
            status: ActionStatus::Retry,
            result: &audit.result,
            now_iso,
            outbox_sk: None,
        };
        records::finish_action(&self.store, &end, audit).await?;
        records::release_event(&self.store, &rec.event_id, &rec.claim_nonce).await?;
        Ok(())
    }
}
