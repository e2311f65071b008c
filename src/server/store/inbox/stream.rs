//! The inbox's stream consumer: when a message or a read receipt is removed (by DynamoDB's
//! TTL in AWS, by `ops-console sweep` elsewhere), the counters that counted it come down.
//! Exactly once per removed item: the decrement is one transaction with a marker of the
//! removal, conditioned on the marker being new, so a record delivered twice, or read again
//! after a restart, changes nothing. Each shard's reader, position and end are kept in
//! DynamoDB (see [`Consumer`]), so several consoles share the stream and a restart resumes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use chrono::{Duration, Utc};

mod consumer;
mod leases;

pub use consumer::{Consumer, BEHIND_ALERT, TRIMMED_ALERT};
use leases::state_key;

use crate::server::store::inbox::{self, Delta, Kind, Written, KEEP_DAYS, PUBLIC_UID};
use crate::server::store::item::{n, s};
use crate::server::store::schema::{INBOX, SETTINGS};
use crate::server::store::{Store, StoreError};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub records: usize,
    /// Removals whose counters came down now.
    pub counted: usize,
    /// Removals seen before (a repeated delivery).
    pub repeated: usize,
    /// Shards left for the next round because DynamoDB would not read them now.
    pub deferred: usize,
}

fn field<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

fn category(item: &HashMap<String, AttributeValue>) -> Option<String> {
    match item.get("taxonomy") {
        Some(AttributeValue::M(m)) => m.get("category").and_then(|v| v.as_s().ok()).cloned(),
        _ => None,
    }
}

/// Brings the counters down for one removed item (its old image). True when it counted
/// now, false when this removal was counted before or concerns no counter.
pub async fn count_removal(
    store: &Store,
    old: &HashMap<String, AttributeValue>,
) -> Result<bool, StoreError> {
    let (Some(pk), Some(sk), Some(kind)) = (field(old, "pk"), field(old, "sk"), field(old, "kind"))
    else {
        return Ok(false);
    };
    let cat = category(old);
    let keep = (Utc::now() + Duration::days(KEEP_DAYS)).timestamp();
    let mut actions: Vec<TransactWriteItem> = Vec::new();
    let d = match Kind::parse(kind) {
        Some(Kind::Message) => {
            let read = old.contains_key("readat") && field(old, "uid") != Some(PUBLIC_UID);
            Delta {
                published: -1,
                read: -i64::from(read),
            }
        }
        Some(Kind::Receipt) => Delta {
            published: 0,
            read: -1,
        },
        _ => return Ok(false),
    };
    let at = inbox::CountedIn {
        pk,
        owner: inbox::Owner {
            tenant_key: field(old, "tenant_key").unwrap_or_default(),
            inbox_key: field(old, "inbox_key").unwrap_or_default(),
            uid: field(old, "uid").unwrap_or_default(),
        },
        category: cat.as_deref(),
    };
    actions.extend(inbox::bumps(store, at, d, keep)?);
    let marker = HashMap::from([
        ("pk".to_string(), s(inbox::removal_pk(pk))),
        ("sk".to_string(), s(sk)),
        ("kind".to_string(), s(Kind::Removal.as_str())),
        (
            "expiredat".to_string(),
            n((Utc::now() + Duration::days(30)).timestamp()),
        ),
    ]);
    let put = aws_sdk_dynamodb::types::Put::builder()
        .table_name(store.table(INBOX.base))
        .set_item(Some(marker))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .map_err(|e| StoreError::corrupt("removal marker", e))?;
    actions.insert(0, TransactWriteItem::builder().put(put).build());
    match inbox::transact(store, actions).await? {
        Written::Done => Ok(true),
        Written::Refused(_) => Ok(false),
    }
}

fn convert(
    image: HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let v: serde_json::Value =
        serde_dynamo::from_item(image).map_err(|e| StoreError::corrupt("stream image", e))?;
    serde_dynamo::to_item(v).map_err(|e| StoreError::corrupt("stream image", e))
}

/// Reads the stream until a round finds nothing new, as a one-off consumer that lets its
/// leases go when done (the CLI's and the tests' way to catch up at once; the consoles run
/// [`Consumer::round`] in a loop). On AWS, where empty pages come while records follow,
/// only the loop is guaranteed to see everything.
pub async fn consume(store: &Store) -> Result<Report, StoreError> {
    let owner = format!("once-{}", crate::server::ids::random_hex(6));
    let mut consumer = Consumer::new(store.clone(), &owner, std::time::Duration::from_secs(30));
    let mut total = Report::default();
    for _ in 0..1000 {
        let r = consumer.round().await?;
        total.records += r.records;
        total.counted += r.counted;
        total.repeated += r.repeated;
        if r.records == 0 {
            break;
        }
    }
    consumer.release().await?;
    Ok(total)
}

/// Forgets every shard's state: the next consumer reads the stream from its start (what a
/// consumer that lost its state does). Every removal it sees again is skipped.
pub async fn forget_positions(store: &Store) -> Result<(), StoreError> {
    let mut consumer = Consumer::new(store.clone(), "forget", std::time::Duration::from_secs(1));
    let Some(arn) = consumer.stream_arn().await? else {
        return Ok(());
    };
    for shard in consumer.shards(&arn).await? {
        crate::server::store::item::delete(store, SETTINGS.base, "pk", &state_key(&shard.id))
            .await?;
    }
    Ok(())
}

/// Deletes one page of expired inbox items (DynamoDB Local has no TTL deleter); the
/// stream consumer then sees each deletion as it would see a TTL deletion.
pub async fn sweep_page(
    store: &Store,
    now_s: i64,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<(usize, usize, Option<HashMap<String, AttributeValue>>), StoreError> {
    crate::server::store::sweep::page(store, &INBOX, now_s, start).await
}

/// One page of every inbox item, as JSON (for `verify inbox`, an operator's tool).
pub async fn scan_page(
    store: &Store,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<
    (
        Vec<serde_json::Value>,
        Option<HashMap<String, AttributeValue>>,
    ),
    StoreError,
> {
    let out = store
        .client()
        .scan()
        .table_name(store.table(INBOX.base))
        .consistent_read(true)
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(StoreError::request("Scan"))?;
    Ok((
        out.items
            .unwrap_or_default()
            .iter()
            .map(inbox::as_json)
            .collect(),
        out.last_evaluated_key.filter(|k| !k.is_empty()),
    ))
}
