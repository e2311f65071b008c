//! `rp_mw_audit_actions-<env>` (docs/data-model.md, "rp_mw_audit_actions (Table C)"): what
//! was done, by whom, why, with redacted payloads only. Every read is a `Query` through the
//! shared helper in [`super::query`].

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::fanout;
use super::query::{self, Cond, Spec, Start};
use super::schema::{AUDIT_BY_DAY_INDEX, AUDIT_BY_TYPE_INDEX, MW_AUDIT_ACTIONS};
use super::{Store, StoreError};

/// The key attributes of the table: a cursor within one partition is made of these.
const TABLE_KEY: [&str; 2] = ["conversation_id", "ts_action_id"];

/// Shards of one day's audit records in `audit-day-index` (docs/dynamodb.md, "No hot
/// partition key"): about three records an event, 30,000 a second at 10,000 events a
/// second, each copy a unit or more; 64 partitions take 64,000 units a second.
pub const AUDIT_DAY_SHARDS: u32 = 64;

/// Shards of one action type's records in `action-type-index`: the busiest types
/// (`decision`, `route`) take about one record an event each, 10,000 a second at 10,000
/// events a second, each copy a unit or more; 32 partitions take 32,000 units a second.
/// Stored in `action_type` itself (`decision#07`), as the day is in `audit_day`: the
/// release before reads any string there, so its consoles keep answering through a
/// rolling deployment; until they are replaced, their by-type lists and filters (the
/// kill-switch history, the reveal check) find only their own records, and other lists
/// show the type with its shard (docs/data-model.md).
pub const AUDIT_TYPE_SHARDS: u32 = 32;

/// Records one counting read of a day's shard looks at, at most.
pub const COUNT_PER_CALL: i32 = 100;

/// One audit record as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditItem {
    /// The conversation, or `system#<area>` for console-level changes.
    pub conversation_id: String,
    /// `<RFC 3339 ms timestamp>#<action id>`: sorts by time within a partition.
    pub ts_action_id: String,
    /// The action type (`decision`); stored with its shard (`decision#07`, see
    /// [`AUDIT_TYPE_SHARDS`]) by [`put_once`], read back without it.
    pub action_type: String,
    /// Small JSON, already redacted.
    pub action_payload_redacted: String,
    pub idempotency_key: String,
    /// `success`, `fail: <reason>`, `suppressed: safe_mode`, ...
    pub result: String,
    /// The signed-in user, API key name, or `system`.
    pub actor: String,
    /// `YYYY-MM-DD#NN`: partition of the by-day index, one of the day's
    /// [`AUDIT_DAY_SHARDS`] (`YYYY-MM-DD` from the release before).
    pub audit_day: String,
    pub expires_at: i64,
}

impl AuditItem {
    pub fn new(
        partition: &str,
        action_type: &str,
        at: DateTime<Utc>,
        action_id: &str,
        ttl_days: i64,
    ) -> AuditItem {
        let ts_action_id = format!("{}#{}", crate::server::clock::iso(at), action_id);
        let day = at.format("%Y-%m-%d").to_string();
        AuditItem {
            audit_day: fanout::key(
                &day,
                &format!("{partition}|{ts_action_id}"),
                AUDIT_DAY_SHARDS,
            ),
            conversation_id: partition.to_string(),
            ts_action_id,
            action_type: action_type.to_string(),
            action_payload_redacted: "{}".into(),
            idempotency_key: String::new(),
            result: "success".into(),
            actor: "system".into(),
            expires_at: (at + chrono::Duration::days(ttl_days)).timestamp(),
        }
    }

    /// When the action happened, from the sort key.
    pub fn at(&self) -> Option<DateTime<Utc>> {
        let ts = self.ts_action_id.split('#').next()?;
        DateTime::parse_from_rfc3339(ts)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }
}

pub struct AuditPage {
    pub items: Vec<AuditItem>,
    pub next_cursor: Option<String>,
}

/// The stored `action_type` of `item`: its type and its shard, `<type>#NN`. The shard
/// follows the record's key, so every write of one record lands on the same one.
fn stored_type(item: &AuditItem) -> String {
    fanout::key(
        &item.action_type,
        &format!("{}|{}", item.conversation_id, item.ts_action_id),
        AUDIT_TYPE_SHARDS,
    )
}

/// An action type as read from `action_type`: without its shard (`decision#07`, or
/// `decision` as the release before wrote it, is `decision`). Action types never hold
/// a `#`.
pub fn type_of(stored: &str) -> &str {
    stored.split_once('#').map_or(stored, |(t, _)| t)
}

