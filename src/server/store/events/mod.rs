//! Design doc 1, tables A and B: the event and side-effect records of
//! `rp_mw_idempotency-<env>` and the per-conversation state of
//! `rp_mw_conversation_state-<env>`.
//!
//! Both kinds of Table A record are claims: a worker puts the record with its own nonce
//! and a lease, and every later write of that worker is conditioned on the nonce, so a
//! worker that lost its claim (it was slow, its lease ran out, another took over) can
//! never overwrite what the new owner did.

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};
use serde::{Deserialize, Serialize};

use super::audit::{self, AuditItem};
pub use super::items::Claim;
use super::items::{self, decode, n, s};
use super::schema::{MW_CONVERSATION_STATE, MW_IDEMPOTENCY};
use super::tx;
use super::{Store, StoreError};

mod reads;
pub use reads::*;

pub const PROCESSING: &str = "processing";
pub const DECIDED: &str = "decided";
pub const PROCESSED: &str = "processed";

pub const CLAIMED: &str = "claimed";
pub const DELIVERED: &str = "delivered";
pub const QUEUED: &str = "queued";
/// Delivery failed in a way worth retrying: the next owner may claim it again.
pub const RETRY: &str = "retry";
/// The receiver refused it (4xx other than 429): retrying would not help.
pub const REJECTED: &str = "rejected";

/// An inbound event (Table A, `evt:` keys). Never holds the message body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub event_id: String,
    pub kind: String,
    /// `processing` → `decided` → `processed`.
    pub status: String,
    /// `route_only` | `automation_candidate`.
    pub mode: String,
    pub conversation_id: String,
    pub created_at: String,
    pub last_processed_at: String,
    /// From the payload's `created_at`.
    pub received_at: String,
    pub expires_at: i64,
    pub safe_mode: bool,
    pub automation_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    pub payload_sha256: String,
    pub payload_bytes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    pub channel: String,
    /// The decision as recorded (redacted JSON), once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Deliveries of this event after the first.
    #[serde(default)]
    pub duplicates: i64,
    /// How many workers claimed it (more than 1: a crash was recovered).
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// Index keys: `YYYY-MM-DD` of `created_at`, and `created_at#event_id`.
    pub event_day: String,
    pub created_sk: String,
}

/// A side effect (Table A, `act:` keys).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub event_id: String,
    pub kind: String,
    pub action_type: String,
    /// Team, tag, assignee or reply type.
    pub target: String,
    pub conversation_id: String,
    /// The event that caused it.
    pub source_event: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: i64,
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// Set only while it waits in the outbox (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox_sk: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingFlow {
    #[serde(rename = "type")]
    pub flow_type: String,
    pub requested_at: String,
    pub attempts: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LastAutoReply {
    #[serde(rename = "type")]
    pub reply_type: String,
    pub sent_at: String,
    pub source_message_id: String,
}

/// Table B: the little a multi-step flow needs, and the last decision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationState {
    pub conversation_id: String,
    /// Optimistic concurrency: every write names the version it read.
    pub version: i64,
    pub updated_at: String,
    pub expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_processed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_processed_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_routed_team: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_routing_confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_intent: Option<String>,
    #[serde(
        with = "serde_dynamo::string_set",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub risk_flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_flow: Option<PendingFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_auto_reply: Option<LastAutoReply>,
    /// Every auto-reply type sent in this conversation: none is sent twice.
    #[serde(
        with = "serde_dynamo::string_set",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auto_replies_sent: Vec<String>,
    /// The order number the customer gave, as its last 4 characters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_ref_last4: Option<String>,
    /// `created_at` of the newest event applied: an older event arriving late does not
    /// overwrite the `last_*` fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_at: Option<String>,
    /// Events applied so far.
    #[serde(default)]
    pub events_seen: i64,
}

/// Claims the key unless a live record holds it: one conditional `PutItem`, a duplicate
/// costing exactly this one request (see [`items::claim`]).
pub async fn put_claim<T: Serialize + serde::de::DeserializeOwned>(
    store: &Store,
    record: &T,
    now_s: i64,
) -> Result<Claim<T>, StoreError> {
    items::claim(store, MW_IDEMPOTENCY.base, "event_id", record, now_s).await
}

