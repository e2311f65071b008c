//! Claims on Table A records and their ends: put a claim, take over an abandoned one,
//! count a duplicate, finish or release an event, end a side effect with its audit record.

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::Serialize;

use super::{ActionRecord, ActionStatus, Claim, EventRecord, EventStatus};
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::items::{self, decode, n, s};
use crate::server::store::schema::MW_IDEMPOTENCY;
use crate::server::store::{tx, Store, StoreError};

/// Claims the key unless a live record holds it: one conditional `PutItem`, a duplicate
/// costing exactly this one request (see [`items::claim`]).
pub async fn put_claim<T: Serialize + serde::de::DeserializeOwned>(
    store: &Store,
    record: &T,
    now_s: i64,
) -> Result<Claim<T>, StoreError> {
    items::claim(store, MW_IDEMPOTENCY.base, "event_id", record, now_s).await
}

/// A new owner for a claim: the nonce the caller saw, and the nonce and lease it takes over
/// with.
pub struct TakeOver<'a> {
    pub key: &'a str,
    pub seen_nonce: &'a str,
    pub new_nonce: &'a str,
    pub lease_until_ms: i64,
}

/// Takes over an event whose owner is gone (its lease ran out) or that was given back:
/// the record as it now stands, or `None` when another worker got there first.
pub async fn take_over_event(
    store: &Store,
    t: &TakeOver<'_>,
) -> Result<Option<EventRecord>, StoreError> {
    take_over(store, t, &[]).await
}

/// Takes over a side effect whose owner is gone or that asked to be retried, claiming it
/// again (`status = claimed`).
pub async fn take_over_action(
    store: &Store,
    t: &TakeOver<'_>,
) -> Result<Option<ActionRecord>, StoreError> {
    let claimed = s(ActionStatus::Claimed.as_str());
    take_over(store, t, &[("status", claimed)]).await
}

/// Wins only if the record still carries the nonce the caller saw; `extra_set` are more
/// attributes to set in the same update.
async fn take_over<T: serde::de::DeserializeOwned>(
    store: &Store,
    t: &TakeOver<'_>,
    extra_set: &[(&str, AttributeValue)],
) -> Result<Option<T>, StoreError> {
    let TakeOver {
        key,
        seen_nonce,
        new_nonce,
        lease_until_ms,
    } = *t;
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
        .expression_attribute_values(":done", s(EventStatus::Processed.as_str()))
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
    pub status: ActionStatus,
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
        .expression_attribute_values(":st", s(end.status.as_str()))
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
