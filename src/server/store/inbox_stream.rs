//! The inbox's stream consumer: when a message or a read receipt is removed (by DynamoDB's
//! TTL in AWS, by `ops-console sweep` elsewhere), the counters that counted it come down.
//! Exactly once per removed item: the decrement is one transaction with a marker of the
//! removal, conditioned on the marker being new, so a record delivered twice, or read again
//! after a restart, changes nothing. Positions are kept per shard so a restart resumes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use aws_sdk_dynamodbstreams::types::{OperationType, ShardIteratorType};
use chrono::{Duration, Utc};

use super::inbox::{self, Delta, Written, CHECKPOINT_PK, KEEP_DAYS, PUBLIC_UID};
use super::items::{n, s};
use super::schema::{INBOX, SETTINGS};
use super::{Store, StoreError};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub records: usize,
    /// Removals whose counters came down now.
    pub counted: usize,
    /// Removals seen before (a repeated delivery).
    pub repeated: usize,
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
    let d = match kind {
        "UM" => {
            let read = old.contains_key("readat") && field(old, "uid") != Some(PUBLIC_UID);
            Delta {
                published: -1,
                read: -i64::from(read),
            }
        }
        "RR" => Delta {
            published: 0,
            read: -1,
        },
        _ => return Ok(false),
    };
    actions.extend(inbox::bumps(store, pk, cat.as_deref(), d, keep)?);
    let marker = HashMap::from([
        ("pk".to_string(), s(inbox::removal_pk(pk))),
        ("sk".to_string(), s(sk)),
        ("kind".to_string(), s("RM")),
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
    for attempt in 0..30u64 {
        match inbox::transact(store, actions.clone()).await? {
            Written::Done => return Ok(true),
            Written::Refused(_) => return Ok(false),
            Written::Conflict => {
                tokio::time::sleep(std::time::Duration::from_millis(5 * (attempt + 1))).await
            }
        }
    }
    Err(StoreError::corrupt(
        &store.table(INBOX.base),
        "removal kept conflicting",
    ))
}

fn convert(
    image: HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let v: serde_json::Value =
        serde_dynamo::from_item(image).map_err(|e| StoreError::corrupt("stream image", e))?;
    serde_dynamo::to_item(v).map_err(|e| StoreError::corrupt("stream image", e))
}

// Positions live in the settings table: writing them to the inbox table would put a
// record on the very stream they track.
fn position_key(shard: &str) -> String {
    format!("{CHECKPOINT_PK}#{shard}")
}

async fn checkpoint(store: &Store, shard: &str) -> Result<Option<String>, StoreError> {
    let v: Option<serde_json::Value> =
        super::items::get(store, SETTINGS.base, "pk", &position_key(shard)).await?;
    Ok(v.and_then(|v| v["sequence"].as_str().map(str::to_string)))
}

async fn save_checkpoint(store: &Store, shard: &str, sequence: &str) -> Result<(), StoreError> {
    store
        .client()
        .put_item()
        .table_name(store.table(SETTINGS.base))
        .item("pk", s(position_key(shard)))
        .item("sequence", s(sequence))
        .item(
            "expires_at",
            n((Utc::now() + Duration::days(KEEP_DAYS)).timestamp()),
        )
        .send()
        .await
        .map_err(StoreError::request("PutItem"))?;
    Ok(())
}

const PAGE: i32 = 1000;

/// Reads what the stream holds past the saved positions and counts every removal.
pub async fn consume(store: &Store) -> Result<Report, StoreError> {
    let streams = store.streams();
    let table = store
        .client()
        .describe_table()
        .table_name(store.table(INBOX.base))
        .send()
        .await
        .map_err(StoreError::request("DescribeTable"))?;
    let Some(arn) = table.table.and_then(|t| t.latest_stream_arn) else {
        return Ok(Report::default());
    };
    let mut report = Report::default();
    let mut shards = Vec::new();
    let mut start = None;
    loop {
        let out = streams
            .describe_stream()
            .stream_arn(&arn)
            .set_exclusive_start_shard_id(start.clone())
            .send()
            .await
            .map_err(StoreError::request("DescribeStream"))?;
        let Some(desc) = out.stream_description else {
            break;
        };
        shards.extend(
            desc.shards
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| s.shard_id),
        );
        match desc.last_evaluated_shard_id {
            Some(last) if !last.is_empty() && Some(&last) != start.as_ref() => start = Some(last),
            _ => break,
        }
    }
    for shard in shards {
        let after = checkpoint(store, &shard).await?;
        let mut req = streams
            .get_shard_iterator()
            .stream_arn(&arn)
            .shard_id(&shard);
        req = match &after {
            Some(seq) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let mut iterator = req
            .send()
            .await
            .map_err(StoreError::request("GetShardIterator"))?
            .shard_iterator;
        // An open shard always hands out a next iterator, and counting writes records of
        // its own: stop at the first page that is not full (the rest is for next time).
        while let Some(it) = iterator {
            let out = streams
                .get_records()
                .shard_iterator(it)
                .limit(PAGE)
                .send()
                .await
                .map_err(StoreError::request("GetRecords"))?;
            let records = out.records.unwrap_or_default();
            let full = records.len() as i32 >= PAGE;
            let mut last = None;
            for r in records {
                report.records += 1;
                let Some(data) = r.dynamodb else { continue };
                last = data.sequence_number.clone().or(last);
                if r.event_name != Some(OperationType::Remove) {
                    continue;
                }
                let Some(old) = data.old_image else { continue };
                if count_removal(store, &convert(old)?).await? {
                    report.counted += 1;
                } else {
                    report.repeated += 1;
                }
            }
            if let Some(seq) = last {
                save_checkpoint(store, &shard, &seq).await?;
            }
            if !full {
                break;
            }
            iterator = out.next_shard_iterator;
        }
    }
    Ok(report)
}

/// Forgets the saved positions: the next `consume` reads the stream from its start (what
/// a consumer that lost its state does). Every removal it sees again is skipped.
pub async fn forget_positions(store: &Store) -> Result<(), StoreError> {
    let table = store
        .client()
        .describe_table()
        .table_name(store.table(INBOX.base))
        .send()
        .await
        .map_err(StoreError::request("DescribeTable"))?;
    let Some(arn) = table.table.and_then(|t| t.latest_stream_arn) else {
        return Ok(());
    };
    let out = store
        .streams()
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .map_err(StoreError::request("DescribeStream"))?;
    let shards = out
        .stream_description
        .and_then(|d| d.shards)
        .unwrap_or_default();
    for shard in shards.into_iter().filter_map(|s| s.shard_id) {
        super::items::delete(store, SETTINGS.base, "pk", &position_key(&shard)).await?;
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
    let table = store.table(INBOX.base);
    let out = store
        .client()
        .scan()
        .table_name(&table)
        .filter_expression("expiredat <= :now")
        .expression_attribute_values(":now", n(now_s))
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(StoreError::request("Scan"))?;
    let examined = out.scanned_count.max(0) as usize;
    let mut deleted = 0;
    for item in out.items.unwrap_or_default() {
        let (Some(pk), Some(sk)) = (field(&item, "pk"), field(&item, "sk")) else {
            continue;
        };
        let result = store
            .client()
            .delete_item()
            .table_name(&table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .condition_expression("expiredat <= :now")
            .expression_attribute_values(":now", n(now_s))
            .send()
            .await;
        match result {
            Ok(_) => deleted += 1,
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::delete_item::DeleteItemError::ConditionalCheckFailedException(_) => {}
                other => return Err(StoreError::service("DeleteItem", &other)),
            },
        }
    }
    Ok((
        examined,
        deleted,
        out.last_evaluated_key.filter(|k| !k.is_empty()),
    ))
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
