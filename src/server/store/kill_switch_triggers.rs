//! The kill switches' trigger URLs (docs/switches.md, "Trigger URLs"): one versioned item in
//! `settings-<env>` holding, per switch, the SHA-256 of its trigger's secret (never the
//! secret), changed only together with its audit record.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::{self, AuditItem};
use super::item;
use super::schema::SETTINGS;
use super::{Store, StoreError};
use crate::model::kill_switches::Switch;

const ITEM_PK: &str = "kill_switch_triggers";
/// Audit records of trigger URLs made, rotated and revoked (partition `system#kill_switches`).
pub const AUDIT_ACTION: &str = "kill_switch_trigger";

/// One switch's trigger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    pub secret_sha256: String,
    pub made_by: String,
    pub made_at: String,
}

/// Both switches' triggers, versioned: every change names the version it read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Triggers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_mode: Option<Trigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_enabled: Option<Trigger>,
    #[serde(default)]
    pub version: u64,
}

impl Triggers {
    pub fn get(&self, switch: Switch) -> Option<&Trigger> {
        match switch {
            Switch::SafeMode => self.safe_mode.as_ref(),
            Switch::AutomationEnabled => self.automation_enabled.as_ref(),
        }
    }

    pub fn set(&mut self, switch: Switch, trigger: Option<Trigger>) {
        match switch {
            Switch::SafeMode => self.safe_mode = trigger,
            Switch::AutomationEnabled => self.automation_enabled = trigger,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct TriggersItem {
    pk: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    safe_mode: Option<Trigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    automation_enabled: Option<Trigger>,
    version: u64,
    expires_at: i64,
}

/// The triggers as stored (strongly consistent); none when never made or expired.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<Triggers, StoreError> {
    let stored: Option<TriggersItem> = item::get(store, SETTINGS.base, "pk", ITEM_PK).await?;
    Ok(match stored {
        Some(i) if i.expires_at > now.timestamp() => Triggers {
            safe_mode: i.safe_mode,
            automation_enabled: i.automation_enabled,
            version: i.version,
        },
        _ => Triggers::default(),
    })
}

/// Writes `next` (whose version is `expected + 1`) with its audit record, only if the
/// stored version is still `expected`. False: it was not.
pub async fn save(
    store: &Store,
    next: &Triggers,
    expected: u64,
    record: &AuditItem,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<bool, StoreError> {
    let stored = TriggersItem {
        pk: ITEM_PK.into(),
        safe_mode: next.safe_mode.clone(),
        automation_enabled: next.automation_enabled.clone(),
        version: next.version,
        expires_at: (now
            + chrono::Duration::days(ttl_days.max(super::kill_switch_trips::KEEP_DAYS)))
        .timestamp(),
    };
    audit::put_versioned(store, SETTINGS.base, &stored, expected, record, now).await
}

/// How long a trigger's episode is remembered: an alert that fires longer than this moves
/// its switch again on a repeat.
pub const EPISODE_DAYS: i64 = 30;

#[derive(Serialize)]
struct EpisodeItem {
    pk: String,
    set_at: String,
    expires_at: i64,
}

/// The write that lets a trigger's call of `episode` move `switch` once: it fails if that
/// episode was seen already (a repeat, another console). First is the marker put, to go
/// after the change's writes.
pub fn episode_once(
    store: &Store,
    switch: Switch,
    episode: &str,
    now: DateTime<Utc>,
) -> Result<super::tx::Writes, StoreError> {
    use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
    let table = store.table(SETTINGS.base);
    let marker = EpisodeItem {
        pk: format!("trigger_episode#{}#{episode}", switch.key()),
        set_at: now.to_rfc3339(),
        expires_at: (now + chrono::Duration::days(EPISODE_DAYS)).timestamp(),
    };
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(
            serde_dynamo::to_item(&marker).map_err(|e| StoreError::corrupt(&table, e))?,
        ))
        .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
        .expression_attribute_values(":now", item::n(now.timestamp()))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(super::tx::Writes::new(vec![TransactWriteItem::builder()
        .put(put)
        .build()]))
}
