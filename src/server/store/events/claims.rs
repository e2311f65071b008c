//! Claims on event records: put a claim, take over an abandoned one, count a duplicate.
//! (An event's claim ends with its decision's transaction, `decisions.rs`.)

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::Serialize;

use super::{Claim, EventRecord};
use crate::server::store::item::{self, decode, n, s};
use crate::server::store::schema::MW_IDEMPOTENCY;
use crate::server::store::{tx, Store, StoreError};

/// Claims the key unless a live record holds it: one conditional `PutItem`, a duplicate
/// costing exactly this one request (see [`item::claim`]).
pub async fn put_claim<T: Serialize + serde::de::DeserializeOwned>(
    store: &Store,
    record: &T,
    now_s: i64,
) -> Result<Claim<T>, StoreError> {
    item::claim(store, MW_IDEMPOTENCY.base, "event_id", record, now_s).await
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
    sent_under_nonce(req.update_expression(update), &table, new_nonce).await
}

/// Sends a claim (`req`: an update returning the new item, and the old one when its
/// condition fails) and retries it past throttles and conflicts. `None`: the condition
/// failed for another owner; a failure whose old item already carries `nonce` was our own
/// earlier attempt, applied with its answer lost: ours.
pub(crate) async fn sent_under_nonce<T: serde::de::DeserializeOwned>(
    req: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder,
    table: &str,
    nonce: &str,
) -> Result<Option<T>, StoreError> {
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(out) => Ok(Some(decode(out.attributes.unwrap_or_default(), table)?)),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(ccf) => {
                    let old = ccf.item.unwrap_or_default();
                    let ours = old.get("claim_nonce").and_then(|v| v.as_s().ok())
                        == Some(&nonce.to_string());
                    if ours {
                        Ok(Some(decode(old, table)?))
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

/// Counts one more delivery of an already processed event, exactly: a transaction of one
/// update, so that a request sent again after its answer was lost (a 500 after the commit,
/// a timeout) carries the same client token and DynamoDB applies it once. A plain `ADD`
/// sent again counts twice. Rare (a duplicate delivery), so the transaction's second
/// write unit is paid seldom.
pub async fn count_duplicate(store: &Store, key: &str) -> Result<(), StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let update = Update::builder()
        .table_name(&table)
        .key("event_id", s(key))
        .update_expression("ADD duplicates :one")
        .condition_expression("attribute_exists(event_id)")
        .expression_attribute_values(":one", n(1))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    // Refused: expired and removed meanwhile, nothing left to count on.
    tx::transact(
        store,
        vec![TransactWriteItem::builder().update(update).build()],
    )
    .await
    .map(|_| ())
}
