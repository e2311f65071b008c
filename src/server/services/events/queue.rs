//! Queueing a decision's side effects (docs/events.md, "The outbox"): each planned action
//! becomes an outbox record written in the decision's own transaction, with the message it
//! will carry and the action of its conversation it must wait for. In safe mode nothing is
//! queued; the audit says each one was suppressed.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::ingest::{iso, short, ActionOutcome, Events};
use crate::server::domain::events::decision::{Decision, PlannedAction, Switches};
use crate::server::domain::events::state::ConversationState;
use crate::server::domain::events::Incoming;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::outbox::{self, due_key};
use crate::server::store::events::routes::RoutesItem;
use crate::server::store::events::{ActionRecord, ActionStatus, EventRecord, RecordKind};
use crate::server::telemetry::traces;

/// What a decision puts in the outbox: the records, one audit record per action, and the
/// conversation's newest action afterwards, for each receiver.
pub(super) struct Queued {
    pub records: Vec<ActionRecord>,
    pub audits: Vec<AuditItem>,
    pub outcomes: Vec<ActionOutcome>,
    pub tails: Tails,
}

/// The conversation's newest action for `default` and for each named receiver: the next
/// one routed there waits for it (order holds per receiver).
#[derive(Clone, Debug, Default)]
pub(super) struct Tails {
    pub default: Option<String>,
    pub named: BTreeMap<String, String>,
}

impl Tails {
    /// The newest action of `receiver`'s (`None`: `default`), which `next` now follows.
    fn follow(&mut self, receiver: Option<&str>, next: &str) -> Option<String> {
        match receiver {
            None => self.default.replace(next.to_string()),
            Some(r) => self.named.insert(r.to_string(), next.to_string()),
        }
    }
}

impl ActionOutcome {
    fn of(action: &PlannedAction, result: &str) -> ActionOutcome {
        ActionOutcome {
            action_type: action.action_type,
            target: action.target.clone(),
            key: action.key.clone(),
            result: result.to_string(),
        }
    }
}

/// The message a receiver gets for `action` (Standard Webhooks' `type`, `timestamp`,
/// `data`): the same bytes on every attempt.
pub(super) fn message(rec: &EventRecord, decision: &Decision, action: &PlannedAction) -> String {
    json!({
        "type": format!("action.{}", action.action_type.as_str()),
        "timestamp": rec.created_at,
        "data": {
            "action_key": action.key,
            "action_type": action.action_type,
            "target": action.target,
            "conversation_id": rec.conversation_id,
            "event_key": rec.event_id,
            "source_message_id": rec.source_message_id,
            "intent": decision.intent,
            "team": decision.team,
        },
    })
    .to_string()
}

/// The span of an action's queueing, a child of its event's: what its deliveries continue.
fn queued_span(action: &PlannedAction) -> Option<String> {
    if !traces::on() {
        return None;
    }
    let span = tracing::info_span!(
        target: traces::TARGET,
        "action",
        otel.name = %format!("queue {}", action.action_type.as_str()),
        action.type = action.action_type.as_str(),
    );
    traces::traceparent(&span)
}

impl Events {
    /// The outbox records of `decision`, each routed to its receiver by `routes` and
    /// chained after the conversation's newest action of that receiver in `state`, in order;
    /// in safe mode none, each audited as suppressed.
    pub(super) fn queue(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        suppress: bool,
        (routes, state): (&RoutesItem, Option<&ConversationState>),
        actor: &str,
        now: DateTime<Utc>,
    ) -> Queued {
        let mut q = Queued {
            records: Vec::new(),
            audits: Vec::new(),
            outcomes: Vec::new(),
            tails: state.map_or_else(Tails::default, |s| Tails {
                default: s.outbox_tail.clone(),
                named: s.outbox_tails.clone(),
            }),
        };
        for action in &decision.actions {
            let (suffix, result, answer) = if suppress {
                ("suppressed", "suppressed: safe_mode", "suppressed")
            } else {
                ("queued", "queued: outbox", "queued")
            };
            let mut audit = self.action_audit(rec, decision, action, suffix, actor);
            audit.result = result.into();
            q.audits.push(audit);
            q.outcomes.push(ActionOutcome::of(action, answer));
            if suppress {
                continue;
            }
            let receiver = super::routes::receiver_of(routes, action.action_type.as_str());
            let after = q.tails.follow(receiver.as_deref(), &action.key);
            let mut record = self.outbox_record(rec, decision, action, after, now);
            record.outbox_sk = Some(due_key(
                receiver.as_deref(),
                now.timestamp_millis(),
                &action.key,
            ));
            record.receiver = receiver;
            q.records.push(record);
        }
        q
    }

    fn outbox_record(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        action: &PlannedAction,
        after: Option<String>,
        now: DateTime<Utc>,
    ) -> ActionRecord {
        let now_ms = now.timestamp_millis();
        let mut queued = ActionRecord {
            event_id: action.key.clone(),
            kind: RecordKind::Action,
            action_type: action.action_type,
            target: action.target.clone(),
            conversation_id: rec.conversation_id.clone(),
            source_event: rec.event_id.clone(),
            status: ActionStatus::Queued,
            result: Some("queued: outbox".into()),
            created_at: iso(now),
            updated_at: iso(now),
            expires_at: (now + Duration::days(self.config.events.outbox_days)).timestamp(),
            attempts: 0,
            claim_nonce: String::new(),
            lease_until_ms: 0,
            outbox: None,
            due: None,
            outbox_sk: Some(due_key(None, now_ms, &action.key)),
            next_at_ms: now_ms,
            receiver: None,
            after,
            body: message(rec, decision, action),
            tries: Vec::new(),
            cause: None,
            unknown: false,
            held_reason: None,
            round_start: 0,
            trace_parent: queued_span(action),
        };
        outbox::enter_due(&self.store, &mut queued);
        queued
    }

    /// A side effect's audit record at queueing; `suffix` tells the steps apart.
    fn action_audit(
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

    /// The decision's audit record: what was decided and why, never the text.
    pub(super) fn decision_audit(
        &self,
        rec: &EventRecord,
        ev: &Incoming,
        decision: &Decision,
        switches: Switches,
        actor: &str,
    ) -> AuditItem {
        let id = format!("{}-decision", short(&rec.event_id));
        let mut audit = self.audit(rec, "decision", &id, actor);
        audit.idempotency_key = rec.event_id.clone();
        audit.action_payload_redacted = json!({
            "mode": decision.mode,
            "intent": decision.intent,
            "team": decision.team,
            "confidence": decision.confidence,
            "tags": decision.tags,
            "risk_flags": decision.risk_flags,
            "rules": decision.matched_rules,
            "auto_reply": decision.auto_reply,
            "escalate": decision.escalate,
            "safe_mode": switches.safe_mode,
            "channel": ev.channel.as_str(),
        })
        .to_string();
        audit.result = "success".into();
        audit
    }
}
