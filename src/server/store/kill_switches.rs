//! The kill switches: one versioned item in `settings-<env>`, changed only together with
//! its audit record in one transaction, and [`COPIES`] copies of it written in that same
//! transaction, which requests read instead (docs/dynamodb.md, "Hot items").

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::audit::{self, AuditItem};
use super::copies::Copied;
use super::schema::SETTINGS;
use super::tx::{Refusal, Writes};
use super::{Store, StoreError};
use crate::model::kill_switches::{KillSwitches, SwitchState};

const ITEM_PK: &str = "kill_switches";

/// Copies of the switches item. Every event and every delivery reads the switches,
/// strongly consistently; one item would take them all (a partition serves 3,000 reads a
/// second). Each change writes every copy in its own transaction, so any copy read after
/// the change is acknowledged has it: a request reads one at random, with no staleness.
/// Eight take 24,000 reads a second once DynamoDB has spread them over partitions.
pub const COPIES: u32 = super::copies::COPIES;

const COPIED: Copied<'static> = Copied {
    base: SETTINGS.base,
    key_attr: "pk",
    key: ITEM_PK,
    copies: COPIES,
};
/// Audit partition of kill-switch changes.
pub const AUDIT_PARTITION: &str = "system#kill_switches";
pub const AUDIT_ACTION: &str = "kill_switch_change";

#[derive(Serialize, Deserialize)]
struct SwitchesItem {
    pk: String,
    safe_mode: bool,
    automation_enabled: bool,
    version: u64,
    updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    safe_mode_last: Option<LastChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    automation_enabled_last: Option<LastChange>,
    expires_at: i64,
}

#[derive(Serialize, Deserialize)]
struct LastChange {
    by: String,
    at: DateTime<Utc>,
    reason: String,
    /// A timed change's end: the switch goes back then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ends_at: Option<DateTime<Utc>>,
}

impl SwitchesItem {
    /// The item of `s`; a change time that is not RFC 3339 is refused, never dropped (the
    /// last change is how a retried change knows it landed).
    fn from_model(s: &KillSwitches, now: DateTime<Utc>, ttl_days: i64) -> Result<Self, StoreError> {
        let time = |t: &str| -> Result<DateTime<Utc>, StoreError> {
            Ok(DateTime::parse_from_rfc3339(t)
                .map_err(|e| StoreError::corrupt("kill switches", e))?
                .with_timezone(&Utc))
        };
        let last = |st: &SwitchState| -> Result<Option<LastChange>, StoreError> {
            Ok(match (&st.changed_by, &st.changed_at) {
                (Some(by), Some(at)) => Some(LastChange {
                    by: by.clone(),
                    at: time(at)?,
                    reason: st.reason.clone().unwrap_or_default(),
                    ends_at: st.ends_at.as_deref().map(time).transpose()?,
                }),
                _ => None,
            })
        };
        Ok(SwitchesItem {
            pk: ITEM_PK.into(),
            safe_mode: s.safe_mode.enabled,
            automation_enabled: s.automation_enabled.enabled,
            version: s.version,
            updated_at: now.to_rfc3339(),
            safe_mode_last: last(&s.safe_mode)?,
            automation_enabled_last: last(&s.automation_enabled)?,
            expires_at: (now + chrono::Duration::days(ttl_days)).timestamp(),
        })
    }

    fn into_model(self, now: DateTime<Utc>) -> KillSwitches {
        // An item past its TTL is gone, even before DynamoDB deletes it.
        if self.expires_at <= now.timestamp() {
            return KillSwitches::safe_defaults();
        }
        let state = |enabled: bool, last: Option<LastChange>| SwitchState {
            enabled,
            changed_by: last.as_ref().map(|l| l.by.clone()),
            changed_at: last.as_ref().map(|l| crate::server::clock::iso(l.at)),
            ends_at: last
                .as_ref()
                .and_then(|l| l.ends_at)
                .map(crate::server::clock::iso),
            reason: last.map(|l| l.reason),
        };
        KillSwitches {
            safe_mode: state(self.safe_mode, self.safe_mode_last),
            automation_enabled: state(self.automation_enabled, self.automation_enabled_last),
            version: self.version,
        }
    }
}

fn decode(
    item: HashMap<String, AttributeValue>,
    now: DateTime<Utc>,
    table: &str,
) -> Result<KillSwitches, StoreError> {
    let item: SwitchesItem =
        serde_dynamo::from_item(item).map_err(|e| StoreError::corrupt(table, e))?;
    Ok(item.into_model(now))
}

/// The current switches (strongly consistent); the safe defaults when never set.
pub async fn load(store: &Store, now: DateTime<Utc>) -> Result<KillSwitches, StoreError> {
    let table = store.table(SETTINGS.base);
    let out = store
        .client()
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(ITEM_PK.into()))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    match out.item {
        Some(item) => decode(item, now, &table),
        None => Ok(KillSwitches::safe_defaults()),
    }
}

