//! The receivers of side effects (docs/events.md, "The receiver", "Receivers"): each one's
//! URL, whether delivery to it is on, and its signing secrets (sealed: DynamoDB never holds
//! one in the clear). One versioned item per receiver in `settings-<env>` (`default`'s
//! under the key it had before receivers had names), changed together with its audit
//! record; every console reads it, so they all send to the same place with the same
//! secrets.

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use crate::model::outbox::{ReceiverLimits, ReceiverName};
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::tx::Writes;
use crate::server::store::{Store, StoreError};

const PK: &str = "events-receiver";

/// The item of the receiver `name`.
fn pk(name: &ReceiverName) -> String {
    if name.is_default() {
        PK.into()
    } else {
        format!("{PK}#{}", name.as_str())
    }
}
/// The audit partition of receiver changes.
pub const AUDIT_PARTITION: &str = "system#receiver";

/// A signing secret as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredSecret {
    /// A short id people tell secrets apart by (never part of the secret).
    pub id: String,
    /// The secret, encrypted under a key derived from the server secret.
    pub sealed: String,
    pub created_at: String,
    pub created_by: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverItem {
    pub pk: String,
    pub url: String,
    /// False after the receiver answered 410 Gone, or when an admin turned delivery off.
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Newest last; every one signs each message (a rotation overlaps two).
    #[serde(default)]
    pub secrets: Vec<StoredSecret>,
    /// What every console sends it at most; absent (saved by an older release): the
    /// server's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ReceiverLimits>,
    pub version: i64,
    pub updated_at: String,
    pub updated_by: String,
}

impl ReceiverItem {
    pub fn new(name: &ReceiverName) -> ReceiverItem {
        ReceiverItem {
            pk: pk(name),
            ..ReceiverItem::default()
        }
    }
}

/// The receiver `name` as the consoles last saved it (none: never saved).
pub async fn load(store: &Store, name: &ReceiverName) -> Result<Option<ReceiverItem>, StoreError> {
    item::get(store, SETTINGS.base, "pk", &pk(name)).await
}

/// Saves `next` if the stored item is still at `read_version` (0: none yet), with its
/// audit record. False: someone saved in between.
pub async fn save(
    store: &Store,
    next: &ReceiverItem,
    read_version: i64,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    audit::with_record(store, put(store, next, read_version)?, audit_record).await
}

/// Saves a new named receiver with the routes item that lists it (`routes`, read at
/// `routes_version`), and the audit record. False: either was changed in between.
pub async fn create(
    store: &Store,
    next: &ReceiverItem,
    routes: Writes,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let record_at = 1 + routes.len();
    let writes = Writes::new(vec![put(store, next, 0)?])
        .and(routes)
        .and(audit::writes(store, audit_record)?);
    let outcome = writes.commit(store).await?;
    // The audit record's id is this very change's: refused by it, the change was made and
    // its answer lost (a retry under a new token is refused by all three).
    Ok(outcome.is_done() || outcome.refused_at(record_at).is_some())
}

/// The write of `next` if the stored item is still at `read_version` (0: none yet).
fn put(
    store: &Store,
    next: &ReceiverItem,
    read_version: i64,
) -> Result<TransactWriteItem, StoreError> {
    let table = store.table(SETTINGS.base);
    let item = serde_dynamo::to_item(next).map_err(|e| StoreError::corrupt(&table, e))?;
    let put = Put::builder().table_name(&table).set_item(Some(item));
    let put = if read_version == 0 {
        put.condition_expression("attribute_not_exists(pk)")
    } else {
        put.condition_expression("version = :v")
            .expression_attribute_values(":v", n(read_version))
    };
    let put = put.build().map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// Turns delivery to `name` off after it answered 410 Gone at `url`, unless the URL was
/// changed meanwhile (a new receiver is not punished for the old one). Audited.
pub async fn disable_gone(
    store: &Store,
    name: &ReceiverName,
    url: &str,
    reason: &str,
    now_iso: &str,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let table = store.table(SETTINGS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(name)))
        .update_expression(
            "SET enabled = :off, disabled_reason = :why, updated_at = :now, \
             updated_by = :by ADD version :one",
        )
        .condition_expression("#url = :url AND enabled = :on")
        .expression_attribute_names("#url", "url")
        .expression_attribute_values(":off", AttributeValue::Bool(false))
        .expression_attribute_values(":on", AttributeValue::Bool(true))
        .expression_attribute_values(":why", s(reason))
        .expression_attribute_values(":now", s(now_iso))
        .expression_attribute_values(":by", s("system"))
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":url", s(url))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    audit::with_record(
        store,
        TransactWriteItem::builder().update(update).build(),
        audit_record,
    )
    .await
}
