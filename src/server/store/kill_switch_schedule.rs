//! The kill switches' schedule (docs/switches.md, "Scheduled changes"): one versioned item
//! in `settings-<env>` holding the changes set for later, written only together with what
//! setting, cancelling or running one does (its audit record; a run's change of the
//! switches), in one transaction.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::versioned_put;
use super::item;
use super::schema::SETTINGS;
use super::tx::Writes;
use super::{Store, StoreError};
use crate::model::kill_switches::Scheduled;

const ITEM_PK: &str = "kill_switch_schedule";
/// Audit records of changes set, cancelled and void (partition `system#kill_switches`); a
/// run is the switches' own change record.
pub const AUDIT_ACTION: &str = "kill_switch_schedule";

/// The changes set for later, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    pub pending: Vec<Scheduled>,
    pub version: u64,
}

#[derive(Serialize, Deserialize)]
struct ScheduleItem {
    pk: String,
    #[serde(default)]
    pending: Vec<Scheduled>,
    version: u64,
    expires_at: i64,
}

/// The schedule (strongly consistent); empty when never set or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Schedule, StoreError> {
    let stored: Option<ScheduleItem> = item::get(store, SETTINGS.base, "pk", ITEM_PK).await?;
    Ok(match stored {
        Some(i) if i.expires_at > now.timestamp() => Schedule {
            pending: i.pending,
            version: i.version,
        },
        _ => Schedule::default(),
    })
}

/// The write of `pending` as version `expected + 1`, only if the stored version is still
/// `expected`; first among the writes it is committed with, so a refusal at index 0 is
/// this item's.
pub fn save(
    store: &Store,
    pending: Vec<Scheduled>,
    expected: u64,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    let stored = ScheduleItem {
        pk: ITEM_PK.into(),
        pending,
        version: expected + 1,
        expires_at: (now + chrono::Duration::days(ttl_days)).timestamp(),
    };
    Ok(Writes::new(vec![versioned_put(
        store,
        SETTINGS.base,
        &stored,
        expected,
        now,
    )?]))
}
