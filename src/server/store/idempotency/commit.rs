//! The one-request path: a key and the operation's own writes in one `TransactWriteItems`.
//!
//! The key goes in already `succeeded`, with its answer, conditioned on no live request
//! holding it: absent, expired, `failed`, or a `started` claim gone stale. So there is never
//! a window in which the key is `started`. When the condition fails, the cancellation reason
//! hands back the key as it is (`ReturnValuesOnConditionCheckFailure = ALL_OLD`): a
//! duplicate is answered from it, still in one request.

use aws_sdk_dynamodb::types::{Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem};

use super::super::item::{n, s};
use super::super::schema::IDEMPOTENCY_KEYS;
use super::super::tx::{self, Refusal, Writes};
use super::super::{Store, StoreError};
use super::{decode, KeyItem, KeyStatus};

/// How a key and its writes ended.
pub enum Committed {
    /// The key, its answer and the writes are stored.
    Done,
    /// A live request holds the key (replay, in progress or mismatch): the key as it is.
    Held(Box<KeyItem>),
    /// One of the operation's writes was refused by its condition; nothing was written.
    Refused(Refusal),
}

/// Writes `key` (a finished key, with its answer) and `writes` atomically, unless a live
/// request holds the key. `now_ms` decides what is expired and what is stale.
pub async fn commit(
    store: &Store,
    key: &KeyItem,
    writes: Writes,
    now_ms: i64,
) -> Result<Committed, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let av = super::encode(key, &table)?;
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(av))
        .condition_expression(
            "attribute_not_exists(id) OR expires_at <= :now_s OR #status = :failed \
             OR (#status = :started AND stale_at <= :now_ms)",
        )
        .expression_attribute_names("#status", "status")
        .expression_attribute_values(":now_s", n(now_ms.div_euclid(1000)))
        .expression_attribute_values(":now_ms", n(now_ms))
        .expression_attribute_values(":failed", s(KeyStatus::Failed.as_str()))
        .expression_attribute_values(":started", s(KeyStatus::Started.as_str()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    let mut actions = vec![TransactWriteItem::builder().put(put).build()];
    actions.extend(writes.into_actions());
    let outcome = tx::transact(store, actions).await?;
    if let Some(found) = outcome.refused_at(0) {
        let Some(found) = found else {
            return Err(StoreError::Request {
                op: "TransactWriteItems",
                detail: "the key's condition failed without the key".into(),
            });
        };
        let held = decode(found.clone(), &table)?;
        // Our own key: an earlier attempt of this transaction was applied and only its
        // answer was lost. Each key carries a fresh nonce, so no other request's is equal.
        if held.claim_nonce == key.claim_nonce {
            return Ok(Committed::Done);
        }
        return Ok(Committed::Held(Box::new(held)));
    }
    // Refusals are in action order; the operation's writes start at index 1.
    match outcome.into_refusals().into_iter().next() {
        None => Ok(Committed::Done),
        Some(r) => Ok(Committed::Refused(r.shifted(1))),
    }
}
