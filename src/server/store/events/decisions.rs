//! Recording a decision: the event's decision (the event processed), the conversation's
//! new state, the decision's audit record, and its side effects queued in the outbox with
//! theirs — one transaction. Once it commits the event is acknowledged; delivery is the
//! outbox's business.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::{outbox, ActionRecord, ConversationState, EventStatus};
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{n, s};
use crate::server::store::schema::{MW_CONVERSATION_STATE, MW_IDEMPOTENCY};
use crate::server::store::tx::Outcome;
use crate::server::store::{tx, Busy, Store, StoreError};

/// How recording a decision ended.
pub enum DecisionWrite {
    Done,
    /// Another worker changed the conversation first: read it again and re-decide.
    StaleState,
    /// This worker no longer owns the event.
    LostClaim,
}

/// A decision to record, with what it changes.
pub struct DecisionRecord<'a> {
    pub event_key: &'a str,
    /// The claim the recording worker holds.
    pub nonce: &'a str,
    pub decision_json: &'a str,
    pub intent: &'a str,
    pub now_iso: &'a str,
    /// Now, in epoch seconds (what has expired).
    pub now_s: i64,
    /// The conversation state after the decision (`None`: a decision recorded earlier,
    /// whose state was written with it, only finished now).
    pub state: Option<&'a ConversationState>,
    /// The state's version the decision was made on (0: there was none).
    pub read_version: i64,
    pub audit: Option<&'a AuditItem>,
    /// Side effects to queue (none in safe mode).
    pub actions: &'a [ActionRecord],
    /// One audit record per side effect: queued, or suppressed by safe mode.
    pub action_audits: &'a [AuditItem],
}

/// The decision, the new conversation state, the decision's audit record and the queued
/// side effects with theirs, in one transaction: either all are written or none.
pub async fn record_decision(
    store: &Store,
    d: &DecisionRecord<'_>,
) -> Result<DecisionWrite, StoreError> {
    let mut actions = vec![TransactWriteItem::builder()
        .update(decision_update(store, d)?)
        .build()];
    let state_at = d.state.map(|_| actions.len());
    if let Some(state) = d.state {
        actions.push(
            TransactWriteItem::builder()
                .put(state_put(store, state, d.read_version)?)
                .build(),
        );
    }
    // The first audit record: its id derives from the event, so it is there only if this
    // very transaction committed before.
    let audit_at = d.audit.map(|_| actions.len());
    if let Some(a) = d.audit {
        actions.push(
            TransactWriteItem::builder()
                .put(audit::put_once(store, a)?)
                .build(),
        );
    }
    for a in d.actions {
        actions.push(
            TransactWriteItem::builder()
                .put(outbox::put_new(store, a, d.now_s)?)
                .build(),
        );
    }
    for a in d.action_audits {
        actions.push(
            TransactWriteItem::builder()
                .put(audit::put_once(store, a)?)
                .build(),
        );
    }
    let outcome = tx::transact(store, actions).await?;
    if outcome.refused_at(0).is_some() {
        Ok(DecisionWrite::LostClaim)
    } else if audit_at.is_some_and(|i| outcome.refused_at(i).is_some()) {
        // Still our claim, and the first audit record (its id derived from the event) is
        // there: this very decision was written before and only its answer was lost.
        Ok(DecisionWrite::Done)
    } else if state_at.is_some_and(|i| outcome.refused_at(i).is_some()) {
        Ok(DecisionWrite::StaleState)
    } else if let Outcome::Refused(_) = outcome {
        // A side effect of an earlier life of this event is still on its way: nothing was
        // written; the helpdesk is asked to come back (503) once it has ended.
        Err(StoreError::Busy {
            op: "TransactWriteItems",
            cause: Busy::Conflict,
            detail: "a side effect of an earlier delivery of this event is still queued".into(),
        })
    } else {
        Ok(DecisionWrite::Done)
    }
}

/// The event becomes `processed` and carries its decision, if the recording worker still
/// holds its claim.
fn decision_update(store: &Store, d: &DecisionRecord<'_>) -> Result<Update, StoreError> {
    let events = store.table(MW_IDEMPOTENCY.base);
    Update::builder()
        .table_name(&events)
        .key("event_id", s(d.event_key))
        .update_expression(
            "SET #st = :done, decision = :d, intent = :i, last_processed_at = :now, \
             lease_until_ms = :zero",
        )
        .condition_expression("claim_nonce = :nonce")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":done", s(EventStatus::Processed.as_str()))
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":d", s(d.decision_json))
        .expression_attribute_values(":i", s(d.intent))
        .expression_attribute_values(":now", s(d.now_iso))
        .expression_attribute_values(":nonce", s(d.nonce))
        .build()
        .map_err(|e| StoreError::corrupt(&events, e))
}

/// The conversation's new state, if it is still at the version the decision read (or,
/// read at version 0, still absent).
fn state_put(
    store: &Store,
    state: &ConversationState,
    read_version: i64,
) -> Result<Put, StoreError> {
    let states = store.table(MW_CONVERSATION_STATE.base);
    let item = serde_dynamo::to_item(state).map_err(|e| StoreError::corrupt(&states, e))?;
    let put = Put::builder().table_name(&states).set_item(Some(item));
    let put = if read_version == 0 {
        put.condition_expression("attribute_not_exists(conversation_id)")
    } else {
        put.condition_expression("version = :v")
            .expression_attribute_values(":v", n(read_version))
    };
    put.build().map_err(|e| StoreError::corrupt(&states, e))
}
