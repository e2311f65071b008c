//! A receiver's health (docs/events.md, "Receiver health"): how its deliveries went, kept
//! in `settings-<env>` beside the receiver. Each attempt's end, once recorded, adds to two
//! items: the receiver's state on the attempt's shard (last success, last error, failing
//! since) and the shard's tally of the five minutes it ended in (attempts, deliveries).
//! Both are spread over the outbox's shards, so no single item takes every attempt.
//! Items are named by a hash of the receiver's URL: a new receiver starts with a clean
//! record, and no URL is ever part of a key.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use crate::server::store::item::{n, s};
use crate::server::store::many::{self, Item};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{tx, Store, StoreError};

/// The tally's time slice.
pub const BUCKET_MS: i64 = 5 * 60_000;

/// How long a receiver's state is kept after its last attempt.
const KEEP_DAYS: i64 = 30;
/// How long a tally is kept after its five minutes: only the last hour is read (and the
/// settings table is scanned for the company directory: no month of tallies in it).
const TALLY_KEEP_S: i64 = 2 * 3600;

/// The end of one attempt, as the health record counts it.
pub struct Attempt<'a> {
    /// [`receiver_key`] of the receiver it went to.
    pub receiver: &'a str,
    pub shard: u32,
    pub delivered: bool,
    /// The receiver failed (a timeout, a 5xx, no connection): what the breaker's
    /// failure-rate rule counts.
    pub failed: bool,
    /// The error in words, when not delivered.
    pub error: Option<&'a str>,
    pub now_ms: i64,
}

/// The short name of a receiver in keys: a hash of its URL.
pub fn receiver_key(url: &str) -> String {
    crate::server::crypto::sha256_hex(url.as_bytes())[..16].to_string()
}

fn state_pk(receiver: &str, shard: u32) -> String {
    format!("receiver-health#{receiver}#{shard}")
}

fn tally_pk(receiver: &str, bucket_ms: i64, shard: u32) -> String {
    format!("receiver-tally#{receiver}#{bucket_ms}#{shard}")
}

/// Counts `a`: two single updates, made once the attempt's end is recorded. Not part of
/// that transaction: every attempt of a shard touches these two items, and on AWS
/// transactions that share an item cancel each other (a backlog's ends would run out of
/// retries). An update whose answer was lost and that is sent again can count an attempt
/// twice; a health figure tolerates that, a delivery record would not.
pub async fn count(store: &Store, a: &Attempt<'_>) -> Result<(), StoreError> {
    let table = store.table(SETTINGS.base);
    let state_expires = n(a.now_ms / 1000 + KEEP_DAYS * 86_400);
    let bucket = a.now_ms - a.now_ms.rem_euclid(BUCKET_MS);
    let tally_expires = n((bucket + BUCKET_MS) / 1000 + TALLY_KEEP_S);
    tx::retrying(|| {
        let req = store
            .client()
            .update_item()
            .table_name(&table)
            .key("pk", s(state_pk(a.receiver, a.shard)))
            .expression_attribute_values(":now", n(a.now_ms))
            .expression_attribute_values(":exp", state_expires.clone());
        let req = if a.delivered {
            req.update_expression(
                "SET last_success_ms = :now, expires_at = :exp REMOVE failing_since_ms",
            )
        } else {
            req.update_expression(
                "SET last_failure_ms = :now, last_error = :e, expires_at = :exp, \
                 failing_since_ms = if_not_exists(failing_since_ms, :now)",
            )
            .expression_attribute_values(":e", s(a.error.unwrap_or("failed")))
        };
        async move {
            req.send()
                .await
                .map(|_| ())
                .map_err(StoreError::request("UpdateItem"))
        }
    })
    .await?;
    tx::retrying(|| {
        let req = store
            .client()
            .update_item()
            .table_name(&table)
            .key("pk", s(tally_pk(a.receiver, bucket, a.shard)))
            .update_expression(
                "ADD attempts :one, delivered :d, failed :f \
                 SET bucket_ms = :b, expires_at = :exp",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":d", n(u8::from(a.delivered)))
            .expression_attribute_values(":f", n(u8::from(a.failed)))
            .expression_attribute_values(":b", n(bucket))
            .expression_attribute_values(":exp", tally_expires.clone());
        async move {
            req.send()
                .await
                .map(|_| ())
                .map_err(StoreError::request("UpdateItem"))
        }
    })
    .await
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct StateItem {
    #[serde(default)]
    last_success_ms: Option<i64>,
    #[serde(default)]
    last_failure_ms: Option<i64>,
    #[serde(default)]
    last_error: Option<String>,
    #[serde(default)]
    failing_since_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct TallyItem {
    bucket_ms: i64,
    #[serde(default)]
    attempts: u64,
    #[serde(default)]
    delivered: u64,
    #[serde(default)]
    failed: u64,
}

/// A receiver's health, over every shard.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Health {
    pub last_success_ms: Option<i64>,
    pub last_failure_ms: Option<i64>,
    pub last_error: Option<String>,
    /// The first failure after the last success, while the last attempt failed.
    pub failing_since_ms: Option<i64>,
    /// The tallies of the asked window, oldest first.
    pub tallies: Vec<Tally>,
}

/// One five-minute slice of a receiver's attempts, over every shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub bucket_ms: i64,
    pub attempts: u64,
    pub delivered: u64,
    /// The receiver failed (not counted before the failure-rate rule came).
    pub failed: u64,
}

