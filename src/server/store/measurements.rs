//! `measurements-<env>` (docs/measurements.md; its items in docs/data-model.md): per user,
//! the accepted measurements (`USER#<id>` / `MEAS#<timestamp>#<measurement_id>`), their
//! idempotency records (`IDEMP#<measurement_id>`), the ordering state (`ORDER`), and an
//! audit record of every attempt (`AUDIT#<time>#<attempt_id>`, also in the sparse
//! `outcome-shard-index`); hourly counters in `STATS_SHARDS` shards (`STATS#<n>` / `<hour>`;
//! why shards: `measurements/stats.rs`). An acceptance writes its idempotency record, the
//! moved ordering state, the measurement, its audit and one counter shard in one
//! transaction.

mod records;
mod stats;

pub use records::*;
pub use stats::{stats, stats_pk, STATS_SHARDS};

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use serde::Serialize;

use super::fanout;
use super::item::{n, s};
use super::query::{self, Cond, Spec, Start};
use super::schema::{MEASUREMENTS, MEASUREMENTS_BY_OUTCOME, MEASUREMENTS_BY_OUTCOME_SHARD};
use super::tx::{self, Outcome};
use super::{Store, StoreError};
use stats::count;

pub fn user_pk(user: &str) -> String {
    format!("USER#{user}")
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

/// Shards of one outcome's audit records in `outcome-shard-index` (docs/dynamodb.md, "No
/// hot partition key"): nearly every attempt is `accepted`, one record each; 16
/// partitions take 16,000 units a second.
pub const OUTCOME_SHARDS: u32 = 16;

/// An attempt's audit record as stored, with its index key `outcome_shard` (`accepted#07`,
/// by the record's key) for `outcome-shard-index`. The release before also wrote
/// `audit_outcome` (`accepted`) for `outcome-index`, whose one partition per outcome is hot
/// at scale; this release writes it no more, and reads that index only for the records
/// written before.
fn audit_item(store: &Store, a: &AuditItem) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let mut item = to_item(store, a)?;
    let outcome = a.action.as_str();
    let shard = fanout::key(outcome, &format!("{}|{}", a.pk, a.sk), OUTCOME_SHARDS);
    item.insert("outcome_shard".into(), s(&shard));
    Ok(item)
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
    for item in super::many::batch_get(store, MEASUREMENTS.base, keys).await? {
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
    actions.push(put(store, audit_item(store, a.audit)?, None)?);
    actions.push(count(store, a.hour, a.audit.action, a.keep_until)?);
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
        put(store, audit_item(store, audit)?, None)?,
        count(store, hour, audit.action, keep_until)?,
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
    outcome: Option<Action>,
    start: Start<'_>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>, Option<String>), StoreError> {
    let spec = Spec {
        table: table(store),
        index: None,
        pk: ("PK", s(user_pk(user))),
        sk: Some(("SK", Cond::BeginsWith("AUDIT#".into()))),
        filters: outcome
            .map(|o| vec![("action", Cond::Eq(s(o.as_str())))])
            .unwrap_or_default(),
        ascending: false,
        key_attrs: vec!["PK", "SK"],
        projection: None,
    };
    page(store, &spec, start, size).await
}

/// Every user's audit records of one outcome, newest first: the outcome's shards of
/// `outcome-shard-index` and, for the records of the releases before this one's,
/// `outcome-index` (those without a shard: two releases back), merged under one sealed
/// cursor (a page's `next`). The old index is read in one call a page (its stop bounds the
/// page). While `outcome-shard-index` is still being built (a table two releases old, an
/// upgrade that skipped the release before), the list is busy (503, `Retry-After`): the
/// old index alone would miss every record written since.
pub async fn audits_by_outcome(
    store: &Store,
    outcome: Action,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<AuditItem>, Option<String>), StoreError> {
    let o = outcome.as_str();
    let unsharded = Spec {
        table: table(store),
        index: Some(MEASUREMENTS_BY_OUTCOME),
        pk: ("audit_outcome", s(o)),
        sk: None,
        filters: vec![],
        ascending: false,
        key_attrs: vec!["PK", "SK", "audit_outcome"],
        projection: None,
    };
    // One binding for the whole merge (the shards' queries differ from the old index's by
    // their index and key only): a cursor is good for exactly this list.
    let binding = unsharded.binding();
    let mut shards: Vec<fanout::Shard> = (0..OUTCOME_SHARDS)
        .map(|id| {
            let spec = Spec {
                index: Some(MEASUREMENTS_BY_OUTCOME_SHARD),
                pk: ("outcome_shard", s(format!("{o}#{id:02}"))),
                key_attrs: vec!["PK", "SK", "outcome_shard"],
                ..unsharded.clone()
            };
            fanout::Shard::new(id, spec)
        })
        .collect();
    let mut before = fanout::Shard::new(
        OUTCOME_SHARDS,
        Spec {
            filters: vec![("outcome_shard", Cond::Absent)],
            ..unsharded.clone()
        },
    );
    before.one_call = true;
    shards.push(before);
    let page = fanout::page(store, &shards, "SK", &binding, cursor, size).await?;
    let items = page
        .items
        .into_iter()
        .map(|(_, i)| from_item(store, i))
        .collect::<Result<_, _>>()?;
    Ok((items, page.next))
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