/// A filter on `action_type` for `t`, sharded or not: from `t` to `t#~`. Action types
/// are lowercase words and `_`, all above `#`, so no other type falls between.
fn type_filter(t: &str) -> (&'static str, Cond) {
    let s = |v: &str| AttributeValue::S(v.to_string());
    ("action_type", Cond::Between(s(t), s(&format!("{t}#~"))))
}

/// A stored record decoded, its action type without its shard.
fn decode(store: &Store, item: query::Item) -> Result<AuditItem, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let mut a: AuditItem = super::item::decode(item, &table)?;
    a.action_type = type_of(&a.action_type).to_string();
    Ok(a)
}

/// Every record, each as JSON with its action type without its shard: a consistent Scan,
/// for operator tools and the harness's checks, never for a page.
pub async fn scan_json(store: &Store) -> Result<Vec<serde_json::Value>, StoreError> {
    let mut all = super::many::scan_json(store, MW_AUDIT_ACTIONS.base).await?;
    for a in &mut all {
        if let Some(t) = a["action_type"].as_str() {
            a["action_type"] = serde_json::Value::String(type_of(t).to_string());
        }
    }
    Ok(all)
}

/// A transaction part that writes `item` once: a second write of the same id fails.
pub(crate) fn put_once(store: &Store, item: &AuditItem) -> Result<Put, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let mut av: query::Item =
        serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
    av.insert("action_type".into(), AttributeValue::S(stored_type(item)));
    Put::builder()
        .table_name(table)
        .set_item(Some(av))
        .condition_expression("attribute_not_exists(ts_action_id)")
        .build()
        .map_err(|e| StoreError::corrupt("audit put", e))
}

/// The same, as one action of a transaction that writes something else with its record.
pub(crate) fn write_once(store: &Store, item: &AuditItem) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .put(put_once(store, item)?)
        .build())
}

/// The record as [`super::tx::Writes`] of its own, for a caller that commits it with
/// something else (the idempotency engine's one-request path).
pub fn writes(store: &Store, item: &AuditItem) -> Result<super::tx::Writes, StoreError> {
    Ok(super::tx::Writes::new(vec![write_once(store, item)?]))
}

/// Writes `write` and its audit record in one transaction. False: `write`'s condition
/// failed. A refusal by the audit record alone (its id derives from the change) means this
/// very change was made before and only its answer was lost: true.
pub(crate) async fn with_record(
    store: &Store,
    write: TransactWriteItem,
    record: &AuditItem,
) -> Result<bool, StoreError> {
    let outcome = super::tx::transact(store, vec![write, write_once(store, record)?]).await?;
    Ok(outcome.refused_at(0).is_none())
}

/// Puts `stored` (a settings-like item keyed `pk`, carrying `version` and `expires_at`)
/// with its audit record, in one transaction, only if the stored version is still
/// `expected` (0: none, or expired). False: it was not.
pub async fn put_versioned<T: serde::Serialize>(
    store: &Store,
    base: &str,
    stored: &T,
    expected: u64,
    record: &AuditItem,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, StoreError> {
    let write = versioned_put(store, base, stored, expected, now)?;
    with_record(store, write, record).await
}

/// The put of [`put_versioned`] alone, for a caller that commits it with other writes.
pub(crate) fn versioned_put<T: serde::Serialize>(
    store: &Store,
    base: &str,
    stored: &T,
    expected: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<TransactWriteItem, StoreError> {
    let table = store.table(base);
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(
            serde_dynamo::to_item(stored).map_err(|e| StoreError::corrupt(&table, e))?,
        ))
        .expression_attribute_values(":now", super::item::n(now.timestamp()));
    let put = if expected == 0 {
        put.condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
    } else {
        put.condition_expression("version = :v AND expires_at > :now")
            .expression_attribute_values(":v", super::item::n(expected))
    };
    let put = put.build().map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// Newest first, one partition (a conversation, or `system#...`); `cursor` is a page's
/// `next_cursor`.
pub async fn list_partition(
    store: &Store,
    partition: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<AuditPage, StoreError> {
    let q = AuditQuery {
        partition: Some(partition),
        ..AuditQuery::default()
    };
    let size = usize::try_from(limit).unwrap_or(1);
    let (items, next_cursor) = list(store, &q, cursor, size).await?;
    Ok(AuditPage { items, next_cursor })
}

/// Writes one audit record on its own (when there is no other write to pair it with).
/// Its id is unique to this record, so finding it already there means an earlier attempt
/// of this write was applied (its answer was lost): done, not an error.
pub async fn put(store: &Store, item: &AuditItem) -> Result<(), StoreError> {
    let p = put_once(store, item)?;
    super::tx::retrying(|| async {
        let result = store
            .client()
            .put_item()
            .table_name(p.table_name())
            .set_item(Some(p.item().clone()))
            .condition_expression("attribute_not_exists(ts_action_id)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(()),
                other => Err(StoreError::service("PutItem", &other)),
            },
        }
    })
    .await
}

/// Which audit records to list: at most one of `partition`, then `action_type`, then `day`
/// picks the partition (of the table or of an index); the others narrow it.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery<'a> {
    pub partition: Option<&'a str>,
    pub action_type: Option<&'a str>,
    pub day: Option<&'a str>,
    /// RFC 3339 bounds on the record's time (both inclusive).
    pub between: Option<(&'a str, &'a str)>,
    /// Partitions whose records are left out (those the reader may not see).
    pub hidden: &'a [&'a str],
}

