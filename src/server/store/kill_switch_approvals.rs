//! The kill switches' pending approvals (docs/switches.md, "Approvals"): one versioned item
//! in `settings-<env>` holding the requests that wait for a second admin, written only
//! together with what the request or its decision does (its audit record; an approval's
//! change of the switches), in one transaction.

use chrono::{DateTime, Utc};

use super::tx::Writes;
use super::versioned_list;
use super::{Store, StoreError};
use crate::model::kill_switches::Approval;

const ITEM_PK: &str = "kill_switch_approvals";
/// Audit records of requests made and rejected (partition `system#kill_switches`); an
/// approval is the switches' own change record.
pub const AUDIT_ACTION: &str = "kill_switch_approval";

/// The requests as stored, expired ones included (the rules drop them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Approvals {
    pub requests: Vec<Approval>,
    pub version: u64,
}

/// The requests as stored (strongly consistent); none when never set or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Approvals, StoreError> {
    let (requests, version) = versioned_list::load(store, ITEM_PK, now).await?;
    Ok(Approvals { requests, version })
}

/// The write of `requests` as version `expected + 1`, only if the stored version is still
/// `expected`; first among the writes it is committed with.
pub fn save(
    store: &Store,
    requests: Vec<Approval>,
    expected: u64,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    versioned_list::save(store, ITEM_PK, requests, expected, now, ttl_days)
}
