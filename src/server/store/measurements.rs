//! `measurements-<env>` (design doc 5): per user, the accepted measurements
//! (`USER#<id>` / `MEAS#<timestamp>#<measurement_id>`), their idempotency records
//! (`IDEMP#<measurement_id>`), the ordering state (`ORDER`), and an audit record of every
//! attempt (`AUDIT#<time>#<attempt_id>`, also in the sparse `outcome-index`); hourly
//! counters under `STATS`. An acceptance writes its idempotency record, the moved ordering
//! state, the measurement, its audit and the counters in one transaction.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};

use super::items::{n, s};
use super::query::{self, Cond, Spec, Start};
use super::schema::{MEASUREMENTS, MEASUREMENTS_BY_OUTCOME};
use super::{Store, StoreError};

pub const OUTCOMES: &[&str] = &[
    "accepted",
    "duplicate",
    "conflict",
    "out_of_order",
    "invalid",
    "override",
    "skipped",
];

pub fn user_pk(user: &str) -> String {
    format!("USER#{user}")
}

/// What the payload hash covers, normalized (kg with 2 decimals, UTC, lower-case source).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    pub weight_kg: String,
    pub timestamp: String,
    pub unit: String,
    pub source: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdempItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub measurement_id: String,
    pub payload_hash: String,
    pub payload: Payload,
    /// The answer the first submission got, as its JSON text: replayed byte for byte
    /// (a map would bring `70.0` back as `70`).
    pub result: String,
    pub processed_at: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OrderItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub last_accepted: String,
    pub last_measurement_id: String,
    /// Moves by one with every acceptance: the check-and-move is conditioned on it.
    pub version: i64,
    pub updated_at: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub measurement_id: String,
    pub user_id: String,
    pub weight_kg: f64,
    pub weight: f64,
    pub unit: String,
    pub timestamp: String,
    pub source: String,
    pub received_at: String,
    /// The ordering version this acceptance made (0: ordering off or an override).
    pub seq: i64,
    #[serde(rename = "override")]
    pub overridden: bool,
    pub correlation_id: String,
    pub ttl: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditItem {
    #[serde(rename = "PK")]
    pub pk: String,
    #[serde(rename = "SK")]
    pub sk: String,
    pub user_id: String,
    pub measurement_id: String,
    /// One of [`OUTCOMES`].
    pub action: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    pub correlation_id: String,
    pub at: String,
    /// The outcome index's key (same as `action`).
    pub audit_outcome: String,
    pub ttl: i64,
}

fn table(store: &Store) -> String {
    store.table(MEASUREMENTS.base)
}

fn to_item<T: Serialize>(
    store: &Store,
    v: &T,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    serde_dynamo::to_item(v).map_err(|e| StoreError::corrupt(&table(store), e))
}

fn from_item<T: serde::de::DeserializeOwned>(
    store: &Store,
    v: HashMap<String, AttributeValue>,
) -> Result<T, StoreError> {
    serde_dynamo::from_item(v).map_err(|e| StoreError::corrupt(&table(store), e))
}

/// A condition on a write, with the names and values it uses.
struct Condition<'a> {
    expr: &'a str,
    names: Vec<(&'a str, &'a str)>,
    values: Vec<(&'a str, AttributeValue)>,
}

fn put(
    store: &Store,
    item: HashMap<String, AttributeValue>,
    condition: Option<Condition<'_>>,
) -> Result<TransactWriteItem, StoreError> {
    let mut p = Put::builder().table_name(table(store)).set_item(Some(item));
    if let Some(c) = condition {
        p = p
            .condition_expression(c.expr)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (k, v) in c.names {
            p = p.expression_attribute_names(k, v);
        }
        for (k, v) in c.values {
            p = p.expression_attribute_values(k, v);
        }
    }
    Ok(TransactWriteItem::builder()
        .put(
            p.build()
                .map_err(|e| StoreError::corrupt("measurement put", e))?,
        )
        .build())
}

