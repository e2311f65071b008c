//! Events an earlier version left decided but not finished: it recorded the decision
//! first and delivered the side effects after. A redelivery of such an event keeps the
//! decision and queues the side effects not already there (docs/events.md, "Not done, on
//! purpose": nothing scans for them).

use super::ingest::{iso, ActionOutcome, Events, IngestError};
use crate::server::domain::events::decision::{Decision, Switches};
use crate::server::store::audit::AuditItem;
use crate::server::store::events::{self as records, DecisionRecord, DecisionWrite, EventRecord};

impl Events {
    /// Queues the side effects of a decision recorded before (those not already there)
    /// and marks the event processed.
    pub(super) async fn finish_decided(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        live: Switches,
        actor: &str,
    ) -> Result<Vec<ActionOutcome>, IngestError> {
        let now = self.clock.now();
        let suppress = rec.safe_mode || live.safe_mode;
        let routes = self.routes_for(decision, suppress).await?;
        let mut queued = self.queue(rec, decision, suppress, (&routes, None), actor, now);
        let mut keep = Vec::new();
        for r in queued.records.drain(..) {
            if records::get_action(&self.store, &r.event_id)
                .await?
                .is_none()
            {
                keep.push(r);
            }
        }
        let audits: Vec<AuditItem> = queued
            .audits
            .into_iter()
            .filter(|a| keep.iter().any(|r| r.event_id == a.idempotency_key))
            .collect();
        let record = DecisionRecord {
            event_key: &rec.event_id,
            nonce: &rec.claim_nonce,
            decision_json: rec.decision.as_deref().unwrap_or("{}"),
            intent: &decision.intent,
            now_iso: &iso(now),
            now_s: now.timestamp(),
            state: None,
            read_version: 0,
            audit: None,
            actions: &keep,
            action_audits: &audits,
        };
        match records::record_decision(&self.store, &record).await? {
            DecisionWrite::LostClaim => Err(IngestError::InProgress { retry_after: 1 }),
            _ => Ok(queued.outcomes),
        }
    }
}
