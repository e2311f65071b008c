//! Where each action type goes (docs/events.md, "Receivers"): the named receivers besides
//! `default`, and the route of each action type that does not go to `default`. One
//! versioned item in `settings-<env>`, read when a decision queues its side effects (the
//! route is stored on each action: from one of its copies, [`load_copy`]) and at every
//! dispatch round (which receivers to send to); changed by an admin together with its
//! audit record and its copies. It never expires (no `expires_at`): the routes stand until
//! an admin changes them.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use serde::{Deserialize, Serialize};

use crate::server::store::audit::{self, AuditItem};
use crate::server::store::copies::Copied;
use crate::server::store::item::{self, n};
use crate::server::store::schema::SETTINGS;
use crate::server::store::tx::Writes;
use crate::server::store::{Store, StoreError};

const PK: &str = "events-routes";

const COPIED: Copied<'static> = Copied {
    base: SETTINGS.base,
    key_attr: "pk",
    key: PK,
    copies: crate::server::store::copies::COPIES,
};

/// The routes as stored; the default (no named receiver, every type to `default`) until
/// an admin adds a receiver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutesItem {
    pub pk: String,
    /// The named receivers besides `default`, in the order they were added.
    #[serde(default)]
    pub receivers: Vec<String>,
    /// An action type and the receiver it goes to; a type not here goes to `default`.
    #[serde(default)]
    pub routes: BTreeMap<String, String>,
    /// 0: never saved.
    #[serde(default)]
    pub version: i64,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default)]
    pub updated_by: String,
}

/// The routes as the consoles last saved them (strongly consistent).
pub async fn load(store: &Store) -> Result<RoutesItem, StoreError> {
    Ok(item::get(store, SETTINGS.base, "pk", PK)
        .await?
        .unwrap_or_default())
}

/// The routes as an event reads them: one of their copies (no staleness: a save writes
/// every copy in its own transaction).
pub async fn load_copy(store: &Store) -> Result<RoutesItem, StoreError> {
    let table = store.table(SETTINGS.base);
    let absent: crate::server::store::copies::Item = serde_dynamo::to_item(RoutesItem {
        pk: PK.into(),
        ..RoutesItem::default()
    })
    .map_err(|e| StoreError::corrupt(&table, e))?;
    match COPIED.read(store, &absent).await? {
        Some(found) => {
            let mut routes: RoutesItem = item::decode(found, &table)?;
            routes.pk = PK.into();
            Ok(routes)
        }
        None => Ok(RoutesItem::default()),
    }
}

/// Mends the copies after a save made without them (a console of the release before);
/// `stored` is the routes as just read.
pub async fn mend_copies(store: &Store, stored: &RoutesItem) -> Result<u32, StoreError> {
    if stored.version == 0 {
        return Ok(0);
    }
    let table = store.table(SETTINGS.base);
    let mut item = stored.clone();
    item.pk = PK.into();
    let item: crate::server::store::copies::Item =
        serde_dynamo::to_item(&item).map_err(|e| StoreError::corrupt(&table, e))?;
    COPIED.mend(store, &item).await
}

/// The write of `next` if the stored item is still at `read_version` (0: none yet), with
/// its copies.
pub fn save(store: &Store, next: &RoutesItem, read_version: i64) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let mut next = next.clone();
    next.pk = PK.into();
    let item: crate::server::store::copies::Item =
        serde_dynamo::to_item(&next).map_err(|e| StoreError::corrupt(&table, e))?;
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(item.clone()));
    let put = if read_version == 0 {
        put.condition_expression("attribute_not_exists(pk)")
    } else {
        put.condition_expression("version = :v")
            .expression_attribute_values(":v", n(read_version))
    };
    let put = put.build().map_err(|e| StoreError::corrupt(&table, e))?;
    let mut writes = vec![TransactWriteItem::builder().put(put).build()];
    writes.extend(COPIED.puts(store, &item)?);
    Ok(Writes::new(writes))
}

/// Saves `next` over `read_version` with its audit record. False: changed in between.
pub async fn save_with_record(
    store: &Store,
    next: &RoutesItem,
    read_version: i64,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let routes = save(store, next, read_version)?;
    let record_at = routes.len();
    let outcome = routes
        .and(audit::writes(store, audit_record)?)
        .commit(store)
        .await?;
    // The audit record's id is this very change's: refused by it, the change was made and
    // its answer lost.
    Ok(outcome.is_done() || outcome.refused_at(record_at).is_some())
}