/// Newest first, every filter applied together: a `Query` of the narrowest partition,
/// with the time range on the sort key and the rest as filters; by action type, the
/// type's shards of `action-type-index` merged (and the unsharded type of the release
/// before). `cursor` is a page's `next`. By day (no partition and no action type), see
/// [`list_day`].
pub async fn list(
    store: &Store,
    q: &AuditQuery<'_>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>), StoreError> {
    let spec = spec_of(store, q);
    let (Some(t), None) = (q.action_type, q.partition) else {
        let page = query::page(
            store,
            &spec,
            cursor.map_or(Start::First, Start::After),
            size,
        )
        .await?;
        return Ok((decode_all(store, page.items)?, page.next));
    };
    let shards: Vec<fanout::Shard> = fanout::keys(t, AUDIT_TYPE_SHARDS)
        .into_iter()
        .map(|(id, key)| {
            let mut spec = spec.clone();
            spec.pk = ("action_type", AttributeValue::S(key));
            fanout::Shard::new(id, spec)
        })
        .collect();
    let page = fanout::page(
        store,
        &shards,
        "ts_action_id",
        &spec.binding(),
        cursor,
        size,
    )
    .await?;
    let items = page.items.into_iter().map(|(_, i)| i).collect();
    Ok((decode_all(store, items)?, page.next))
}

/// One day's records (`q.day`), newest first, across the day's shards of
/// `audit-day-index` (and the unsharded day of the release before), merged under one
/// sealed cursor.
pub async fn list_day(
    store: &Store,
    q: &AuditQuery<'_>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>), StoreError> {
    let day = q.day.unwrap_or_default();
    let unsharded = spec_of(store, q);
    let shards: Vec<fanout::Shard> = fanout::keys(day, AUDIT_DAY_SHARDS)
        .into_iter()
        .map(|(id, key)| {
            let mut spec = spec_of(store, q);
            spec.pk = ("audit_day", AttributeValue::S(key));
            fanout::Shard::new(id, spec)
        })
        .collect();
    let binding = unsharded.binding();
    let page = fanout::page(store, &shards, "ts_action_id", &binding, cursor, size).await?;
    let items = page.items.into_iter().map(|(_, i)| i).collect();
    Ok((decode_all(store, items)?, page.next))
}

fn decode_all(store: &Store, items: Vec<query::Item>) -> Result<Vec<AuditItem>, StoreError> {
    items.into_iter().map(|i| decode(store, i)).collect()
}

/// The query of `q`'s narrowest partition: a conversation's, an action type's, or a day's
/// (unsharded: [`list`] and [`list_day`] give each shard its own partition key).
fn spec_of(store: &Store, q: &AuditQuery<'_>) -> Spec {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let range = q
        .between
        // Every id at `to` sorts below `to` + '~'.
        .map(|(from, to)| Cond::Between(s(from), s(&format!("{to}~"))))
        .or_else(|| q.day.map(|d| Cond::BeginsWith(d.to_string())));
    let mut filters = Vec::new();
    if q.partition.is_none() {
        for p in q.hidden {
            filters.push(("conversation_id", Cond::Ne(s(p))));
        }
    }
    let (index, pk, key_attrs) = if let Some(p) = q.partition {
        if let Some(t) = q.action_type {
            filters.push(type_filter(t));
        }
        (None, ("conversation_id", s(p)), TABLE_KEY.to_vec())
    } else if let Some(t) = q.action_type {
        (
            Some(AUDIT_BY_TYPE_INDEX),
            ("action_type", s(t)),
            vec!["conversation_id", "ts_action_id", "action_type"],
        )
    } else {
        let day = q.day.unwrap_or_default();
        (
            Some(AUDIT_BY_DAY_INDEX),
            ("audit_day", s(day)),
            vec!["conversation_id", "ts_action_id", "audit_day"],
        )
    };
    Spec {
        table: store.table(MW_AUDIT_ACTIONS.base),
        index,
        pk,
        sk: range.map(|r| ("ts_action_id", r)),
        filters,
        ascending: false,
        key_attrs,
        projection: None,
    }
}

