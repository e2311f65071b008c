//! The order of a conversation's side effects in the outbox (docs/events.md, "The
//! outbox"): the action one waits for, and moving a waiting one behind it.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

use super::outbox::due_key;
use super::{ActionRecord, ActionStatus};
use crate::server::store::item::{self, n, s};
use crate::server::store::schema::MW_IDEMPOTENCY;
use crate::server::store::tx;
use crate::server::store::{Store, StoreError};

/// The action `key` (the one before another in its conversation) if it still holds the
/// next one back; `None` once it ended or is gone (expired).
pub async fn blocker(store: &Store, key: &str) -> Result<Option<ActionRecord>, StoreError> {
    let found: Option<ActionRecord> =
        item::get(store, MW_IDEMPOTENCY.base, "event_id", key).await?;
    Ok(found.filter(|a| !a.status.has_ended()))
}

/// Moves a due action that waits for the one before it to `until_ms` in its partition, so
/// that waiting actions never fill the front of the partition and hide the one they wait
/// for (a dispatcher reads the front only). Conditioned on the action being unchanged
/// since it was read; false if it was not (someone else moved it: nothing to do).
pub async fn defer(store: &Store, rec: &ActionRecord, until_ms: i64) -> Result<bool, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("event_id", s(&rec.event_id))
        .update_expression("SET next_at_ms = :until, outbox_sk = :sk")
        .condition_expression("#st IN (:queued, :retry) AND next_at_ms = :was")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":queued", s(ActionStatus::Queued.as_str()))
        .expression_attribute_values(":retry", s(ActionStatus::Retry.as_str()))
        .expression_attribute_values(":was", n(rec.next_at_ms))
        .expression_attribute_values(":until", n(until_ms))
        .expression_attribute_values(
            ":sk",
            s(due_key(rec.receiver.as_deref(), until_ms, &rec.event_id)),
        );
    // Deferring twice to the same time is harmless, so a lost answer may be retried.
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
