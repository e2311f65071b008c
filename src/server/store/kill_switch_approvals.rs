//! The kill switches' pending approvals (docs/switches.md, "Approvals"): one versioned item
//! in `settings-<env>` holding the requests that wait for a second admin, written only
//! together with what the request or its decision does (its audit record; an approval's
//! change of the switches), in one transaction.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::versioned_put;
use super::item;
use super::schema::SETTINGS;
use super::tx::Writes;
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

#[derive(Serialize, Deserialize)]
struct ApprovalsItem {
    pk: String,
    #[serde(default)]
    requests: Vec<Approval>,
    version: u64,
    expires_at: i64,
}

/// The requests (strongly consistent); none when never set or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Approvals, StoreError> {
    let stored: Option<ApprovalsItem> = item::get(store, SETTINGS.base, "pk", ITEM_PK).await?;
    Ok(match stored {
        Some(i) if i.expires_at > now.timestamp() => Approvals {
            requests: i.requests,
            version: i.version,
        },
        _ => Approvals::default(),
    })
}

/// The write of `requests` as version `expected + 1`, only if the stored version is still
/// `expected`; first among the writes it is committed with, so a refusal at index 0 is
/// this item's.
pub fn save(
    store: &Store,
    requests: Vec<Approval>,
    expected: u64,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    let stored = ApprovalsItem {
        pk: ITEM_PK.into(),
        requests,
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