/// Newest first across by-day index partitions (`days`, newest first), the time range and
/// filters of `q` on each: one page, filled from the next day when a day runs out. The
/// cursor says which day it is in: `<i>.<that day's cursor>` (`<i>.` for its start).
pub async fn list_days(
    store: &Store,
    q: &AuditQuery<'_>,
    days: &[String],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>), StoreError> {
    let (mut i, mut inner) = match cursor {
        None => (0, None),
        Some(c) => {
            let (i, rest) = c.split_once('.').ok_or(StoreError::BadCursor)?;
            let i = i
                .parse::<usize>()
                .ok()
                .filter(|i| *i < days.len())
                .ok_or(StoreError::BadCursor)?;
            (i, Some(rest).filter(|r| !r.is_empty()))
        }
    };
    let mut out = Vec::new();
    while i < days.len() {
        let on_day = AuditQuery {
            day: Some(&days[i]),
            ..q.clone()
        };
        // A full page only asks whether the next day has anything at all.
        let want = size.saturating_sub(out.len()).max(1);
        let (items, next) = list_day(store, &on_day, inner, want).await?;
        if out.len() >= size {
            let more = !items.is_empty() || next.is_some();
            return Ok((out, more.then(|| format!("{i}."))));
        }
        out.extend(items);
        if let Some(n) = next {
            return Ok((out, Some(format!("{i}.{n}"))));
        }
        i += 1;
        inner = None;
    }
    Ok((out, None))
}

/// How many of one day's records have a result starting with `prefix`, in at most
/// `max_calls` counting reads of each of the day's shards (each of at most
/// [`COUNT_PER_CALL`] records, newest first), all at once; `exact` is false when a shard's
/// count stopped before its end.
pub async fn count_day_results(
    store: &Store,
    day: &str,
    prefix: &str,
    max_calls: usize,
) -> Result<query::Count, StoreError> {
    let counts = fanout::keys(day, AUDIT_DAY_SHARDS)
        .into_iter()
        .map(|(_, key)| {
            let spec = Spec {
                table: store.table(MW_AUDIT_ACTIONS.base),
                index: Some(AUDIT_BY_DAY_INDEX),
                pk: ("audit_day", AttributeValue::S(key)),
                sk: None,
                filters: vec![("result", Cond::BeginsWith(prefix.to_string()))],
                ascending: false,
                key_attrs: vec!["conversation_id", "ts_action_id", "audit_day"],
                projection: None,
            };
            async move { query::count(store, &spec, max_calls, Some(COUNT_PER_CALL)).await }
        });
    let mut total = query::Count { n: 0, exact: true };
    for c in futures_util::future::try_join_all(counts).await? {
        total.n += c.n;
        total.exact &= c.exact;
    }
    Ok(total)
}

/// When `actor` last did `action_type` in `partition` at or after `since`, if they did (a
/// Query of the partition's newest records, never a Scan). A reveal check needs no more
/// than the last few minutes of one conversation.
pub async fn last_since(
    store: &Store,
    partition: &str,
    action_type: &str,
    actor: &str,
    since: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let since = crate::server::clock::iso(since);
    let spec = Spec {
        table: store.table(MW_AUDIT_ACTIONS.base),
        index: None,
        pk: ("conversation_id", s(partition)),
        // "At or after": every sort key starts with a digit, so none sorts above "~".
        sk: Some(("ts_action_id", Cond::Between(s(&since), s("~")))),
        filters: vec![type_filter(action_type), ("actor", Cond::Eq(s(actor)))],
        ascending: false,
        key_attrs: TABLE_KEY.to_vec(),
        projection: None,
    };
    let page = query::page(store, &spec, Start::First, 1).await?;
    match page.items.into_iter().next() {
        Some(item) => Ok(decode(store, item)?.at()),
        None => Ok(None),
    }
}
