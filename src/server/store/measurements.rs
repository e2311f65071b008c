//! `measurements-<env>` (design doc 5): per user, the accepted measurements
//! (`USER#<id>` / `MEAS#<timestamp>#<measurement_id>`), their idempotency records
//! (`IDEMP#<measurement_id>`), the ordering state (`ORDER`), and an audit record of every
//! attempt (`AUDIT#<time>#<attempt_id>`, also in the sparse `outcome-index`); hourly
//! counters in `STATS_SHARDS` shards (`STATS#<n>` / `<hour>`). An acceptance writes its
//! idempotency record, the moved ordering state, the measurement, its audit and one
//! counter shard in one transaction.
//!
//! Why shards: every attempt of every user counts, and on AWS one counter item written by
//! all of them would be a conflict magnet (a transaction is cancelled when another holds
//! one of its items) and a throttled hot item. Each transaction counts in a shard picked
//! at random, so concurrent users rarely meet, and the hour's total is the sum of the
//! shards: exact, because each count is written in the transaction that records the
//! attempt.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};

use super::items::{n, s};
use super::query::{self, Cond, Spec, Start};
use super::schema::{MEASUREMENTS, MEASUREMENTS_BY_OUTCOME};
use super::tx::{self, Outcome};
use super::{Store, StoreError};

/// How many items the hourly counters are spread over.
pub const STATS_SHARDS: u32 = 16;

pub fn stats_pk(shard: u32) -> String {
    format!("STATS#{shard:02}")
}

fn random_shard() -> u32 {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_or(0, |_| u32::from_le_bytes(b) % STATS_SHARDS)
}

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
        .key("PK", s(stats_pk(random_shard())))
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
    let outcome = tx::transact(store, actions).await?;
    if let Some(Some(item)) = idemp_at.and_then(|i| outcome.refused_at(i)) {
        return Ok(Accepted::Exists(Box::new(from_item(store, item.clone())?)));
    }
    if order_at.and_then(|i| outcome.refused_at(i)).is_some() {
        return Ok(Accepted::OrderMoved);
    }
    match outcome {
        Outcome::Done => Ok(Accepted::Done),
        Outcome::Refused(r) => Err(StoreError::corrupt(
            &table(store),
            format!("acceptance refused by an unconditioned action: {r:?}"),
        )),
    }
}

/// An attempt that stored nothing else: its audit record and the counters.
pub async fn record_attempt(
    store: &Store,
    audit: &AuditItem,
    hour: &str,
    keep_until: i64,
) -> Result<(), StoreError> {
    let actions = vec![
        put(store, to_item(store, audit)?, None)?,
        count(store, hour, &audit.action, keep_until)?,
    ];
    match tx::transact(store, actions).await? {
        Outcome::Done => Ok(()),
        Outcome::Refused(r) => Err(StoreError::corrupt(
            &table(store),
            format!("attempt audit refused: {r:?}"),
        )),
    }
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

/// Hourly counters between two hours (`YYYY-MM-DDTHH`), inclusive: every shard read
/// (in parallel) and summed.
pub async fn stats(
    store: &Store,
    from_hour: &str,
    to_hour: &str,
) -> Result<Vec<(String, HashMap<String, i64>)>, StoreError> {
    let reads = (0..STATS_SHARDS).map(|shard| stats_shard(store, shard, from_hour, to_hour));
    let mut total: std::collections::BTreeMap<String, HashMap<String, i64>> = Default::default();
    for shard in futures_util::future::try_join_all(reads).await? {
        for (hour, counts) in shard {
            let sum = total.entry(hour).or_default();
            for (k, v) in counts {
                *sum.entry(k).or_default() += v;
            }
        }
    }
    Ok(total.into_iter().collect())
}

async fn stats_shard(
    store: &Store,
    shard: u32,
    from_hour: &str,
    to_hour: &str,
) -> Result<Vec<(String, HashMap<String, i64>)>, StoreError> {
    let out = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("PK = :pk AND SK BETWEEN :a AND :b")
        .expression_attribute_values(":pk", s(stats_pk(shard)))
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
                .filter(|(k, _)| k.as_str() != "ttl")
                .filter_map(|(k, v)| Some((k.clone(), v.as_n().ok()?.parse().ok()?)))
                .collect();
            Some((hour, counts))
        })
        .collect())
}