/// Takes over a claim whose owner is gone (its lease ran out) or that asked to be retried:
/// wins only if the record still carries the nonce the caller saw.
pub async fn take_over<T: serde::de::DeserializeOwned>(
    store: &Store,
    key: &str,
    seen_nonce: &str,
    new_nonce: &str,
    lease_until_ms: i64,
    extra_set: &[(&str, AttributeValue)],
) -> Result<Option<T>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let mut update =
        String::from("SET claim_nonce = :new, lease_until_ms = :lease ADD attempts :one");
    let mut req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("event_id", s(key))
        .condition_expression("claim_nonce = :seen")
        .expression_attribute_values(":new", s(new_nonce))
        .expression_attribute_values(":lease", n(lease_until_ms))
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":seen", s(seen_nonce))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    for (i, (name, value)) in extra_set.iter().enumerate() {
        update = update.replacen(" ADD", &format!(", #x{i} = :x{i} ADD"), 1);
        req = req
            .expression_attribute_names(format!("#x{i}"), *name)
            .expression_attribute_values(format!(":x{i}"), value.clone());
    }
    let req = req.update_expression(update);
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(out) => Ok(Some(decode(out.attributes.unwrap_or_default(), &table)?)),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(ccf) => {
                    // Our own earlier attempt won and only its answer was lost.
                    let old = ccf.item.unwrap_or_default();
                    let ours = old.get("claim_nonce").and_then(|v| v.as_s().ok())
                        == Some(&new_nonce.to_string());
                    if ours {
                        Ok(Some(decode(old, &table)?))
                    } else {
                        Ok(None)
                    }
                }
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// Counts one more delivery of an already processed event.
pub async fn count_duplicate(store: &Store, key: &str) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(MW_IDEMPOTENCY.base))
        .key("event_id", s(key))
        .update_expression("ADD duplicates :one")
        .condition_expression("attribute_exists(event_id)")
        .expression_attribute_values(":one", n(1));
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(()),
            // Expired and removed meanwhile: nothing left to count on.
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(()),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

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
    /// The conversation state after the decision.
    pub state: &'a ConversationState,
    /// The state's version the decision was made on (0: there was none).
    pub read_version: i64,
    pub audit: &'a AuditItem,
}

/// The decision, the new conversation state and the decision's audit record, in one
/// transaction: either all three are written or none.
pub async fn record_decision(
    store: &Store,
    d: &DecisionRecord<'_>,
) -> Result<DecisionWrite, StoreError> {
    let DecisionRecord {
        event_key,
        nonce,
        decision_json,
        intent,
        now_iso,
        state,
        read_version,
        audit: audit_record,
    } = *d;
    let events = store.table(MW_IDEMPOTENCY.base);
    let states = store.table(MW_CONVERSATION_STATE.base);
    let update = Update::builder()
        .table_name(&events)
        .key("event_id", s(event_key))
        .update_expression(
            "SET #st = :decided, decision = :d, intent = :i, last_processed_at = :now",
        )
        .condition_expression("claim_nonce = :nonce")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":decided", s(DECIDED))
        .expression_attribute_values(":d", s(decision_json))
        .expression_attribute_values(":i", s(intent))
        .expression_attribute_values(":now", s(now_iso))
        .expression_attribute_values(":nonce", s(nonce))
        .build()
        .map_err(|e| StoreError::corrupt(&events, e))?;
    let item = serde_dynamo::to_item(state).map_err(|e| StoreError::corrupt(&states, e))?;
    let put = if read_version == 0 {
        Put::builder()
            .table_name(&states)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(conversation_id)")
    } else {
        Put::builder()
            .table_name(&states)
            .set_item(Some(item))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(read_version))
    }
    .build()
    .map_err(|e| StoreError::corrupt(&states, e))?;
    let audit_put = audit::put_once(store, audit_record)?;
    let actions = vec![
        TransactWriteItem::builder().update(update).build(),
        TransactWriteItem::builder().put(put).build(),
        TransactWriteItem::builder().put(audit_put).build(),
    ];
    let outcome = tx::transact(store, actions).await?;
    if outcome.refused_at(0).is_some() {
        Ok(DecisionWrite::LostClaim)
    } else if outcome.refused_at(2).is_some() {
        // Still our claim, and the decision's audit (its id derived from the event) is
        // there: this very decision was written before and only its answer was lost.
        Ok(DecisionWrite::Done)
    } else if outcome.refused_at(1).is_some() {
        Ok(DecisionWrite::StaleState)
    } else {
        Ok(DecisionWrite::Done)
    }
}

