//! The kill switches' schedule (docs/switches.md, "Scheduled changes"): one versioned item
//! in `settings-<env>` holding the changes set for later, written only together with what
//! setting, cancelling or running one does (its audit record; a run's change of the
//! switches), in one transaction.

use chrono::{DateTime, Utc};

use super::tx::Writes;
use super::versioned_list;
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

/// The schedule as stored (strongly consistent); none when never set or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Schedule, StoreError> {
    let (pending, version) = versioned_list::load(store, ITEM_PK, now).await?;
    Ok(Schedule { pending, version })
}

/// The write of `pending` as version `expected + 1`, only if the stored version is still
/// `expected`; first among the writes it is committed with.
pub fn save(
    store: &Store,
    pending: Vec<Scheduled>,
    expected: u64,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    versioned_list::save(store, ITEM_PK, pending, expected, now, ttl_days)
}
