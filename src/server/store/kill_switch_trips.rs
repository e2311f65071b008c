//! The kill switches' trips (docs/switches.md, "Trips"): which alert rule moves which
//! switch to its safe position when it fires. One versioned item in `settings-<env>`,
//! changed only together with its audit record; and the write that lets a trip act once per
//! firing of its alert.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::{self, AuditItem};
use super::item::{self, n, s};
use super::schema::SETTINGS;
use super::tx::Writes;
use super::{Store, StoreError};
use crate::model::kill_switches::Switch;

const ITEM_PK: &str = "kill_switch_trips";
/// Trips and trigger URLs live ten years from their last change (a lapsed trip or URL would
/// fail unsafe: nothing trips, a monitor's call is refused).
pub const KEEP_DAYS: i64 = 3650;
/// Audit records of trips attached and removed (partition `system#kill_switches`).
pub const AUDIT_ACTION: &str = "kill_switch_trip";

/// One trip: when an alert of `rule` fires, `switch` goes to its safe position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trip {
    pub rule: String,
    pub switch: Switch,
    pub made_by: String,
    pub made_at: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trips {
    #[serde(default)]
    pub trips: Vec<Trip>,
    #[serde(default)]
    pub version: u64,
}

#[derive(Serialize, Deserialize)]
struct TripsItem {
    pk: String,
    #[serde(default)]
    trips: Vec<Trip>,
    version: u64,
    expires_at: i64,
}

/// The trips as stored (strongly consistent); none when never set or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Trips, StoreError> {
    let stored: Option<TripsItem> = item::get(store, SETTINGS.base, "pk", ITEM_PK).await?;
    Ok(match stored {
        Some(i) if i.expires_at > now.timestamp() => Trips {
            trips: i.trips,
            version: i.version,
        },
        _ => Trips::default(),
    })
}

/// Writes `next` (version `expected + 1`) with its audit record, only if the stored
/// version is still `expected`. False: it was not.
pub async fn save(
    store: &Store,
    next: &Trips,
    expected: u64,
    record: &AuditItem,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<bool, StoreError> {
    let stored = TripsItem {
        pk: ITEM_PK.into(),
        trips: next.trips.clone(),
        version: next.version,
        // Kept as long as the settings' markers: a trip nobody edits must not lapse.
        expires_at: (now + chrono::Duration::days(ttl_days.max(KEEP_DAYS))).timestamp(),
    };
    audit::put_versioned(store, SETTINGS.base, &stored, expected, record, now).await
}

/// The write that lets `switch`'s trip on alert `id` act once in its `episode`: it fails
/// if it acted in that episode already (another console, a retry, a takeover of the
/// message), or the alert is in another episode now.
pub fn once_per_episode(
    store: &Store,
    id: &str,
    episode: i64,
    switch: Switch,
) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let attr = format!("tripped_episode_{}", switch.key());
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(format!("alert#{id}")))
        .update_expression("SET #t = :e")
        .condition_expression("episode = :e AND (attribute_not_exists(#t) OR #t < :e)")
        .expression_attribute_names("#t", attr)
        .expression_attribute_values(":e", n(episode))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Writes::new(vec![TransactWriteItem::builder()
        .update(update)
        .build()]))
}