impl Health {
    /// Attempts and deliveries of the buckets that start at or after `from_ms`.
    pub fn since(&self, from_ms: i64) -> (u64, u64) {
        let t = self.total_since(from_ms);
        (t.attempts, t.delivered)
    }

    /// The tallies of the buckets that start at or after `from_ms`, added up.
    pub fn total_since(&self, from_ms: i64) -> Tally {
        self.tallies
            .iter()
            .filter(|t| t.bucket_ms >= from_ms)
            .fold(Tally::default(), |sum, t| Tally {
                bucket_ms: sum.bucket_ms.min(t.bucket_ms),
                attempts: sum.attempts + t.attempts,
                delivered: sum.delivered + t.delivered,
                failed: sum.failed + t.failed,
            })
    }
}

/// The health of `receiver` over `shards` shards, with its tallies of the buckets from
/// `from_ms` to `now_ms`.
pub async fn read(
    store: &Store,
    receiver: &str,
    shards: u32,
    from_ms: i64,
    now_ms: i64,
) -> Result<Health, StoreError> {
    let table = store.table(SETTINGS.base);
    let key = |pk: String| Item::from([("pk".to_string(), s(pk))]);
    let first = from_ms - from_ms.rem_euclid(BUCKET_MS);
    let mut keys: Vec<Item> = (0..shards).map(|i| key(state_pk(receiver, i))).collect();
    let mut bucket = first;
    while bucket <= now_ms {
        keys.extend((0..shards).map(|i| key(tally_pk(receiver, bucket, i))));
        bucket += BUCKET_MS;
    }
    let mut health = Health::default();
    let mut tallies = std::collections::BTreeMap::<i64, Tally>::new();
    for item in many::batch_get(store, SETTINGS.base, keys).await? {
        let pk = match item.get("pk") {
            Some(AttributeValue::S(pk)) => pk.clone(),
            _ => continue,
        };
        if pk.starts_with("receiver-tally#") {
            let t: TallyItem =
                serde_dynamo::from_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
            let e = tallies.entry(t.bucket_ms).or_insert(Tally {
                bucket_ms: t.bucket_ms,
                ..Tally::default()
            });
            e.attempts += t.attempts;
            e.delivered += t.delivered;
            e.failed += t.failed;
            continue;
        }
        let st: StateItem =
            serde_dynamo::from_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
        health.last_success_ms = health.last_success_ms.max(st.last_success_ms);
        if st.last_failure_ms > health.last_failure_ms {
            health.last_failure_ms = st.last_failure_ms;
            health.last_error = st.last_error.clone();
        }
        if let Some(f) = st.failing_since_ms {
            let earliest = health.failing_since_ms.map_or(f, |h| h.min(f));
            health.failing_since_ms = Some(earliest);
        }
    }
    // Failing: the newest attempt anywhere failed. Since: the first failure after the
    // newest success (a shard that failed before another shard's success does not date it).
    let failing = health.last_failure_ms > health.last_success_ms;
    health.failing_since_ms = match (failing, health.failing_since_ms) {
        (false, _) => None,
        (true, Some(f)) => Some(health.last_success_ms.map_or(f, |ok| f.max(ok + 1))),
        (true, None) => health.last_failure_ms,
    };
    health.tallies = tallies.into_values().collect();
    Ok(health)
}