fn count(
    store: &Store,
    hour: &str,
    outcome: &str,
    keep_until: i64,
) -> Result<TransactWriteItem, StoreError> {
    let u = Update::builder()
        .table_name(table(store))
        .key("PK", s("STATS"))
        .key("SK", s(hour))
        .update_expression("ADD attempts :one, #o :one SET #t = :keep")
        .expression_attribute_names("#o", outcome)
        .expression_attribute_names("#t", "ttl")
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":keep", n(keep_until))
        .build()
        .map_err(|e| StoreError::corrupt("measurement stats", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// The ordering state and the idempotency record of one measurement id, in one request.
pub async fn read_state(
    store: &Store,
    user: &str,
    measurement_id: &str,
) -> Result<(Option<OrderItem>, Option<IdempItem>), StoreError> {
    let pk = user_pk(user);
    let key = |sk: String| HashMap::from([("PK".to_string(), s(&pk)), ("SK".to_string(), s(sk))]);
    let keys = vec![key("ORDER".into()), key(format!("IDEMP#{measurement_id}"))];
    let (mut order, mut idemp) = (None, None);
    for item in super::items::batch_get(store, MEASUREMENTS.base, keys).await? {
        match item
            .get("SK")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
        {
            Some("ORDER") => order = Some(from_item(store, item)?),
            Some(_) => idemp = Some(from_item(store, item)?),
            None => {}
        }
    }
    Ok((order, idemp))
}

/// One acceptance: what to write, and what it is conditioned on.
pub struct Acceptance<'a> {
    /// `None` when idempotency is off.
    pub idemp: Option<&'a IdempItem>,
    /// The new ordering state and the version it replaces (`None`: there was none); `None`
    /// when ordering is off or this is an override.
    pub order: Option<(&'a OrderItem, Option<i64>)>,
    pub measurement: &'a MeasurementItem,
    pub audit: &'a AuditItem,
    pub hour: &'a str,
    pub now_s: i64,
    pub keep_until: i64,
}

pub enum Accepted {
    Done,
    /// The measurement id was recorded meanwhile (a concurrent submission).
    Exists(Box<IdempItem>),
    /// Another acceptance moved the ordering state: read it again.
    OrderMoved,
    /// Another transaction held an item: try again.
    Busy,
}

pub async fn accept(store: &Store, a: &Acceptance<'_>) -> Result<Accepted, StoreError> {
    let mut actions = Vec::new();
    let mut idemp_at = None;
    let mut order_at = None;
    if let Some(i) = a.idemp {
        idemp_at = Some(actions.len());
        // An expired record counts as absent, even before TTL removes it.
        let cond = Condition {
            expr: "attribute_not_exists(SK) OR #ttl <= :now",
            names: vec![("#ttl", "ttl")],
            values: vec![(":now", n(a.now_s))],
        };
        actions.push(put(store, to_item(store, i)?, Some(cond))?);
    }
    if let Some((o, expected)) = a.order {
        order_at = Some(actions.len());
        let cond = match expected {
            Some(v) => Condition {
                expr: "version = :v",
                names: vec![],
                values: vec![(":v", n(v))],
            },
            None => Condition {
                expr: "attribute_not_exists(SK)",
                names: vec![],
                values: vec![],
            },
        };
        actions.push(put(store, to_item(store, o)?, Some(cond))?);
    }
    actions.push(put(store, to_item(store, a.measurement)?, None)?);
    actions.push(put(store, to_item(store, a.audit)?, None)?);
    actions.push(count(store, a.hour, &a.audit.action, a.keep_until)?);
    let result = store
        .client()
        .transact_write_items()
        .set_transact_items(Some(actions))
        .send()
        .await;
    let e = match result {
        Ok(_) => return Ok(Accepted::Done),
        Err(e) => e.into_service_error(),
    };
    let TransactWriteItemsError::TransactionCanceledException(c) = &e else {
        return Err(StoreError::service("TransactWriteItems", &e));
    };
    let reasons = c.cancellation_reasons();
    let failed = |i: Option<usize>| {
        i.and_then(|i| reasons.get(i))
            .filter(|r| r.code() == Some("ConditionalCheckFailed"))
    };
    if let Some(r) = failed(idemp_at) {
        if let Some(item) = r.item.clone() {
            return Ok(Accepted::Exists(Box::new(from_item(store, item)?)));
        }
    }
    if failed(order_at).is_some() {
        return Ok(Accepted::OrderMoved);
    }
    if reasons
        .iter()
        .any(|r| r.code() == Some("TransactionConflict"))
    {
        return Ok(Accepted::Busy);
    }
    Err(StoreError::service("TransactWriteItems", &e))
}

/// An attempt that stored nothing else: its audit record and the counters.
pub async fn record_attempt(
    store: &Store,
    audit: &AuditItem,
    hour: &str,
    keep_until: i64,
) -> Result<(), StoreError> {
    store
        .client()
        .transact_write_items()
        .transact_items(put(store, to_item(store, audit)?, None)?)
        .transact_items(count(store, hour, &audit.action, keep_until)?)
        .send()
        .await
        .map_err(StoreError::request("TransactWriteItems"))?;
    Ok(())
}

/// A user's audit records (of one outcome, or all), newest first.
pub async fn audits_of_user(
    store: &Store,
    user: &str,
    outcome: Option<&str>,
    start: Start<'_>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>, Option<String>), StoreError> {
    let spec = Spec {
        table: table(store),
        index: None,
        pk: ("PK", s(user_pk(user))),
        sk: Some(("SK", Cond::BeginsWith("AUDIT#".into()))),
        filters: outcome
            .map(|o| vec![("action", Cond::Eq(s(o)))])
            .unwrap_or_default(),
        ascending: false,
        key_attrs: vec!["PK", "SK"],
        projection: None,
    };
    page(store, &spec, start, size).await
}

/// Every user's audit records of one outcome, newest first.
pub async fn audits_by_outcome(
    store: &Store,
    outcome: &str,
    start: Start<'_>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>, Option<String>), StoreError> {
    let spec = Spec {
        table: table(store),
        index: Some(MEASUREMENTS_BY_OUTCOME),
        pk: ("audit_outcome", s(outcome)),
        sk: None,
        filters: vec![],
        ascending: false,
        key_attrs: vec!["PK", "SK", "audit_outcome"],
        projection: None,
    };
    page(store, &spec, start, size).await
}

async fn page<T: serde::de::DeserializeOwned>(
    store: &Store,
    spec: &Spec,
    start: Start<'_>,
    size: usize,
) -> Result<(Vec<T>, Option<String>, Option<String>), StoreError> {
    let p = query::page(store, spec, start, size).await?;
    let items = p
        .items
        .into_iter()
        .map(|i| from_item(store, i))
        .collect::<Result<_, _>>()?;
    Ok((items, p.next, p.prev))
}

/// A user's newest `limit` measurements, oldest first.
pub async fn measurements_of_user(
    store: &Store,
    user: &str,
    limit: usize,
) -> Result<Vec<MeasurementItem>, StoreError> {
    let spec = Spec {
        table: table(store),
        index: None,
        pk: ("PK", s(user_pk(user))),
        sk: Some(("SK", Cond::BeginsWith("MEAS#".into()))),
        filters: vec![],
        ascending: false,
        key_attrs: vec!["PK", "SK"],
        projection: None,
    };
    let (mut items, _, _): (Vec<MeasurementItem>, _, _) =
        page(store, &spec, Start::First, limit).await?;
    items.reverse();
    Ok(items)
}

/// Hourly counters between two hours (`YYYY-MM-DDTHH`), inclusive.
pub async fn stats(
    store: &Store,
    from_hour: &str,
    to_hour: &str,
) -> Result<Vec<(String, HashMap<String, i64>)>, StoreError> {
    let out = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("PK = :pk AND SK BETWEEN :a AND :b")
        .expression_attribute_values(":pk", s("STATS"))
        .expression_attribute_values(":a", s(from_hour))
        .expression_attribute_values(":b", s(to_hour))
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    Ok(out
        .items
        .unwrap_or_default()
        .into_iter()
        .filter_map(|item| {
            let hour = item.get("SK")?.as_s().ok()?.clone();
            let counts = item
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_n().ok()?.parse().ok()?)))
                .collect();
            Some((hour, counts))
        })
        .collect())
}
