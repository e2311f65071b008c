//! A pause of the deliveries to the receiver (docs/events.md, "Pause"): by an operator, with
//! a reason, until one resumes them; or by the receiver itself, whose 429 with
//! `Retry-After` stops every console's sends until then. One item in `settings-<env>`,
//! read by every console at every dispatch round; each path updates its own attributes, so
//! neither overwrites the other.

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use crate::model::outbox::ReceiverName;
use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::tx::Writes;
use crate::server::store::{Store, StoreError};

const PK: &str = "events-receiver-pause";

/// The pause item of the receiver `name` (`default`'s under the key it had before
/// receivers had names).
fn pk(name: &ReceiverName) -> String {
    if name.is_default() {
        PK.into()
    } else {
        format!("{PK}#{}", name.as_str())
    }
}

/// The pause as stored; the default when never paused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    /// An operator's pause: its id (a resume names it, so it never ends a newer pause),
    /// who, when (RFC 3339) and why (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The receiver asked for no request before this time (epoch ms; 0: never).
    #[serde(default)]
    pub not_before_ms: i64,
}

/// The pause as stored (strongly consistent: a resume is seen by the next round).
pub async fn load(store: &Store, name: &ReceiverName) -> Result<Pause, StoreError> {
    Ok(item::get(store, SETTINGS.base, "pk", &pk(name))
        .await?
        .unwrap_or_default())
}

/// The write that pauses deliveries as `pause_id`, by `by`, at `at`, for `reason`, unless
/// they are paused already; first among the writes it is committed with.
pub fn pause(
    store: &Store,
    name: &ReceiverName,
    pause_id: &str,
    by: &str,
    at: &str,
    reason: &str,
) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(name)))
        .update_expression("SET pause_id = :id, paused_by = :by, paused_at = :at, reason = :why")
        .condition_expression("attribute_not_exists(pause_id)")
        .expression_attribute_values(":id", s(pause_id))
        .expression_attribute_values(":by", s(by))
        .expression_attribute_values(":at", s(at))
        .expression_attribute_values(":why", s(reason))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Writes::new(vec![TransactWriteItem::builder()
        .update(update)
        .build()]))
}

/// The write that ends the pause `pause_id` (and no other); first among its writes.
pub fn resume(store: &Store, name: &ReceiverName, pause_id: &str) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(name)))
        .update_expression("REMOVE pause_id, paused_by, paused_at, reason")
        .condition_expression("pause_id = :id")
        .expression_attribute_values(":id", s(pause_id))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Writes::new(vec![TransactWriteItem::builder()
        .update(update)
        .build()]))
}

/// The receiver answered 429 with `Retry-After`: no console sends to it before `until_ms`
/// (a later time already stored stands). One conditional update, outside any transaction:
/// it is on the delivery path.
pub async fn back_off(store: &Store, name: &ReceiverName, until_ms: i64) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", AttributeValue::S(pk(name)))
        .update_expression("SET not_before_ms = :until")
        .condition_expression("attribute_not_exists(not_before_ms) OR not_before_ms < :until")
        .expression_attribute_values(":until", n(until_ms));
    item::update_if(req).await?;
    Ok(())
}