/// The switches as a request reads them: one copy, at random, strongly consistent. A copy
/// that is not there (never set, or a table of the release before that wrote none) sends
/// the read to the item itself.
pub async fn load_copy(store: &Store, now: DateTime<Utc>) -> Result<KillSwitches, StoreError> {
    match COPIED.get_copy(store).await? {
        Some(item) => decode(item, now, &store.table(SETTINGS.base)),
        None => load(store, now).await,
    }
}

/// Mends the copies after a console of the release before changed the item without them
/// (a rolling deployment): when copy `i` (a random one; every console looks every few
/// seconds, with the timed changes) holds another version than `current`, the item is read
/// and written again as every copy (its expiry too), each only over an older version.
/// Switches never set (version 0) get copies of the safe defaults, each only where no copy
/// is yet (a change's own copies win), so that requests never fall through to the item.
/// Answers how many copies it wrote.
pub async fn mend_copies(
    store: &Store,
    current: &KillSwitches,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<u32, StoreError> {
    let table = store.table(SETTINGS.base);
    let main = match COPIED.get(store, ITEM_PK).await? {
        Some(main) => main,
        None if current.version == 0 => {
            serde_dynamo::to_item(SwitchesItem::from_model(current, now, ttl_days)?)
                .map_err(|e| StoreError::corrupt(&table, e))?
        }
        None => return Ok(0),
    };
    COPIED.mend(store, &main).await
}

/// The change as writes: `next` (whose version is `expected + 1`) only if the stored
/// version is still `expected`, and its audit record.
pub fn change(
    store: &Store,
    next: &KillSwitches,
    expected: u64,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let item: HashMap<String, AttributeValue> =
        serde_dynamo::to_item(SwitchesItem::from_model(next, now, ttl_days)?)
            .map_err(|e| StoreError::corrupt(&table, e))?;
    let mut put = Put::builder()
        .table_name(&table)
        .set_item(Some(item.clone()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    put = if expected == 0 {
        // Never written, or written and expired: both count as version 0.
        put.condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
            .expression_attribute_values(":now", AttributeValue::N(now.timestamp().to_string()))
    } else {
        put.condition_expression("version = :v AND expires_at > :now")
            .expression_attribute_values(":v", AttributeValue::N(expected.to_string()))
            .expression_attribute_values(":now", AttributeValue::N(now.timestamp().to_string()))
    };
    let put = put.build().map_err(|e| StoreError::corrupt(&table, e))?;
    let mut writes = vec![
        TransactWriteItem::builder().put(put).build(),
        audit::write_once(store, audit_item)?,
    ];
    // The copies go with the change, unconditionally: the item's condition decides.
    writes.extend(COPIED.puts(store, &item)?);
    Ok(Writes::new(writes))
}

/// What is stored instead, when [`change`]'s writes were refused: the switches the
/// refused write found. Its audit record refusing it means its id was taken: an error.
pub fn refused(store: &Store, r: &Refusal, now: DateTime<Utc>) -> Result<KillSwitches, StoreError> {
    if r.index != 0 {
        return Err(StoreError::Request {
            op: "TransactWriteItems",
            detail: "the change's audit record id is already taken".into(),
        });
    }
    match r.item() {
        Some(old) => decode(old.clone(), now, &store.table(SETTINGS.base)),
        // The version condition found no item: never set, as stored.
        None => Ok(KillSwitches::safe_defaults()),
    }
}

pub enum Commit {
    Done,
    /// The stored version was not the expected one; this is what is stored now.
    Stale(Box<KillSwitches>),
}

/// Commits [`change`] on its own (the three-step path: a key already claimed, or none).
pub async fn commit(
    store: &Store,
    next: &KillSwitches,
    expected: u64,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Commit, StoreError> {
    let writes = change(store, next, expected, audit_item, now, ttl_days)?;
    // Conflicts (two admins at once) and throttles are retried by `transact`; what is left
    // is done, or refused by a condition.
    let outcome = writes.commit(store).await?;
    let Some(refusal) = outcome.into_refusals().into_iter().next() else {
        return Ok(Commit::Done);
    };
    let current = match (refusal.index, refusal.item()) {
        (0, None) => load(store, now).await?,
        _ => refused(store, &refusal, now)?,
    };
    // Exactly our change, stored: an earlier attempt of it was applied and only its answer
    // was lost.
    if current == *next {
        Ok(Commit::Done)
    } else {
        Ok(Commit::Stale(Box::new(current)))
    }
}

#[derive(serde::Serialize)]
struct Marker<'a> {
    pk: &'a str,
    set_at: String,
    /// Each caller's own: two callers at the same moment write different markers, so only
    /// the one whose write was applied counts it as set (a lost answer included).
    nonce: String,
    expires_at: i64,
}

/// Sets a one-time marker in the settings table; true only for the caller that set it.
pub async fn mark_once(store: &Store, name: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let marker = Marker {
        pk: name,
        set_at: now.to_rfc3339(),
        nonce: crate::server::ids::random_hex(8),
        expires_at: (now + chrono::Duration::days(3650)).timestamp(),
    };
    super::item::put_if_absent(store, SETTINGS.base, "pk", &marker, now).await
}
