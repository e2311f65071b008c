//! The receiver's breaker (docs/events.md, "Breaker"): one item per receiver in
//! `settings-<env>`, named by the hash of its URL (a new receiver starts closed), read by
//! every console at every dispatch round. It counts the receiver's failures in a row
//! (written only when an attempt fails, and once a round when one after them did not), and
//! while it is open it names the opening, who or what opened it and why, the last errors,
//! and when the next probe may go. Every change is a conditional write, so two consoles
//! never both open it, both close it, or both send a probe.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::tx::{self, Writes};
use crate::server::store::{Store, StoreError};

/// The item of the receiver `receiver` ([`super::health::receiver_key`] of its URL).
fn pk(receiver: &str) -> String {
    format!("events-receiver-breaker#{receiver}")
}

/// The breaker as stored; the default when it never counted a failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breaker {
    /// The receiver it is of (the hash its item is named by); not stored.
    #[serde(skip)]
    pub receiver: String,
    /// Failed attempts since the last round that had an answer.
    #[serde(default)]
    pub run: i64,
    /// The newest errors, in words (redacted), newest first.
    #[serde(default)]
    pub last_errors: Vec<String>,
    /// Open: its id (a close names it, so it never closes a newer opening), who opened it
    /// (`system` when the failures did), when (RFC 3339) and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Open: no probe goes before this time (epoch ms).
    #[serde(default)]
    pub probe_at_ms: i64,
    /// When it last closed (epoch ms; 0: never): the failure-rate rule does not judge
    /// minutes from before it.
    #[serde(default)]
    pub closed_at_ms: i64,
}

/// The breaker as stored (strongly consistent: a close is seen by the next round).
pub async fn load(store: &Store, receiver: &str) -> Result<Breaker, StoreError> {
    let mut b: Breaker = item::get(store, SETTINGS.base, "pk", &pk(receiver))
        .await?
        .unwrap_or_default();
    b.receiver = receiver.to_string();
    Ok(b)
}

/// Counts one failed attempt with `errors` as the newest errors: the run it makes, and
/// whether the breaker is open already. Outside any transaction (it is on the delivery
/// path); a lost answer sent again counts twice, which opens the breaker one failure early
/// at worst.
pub async fn failed(
    store: &Store,
    receiver: &str,
    errors: &[String],
) -> Result<(i64, bool), StoreError> {
    let table = store.table(SETTINGS.base);
    let list = AttributeValue::L(errors.iter().map(|e| s(e.as_str())).collect());
    let out = tx::retrying(|| {
        let req = store
            .client()
            .update_item()
            .table_name(&table)
            .key("pk", s(pk(receiver)))
            .update_expression("ADD run :one SET last_errors = :errors")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":errors", list.clone())
            .return_values(ReturnValue::AllNew);
        async move { req.send().await.map_err(StoreError::request("UpdateItem")) }
    })
    .await?;
    let after = out.attributes();
    let run = after
        .and_then(|a| a.get("run"))
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok((run, after.is_some_and(|a| a.contains_key("breaker_id"))))
}

/// A round had an answer after failures: the run starts again.
pub async fn answered(store: &Store, receiver: &str) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk(receiver)))
        .update_expression("SET run = :zero")
        .condition_expression("run > :zero")
        .expression_attribute_values(":zero", n(0));
    item::update_if(req).await?;
    Ok(())
}

/// What opening the breaker records.
pub struct Opening<'a> {
    pub breaker_id: &'a str,
    pub by: &'a str,
    pub at: &'a str,
    pub reason: &'a str,
    pub probe_at_ms: i64,
}

/// The write that opens the breaker, unless it is open already; first among its writes.
pub fn open(store: &Store, receiver: &str, o: &Opening<'_>) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(receiver)))
        .update_expression(
            "SET breaker_id = :id, opened_by = :by, opened_at = :at, reason = :why, \
             probe_at_ms = :probe",
        )
        .condition_expression("attribute_not_exists(breaker_id)")
        .expression_attribute_values(":id", s(o.breaker_id))
        .expression_attribute_values(":by", s(o.by))
        .expression_attribute_values(":at", s(o.at))
        .expression_attribute_values(":why", s(o.reason))
        .expression_attribute_values(":probe", n(o.probe_at_ms))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Writes::new(vec![TransactWriteItem::builder()
        .update(update)
        .build()]))
}

/// The write that closes the opening `breaker_id` (and no other), the run starting again;
/// first among its writes.
pub fn close(
    store: &Store,
    receiver: &str,
    breaker_id: &str,
    now_ms: i64,
) -> Result<Writes, StoreError> {
    let table = store.table(SETTINGS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(receiver)))
        .update_expression(
            "SET run = :zero, closed_at_ms = :now \
             REMOVE breaker_id, opened_by, opened_at, reason, probe_at_ms",
        )
        .condition_expression("breaker_id = :id")
        .expression_attribute_values(":id", s(breaker_id))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":zero", n(0))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Writes::new(vec![TransactWriteItem::builder()
        .update(update)
        .build()]))
}

/// Takes the probe of the opening `breaker_id` that is due at `now_ms` (or set past
/// `far_ms` by a console whose clock ran ahead), setting the next one to `next_ms`. False:
/// another console took it, or it is not due, or the breaker closed. A lost answer sent
/// again reads as taken: the probe waits one interval more.
pub async fn take_probe(
    store: &Store,
    receiver: &str,
    breaker_id: &str,
    now_ms: i64,
    next_ms: i64,
    far_ms: i64,
) -> Result<bool, StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk(receiver)))
        .update_expression("SET probe_at_ms = :next")
        .condition_expression("breaker_id = :id AND (probe_at_ms <= :now OR probe_at_ms > :far)")
        .expression_attribute_values(":far", n(far_ms))
        .expression_attribute_values(":id", s(breaker_id))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":next", n(next_ms));
    item::update_if(req).await
}
