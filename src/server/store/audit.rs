//! `rp_mw_audit_actions-<env>` (design doc 1, Table C): what was done, by whom, why, with
//! redacted payloads only.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, Put};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::schema::MW_AUDIT_ACTIONS;
use super::{cursor, Store, StoreError};

/// One audit record as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditItem {
    /// The conversation, or `system#<area>` for console-level changes.
    pub conversation_id: String,
    /// `<RFC 3339 ms timestamp>#<action id>`: sorts by time within a partition.
    pub ts_action_id: String,
    pub action_type: String,
    /// Small JSON, already redacted.
    pub action_payload_redacted: String,
    pub idempotency_key: String,
    /// `success`, `fail: <reason>`, `suppressed: safe_mode`, ...
    pub result: String,
    /// The signed-in user, API key name, or `system`.
    pub actor: String,
    /// `YYYY-MM-DD`: partition of the by-day index.
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
        AuditItem {
            conversation_id: partition.to_string(),
            ts_action_id: format!(
                "{}#{}",
                at.to_rfc3339_opts(SecondsFormat::Millis, true),
                action_id
            ),
            action_type: action_type.to_string(),
            action_payload_redacted: "{}".into(),
            idempotency_key: String::new(),
            result: "success".into(),
            actor: "system".into(),
            audit_day: at.format("%Y-%m-%d").to_string(),
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

/// A transaction part that writes `item` once: a second write of the same id fails.
pub(crate) fn put_once(store: &Store, item: &AuditItem) -> Result<Put, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let av = serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
    Put::builder()
        .table_name(table)
        .set_item(Some(av))
        .condition_expression("attribute_not_exists(ts_action_id)")
        .build()
        .map_err(|e| StoreError::corrupt("audit put", e))
}

/// Newest first, one partition (a conversation, or `system#...`).
pub async fn list_partition(
    store: &Store,
    partition: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<AuditPage, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let start = cursor
        .map(|c| cursor::decode(c, &["conversation_id", "ts_action_id"]))
        .transpose()?;
    let out = store
        .client()
        .query()
        .table_name(&table)
        .key_condition_expression("conversation_id = :p")
        .expression_attribute_values(":p", AttributeValue::S(partition.to_string()))
        .scan_index_forward(false)
        .limit(limit)
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    page(&table, out.items, out.last_evaluated_key.as_ref())
}

fn page(
    table: &str,
    items: Option<Vec<HashMap<String, AttributeValue>>>,
    last: Option<&HashMap<String, AttributeValue>>,
) -> Result<AuditPage, StoreError> {
    let items = items
        .unwrap_or_default()
        .into_iter()
        .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::corrupt(table, e)))
        .collect::<Result<Vec<AuditItem>, _>>()?;
    Ok(AuditPage {
        items,
        next_cursor: cursor::next(last),
    })
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
}

/// Newest first, every filter applied together: one `Query` of the narrowest partition,
/// with the time range on the sort key and the rest as filters.
pub async fn list(
    store: &Store,
    q: &AuditQuery<'_>,
    start: super::query::Start<'_>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>), StoreError> {
    use super::query::{Cond, Spec};
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let s = |v: &str| AttributeValue::S(v.to_string());
    let range = q
        .between
        // Every id at `to` sorts below `to` + '~'.
        .map(|(from, to)| Cond::Between(s(from), s(&format!("{to}~"))))
        .or_else(|| q.day.map(|d| Cond::BeginsWith(d.to_string())));
    let mut filters = Vec::new();
    let (index, pk, key_attrs) = if let Some(p) = q.partition {
        if let Some(t) = q.action_type {
            filters.push(("action_type", Cond::Eq(s(t))));
        }
        (
            None,
            ("conversation_id", s(p)),
            vec!["conversation_id", "ts_action_id"],
        )
    } else if let Some(t) = q.action_type {
        (
            Some(super::schema::AUDIT_BY_TYPE_INDEX),
            ("action_type", s(t)),
            vec!["conversation_id", "ts_action_id", "action_type"],
        )
    } else {
        let day = q.day.unwrap_or_default();
        (
            Some(super::schema::AUDIT_BY_DAY_INDEX),
            ("audit_day", s(day)),
            vec!["conversation_id", "ts_action_id", "audit_day"],
        )
    };
    let spec = Spec {
        table: table.clone(),
        index,
        pk,
        sk: range.map(|r| ("ts_action_id", r)),
        filters,
        ascending: false,
        key_attrs,
        projection: None,
    };
    let page = super::query::page(store, &spec, start, size).await?;
    let items = page
        .items
        .into_iter()
        .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::corrupt(&table, e)))
        .collect::<Result<Vec<AuditItem>, _>>()?;
    Ok((items, page.next))
}

/// How many of one day's records have a result starting with `prefix`.
pub async fn count_day_results(store: &Store, day: &str, prefix: &str) -> Result<u64, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let mut total = 0u64;
    let mut start = None;
    loop {
        let out = store
            .client()
            .query()
            .table_name(&table)
            .index_name(super::schema::AUDIT_BY_DAY_INDEX)
            .key_condition_expression("audit_day = :d")
            .filter_expression("begins_with(#r, :p)")
            .expression_attribute_names("#r", "result")
            .expression_attribute_values(":d", AttributeValue::S(day.to_string()))
            .expression_attribute_values(":p", AttributeValue::S(prefix.to_string()))
            .select(aws_sdk_dynamodb::types::Select::Count)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        total += out.count.max(0) as u64;
        match out.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return Ok(total),
        }
    }
}

/// Whether `actor` did `action_type` in `partition` at or after `since` (a Query of the
/// partition's newest records, never a Scan).
pub async fn done_since(
    store: &Store,
    partition: &str,
    action_type: &str,
    actor: &str,
    since: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let table = store.table(MW_AUDIT_ACTIONS.base);
    let out = store
        .client()
        .query()
        .table_name(&table)
        .key_condition_expression("conversation_id = :p AND ts_action_id >= :since")
        .filter_expression("action_type = :t AND actor = :a")
        .expression_attribute_values(":p", AttributeValue::S(partition.to_string()))
        .expression_attribute_values(
            ":since",
            AttributeValue::S(since.to_rfc3339_opts(SecondsFormat::Millis, true)),
        )
        .expression_attribute_values(":t", AttributeValue::S(action_type.to_string()))
        .expression_attribute_values(":a", AttributeValue::S(actor.to_string()))
        .select(aws_sdk_dynamodb::types::Select::Count)
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    Ok(out.count > 0)
}