/// Ends the owner's claim on an event. False: someone else owns it now.
pub async fn finish_event(
    store: &Store,
    key: &str,
    nonce: &str,
    now_iso: &str,
) -> Result<bool, StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(MW_IDEMPOTENCY.base))
        .key("event_id", s(key))
        .update_expression("SET #st = :done, last_processed_at = :now, lease_until_ms = :zero")
        .condition_expression("claim_nonce = :nonce")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":done", s(PROCESSED))
        .expression_attribute_values(":now", s(now_iso))
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":nonce", s(nonce));
    // Conditioned on the nonce only, so writing it again after a lost answer is harmless.
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// Gives the event back so the next delivery takes it over at once (a side effect could
/// not be delivered and is worth retrying).
pub async fn release_event(store: &Store, key: &str, nonce: &str) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(MW_IDEMPOTENCY.base))
        .key("event_id", s(key))
        .update_expression("SET lease_until_ms = :zero")
        .condition_expression("claim_nonce = :nonce")
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":nonce", s(nonce));
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(()),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(()),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// How a side effect ended, written with its audit record in one transaction.
pub struct ActionEnd<'a> {
    pub key: &'a str,
    pub nonce: &'a str,
    pub status: &'a str,
    pub result: &'a str,
    pub now_iso: &'a str,
    /// `Some(sort key)`: it waits in the outbox.
    pub outbox_sk: Option<&'a str>,
}

/// False: the claim was lost (another worker owns the side effect now).
pub async fn finish_action(
    store: &Store,
    end: &ActionEnd<'_>,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let mut update = Update::builder()
        .table_name(&table)
        .key("event_id", s(end.key))
        .condition_expression("claim_nonce = :nonce")
        .expression_attribute_names("#st", "status")
        .expression_attribute_names("#r", "result")
        .expression_attribute_values(":st", s(end.status))
        .expression_attribute_values(":r", s(end.result))
        .expression_attribute_values(":now", s(end.now_iso))
        .expression_attribute_values(":nonce", s(end.nonce))
        .expression_attribute_values(":zero", n(0));
    update = match end.outbox_sk {
        Some(sk) => update
            .update_expression(
                "SET #st = :st, #r = :r, updated_at = :now, lease_until_ms = :zero, \
                 outbox = :outbox, outbox_sk = :osk",
            )
            .expression_attribute_values(":outbox", s("pending"))
            .expression_attribute_values(":osk", s(sk)),
        None => update.update_expression(
            "SET #st = :st, #r = :r, updated_at = :now, lease_until_ms = :zero \
             REMOVE outbox, outbox_sk",
        ),
    };
    let update = update.build().map_err(|e| StoreError::corrupt(&table, e))?;
    let audit_put = audit::put_once(store, audit_record)?;
    let actions = vec![
        TransactWriteItem::builder().update(update).build(),
        TransactWriteItem::builder().put(audit_put).build(),
    ];
    let outcome = tx::transact(store, actions).await?;
    // Refused by the audit record alone (its id is this claim's own): this very end was
    // recorded before and only its answer was lost.
    Ok(outcome.refused_at(0).is_none())
}

/// Writes an audit record unless it is already there (a retry of the same step).
pub async fn audit_once(store: &Store, record: &AuditItem) -> Result<bool, StoreError> {
    let p = audit::put_once(store, record)?;
    let req = store
        .client()
        .put_item()
        .table_name(p.table_name())
        .set_item(Some(p.item().clone()))
        .condition_expression("attribute_not_exists(ts_action_id)");
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("PutItem", &other)),
            },
        }
    })
    .await
}
