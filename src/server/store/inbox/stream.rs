//! The inbox's stream consumer: when a message or a read receipt is removed (by DynamoDB's
//! TTL in AWS, by `ops-console sweep` elsewhere), the counters that counted it come down.
//! Exactly once per removed item: the decrement is one transaction with a marker of the
//! removal, conditioned on the marker being new, so a record delivered twice, or read again
//! after a restart, changes nothing. Each shard's reader, position and end are kept in
//! DynamoDB (see [`Consumer`]), so several consoles share the stream and a restart resumes.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use aws_sdk_dynamodbstreams::operation::get_records::GetRecordsError;
use aws_sdk_dynamodbstreams::operation::get_shard_iterator::GetShardIteratorError;
use aws_sdk_dynamodbstreams::types::{OperationType, ShardIteratorType};
use chrono::{Duration, Utc};

use crate::server::store::inbox::{self, Delta, Written, CHECKPOINT_PK, KEEP_DAYS, PUBLIC_UID};
use crate::server::store::items::{n, s};
use crate::server::store::schema::{INBOX, SETTINGS};
use crate::server::store::{Store, StoreError};

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
    let owner = inbox::Owner {
        tenant_key: field(old, "tenant_key").unwrap_or_default(),
        inbox_key: field(old, "inbox_key").unwrap_or_default(),
        uid: field(old, "uid").unwrap_or_default(),
    };
    actions.extend(inbox::bumps(store, pk, owner, cat.as_deref(), d, keep)?);
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

// Shard states live in the settings table: writing them to the inbox table would put a
// record on the very stream they track.
fn state_key(shard: &str) -> String {
    format!("{CHECKPOINT_PK}#{shard}")
}

/// What the consoles agree on about one shard: how far it was read, and whether it was
/// read to its end (its `owner` and `lease_until_ms` are only ever compared in conditions).
#[derive(Clone, Debug, Default, serde::Deserialize)]
struct ShardState {
    #[serde(default)]
    sequence: Option<String>,
    #[serde(default)]
    finished: bool,
}

async fn load_state(store: &Store, shard: &str) -> Result<ShardState, StoreError> {
    Ok(
        crate::server::store::items::get(store, SETTINGS.base, "pk", &state_key(shard))
            .await?
            .unwrap_or_default(),
    )
}

fn streams_error<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> StoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    StoreError::request(op)
}

/// One shard as `DescribeStream` lists it.
#[derive(Clone, Debug)]
struct ShardInfo {
    id: String,
    parent: Option<String>,
}

/// Reads the inbox table's stream and counts every removal, with any number of consoles
/// doing the same: each shard is read by one console at a time (a lease in DynamoDB,
/// renewed as it reads, taken over once it runs out), a parent shard is read to its end
/// before its children, and the position is saved after every page. Correctness never
/// rests on the lease: counting a removal is idempotent, so two readers at once (a lease
/// that ran out under a slow reader) only do the work twice.
pub struct Consumer {
    store: Store,
    owner: String,
    lease: std::time::Duration,
    /// Where this console is in each shard it reads. Only saves a request: after a
    /// restart (or a lost lease) the saved position is read again.
    iterators: HashMap<String, String>,
    stream: Option<String>,
}

/// Pages one shard may read in one round before the others get their turn.
const PAGES_PER_ROUND: usize = 20;

impl Consumer {
    pub fn new(store: Store, owner: &str, lease: std::time::Duration) -> Consumer {
        Consumer {
            store,
            owner: owner.to_string(),
            lease,
            iterators: HashMap::new(),
            stream: None,
        }
    }

    fn now_ms() -> i64 {
        Utc::now().timestamp_millis()
    }

    async fn stream_arn(&mut self) -> Result<Option<String>, StoreError> {
        if self.stream.is_none() {
            let table = self
                .store
                .client()
                .describe_table()
                .table_name(self.store.table(INBOX.base))
                .send()
                .await
                .map_err(StoreError::request("DescribeTable"))?;
            self.stream = table.table.and_then(|t| t.latest_stream_arn);
        }
        Ok(self.stream.clone())
    }

    async fn shards(&self, arn: &str) -> Result<Vec<ShardInfo>, StoreError> {
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let out = self
                .store
                .streams()
                .describe_stream()
                .stream_arn(arn)
                .set_exclusive_start_shard_id(start.clone())
                .send()
                .await
                .map_err(streams_error("DescribeStream"))?;
            let Some(desc) = out.stream_description else {
                break;
            };
            for sh in desc.shards.unwrap_or_default() {
                if let Some(id) = sh.shard_id {
                    shards.push(ShardInfo {
                        id,
                        parent: sh.parent_shard_id,
                    });
                }
            }
            match desc.last_evaluated_shard_id {
                Some(last) if !last.is_empty() && Some(&last) != start.as_ref() => {
                    start = Some(last)
                }
                _ => break,
            }
        }
        Ok(shards)
    }

    /// Takes (or renews) the lease on `shard` unless another console holds it.
    async fn lease(&self, shard: &str) -> Result<bool, StoreError> {
        let now = Self::now_ms();
        let req = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table(SETTINGS.base))
            .key("pk", s(state_key(shard)))
            .update_expression(
                "SET #o = :me, lease_until_ms = :until, expires_at = :exp, \
                 started_at = if_not_exists(started_at, :now)",
            )
            .condition_expression(
                "attribute_not_exists(pk) OR #o = :me OR attribute_not_exists(#o) \
                 OR lease_until_ms < :now",
            )
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":me", s(&self.owner))
            .expression_attribute_values(":until", n(now + self.lease.as_millis() as i64))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":exp", n(keep_until()));
        crate::server::store::tx::retrying(|| async {
            match req.clone().send().await {
                Ok(_) => Ok(true),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                    other => Err(StoreError::service("UpdateItem", &other)),
                },
            }
        })
        .await
    }

    /// Saves how far `shard` was read (and renews the lease), only while this console
    /// holds it. False: the lease went to another console.
    async fn save(
        &self,
        shard: &str,
        sequence: Option<&str>,
        finished: bool,
    ) -> Result<bool, StoreError> {
        let now = Self::now_ms();
        let mut update =
            String::from("SET lease_until_ms = :until, finished = :f, expires_at = :exp");
        let mut req = self
            .store
            .client()
            .update_item()
            .table_name(self.store.table(SETTINGS.base))
            .key("pk", s(state_key(shard)))
            .condition_expression("#o = :me")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":me", s(&self.owner))
            .expression_attribute_values(":until", n(now + self.lease.as_millis() as i64))
            .expression_attribute_values(":f", AttributeValue::Bool(finished))
            .expression_attribute_values(":exp", n(keep_until()));
        if let Some(seq) = sequence {
            update.push_str(", #sq = :seq");
            req = req
                .expression_attribute_names("#sq", "sequence")
                .expression_attribute_values(":seq", s(seq));
        }
        if finished {
            update.push_str(", finished_at = :at");
            req = req.expression_attribute_values(":at", n(now));
        }
        let req = req.update_expression(update);
        crate::server::store::tx::retrying(|| async {
            match req.clone().send().await {
                Ok(_) => Ok(true),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                    other => Err(StoreError::service("UpdateItem", &other)),
                },
            }
        })
        .await
    }

    /// Gives up every lease this console holds (a clean shutdown hands shards on at once).
    pub async fn release(&mut self) -> Result<(), StoreError> {
        let shards: Vec<String> = self.iterators.keys().cloned().collect();
        for shard in shards {
            let result = self
                .store
                .client()
                .update_item()
                .table_name(self.store.table(SETTINGS.base))
                .key("pk", s(state_key(&shard)))
                .update_expression("SET lease_until_ms = :zero")
                .condition_expression("#o = :me")
                .expression_attribute_names("#o", "owner")
                .expression_attribute_values(":me", s(&self.owner))
                .expression_attribute_values(":zero", n(0))
                .send()
                .await;
            if let Err(e) = result {
                match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => {}
                    other => return Err(StoreError::service("UpdateItem", &other)),
                }
            }
        }
        self.iterators.clear();
        Ok(())
    }

    async fn iterator(
        &self,
        arn: &str,
        shard: &str,
        after: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        let mut req = self
            .store
            .streams()
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard);
        req = match after {
            Some(seq) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        match req.send().await {
            Ok(out) => Ok(out.shard_iterator),
            Err(e) => {
                let e = e.into_service_error();
                match e {
                    // The saved position is older than the stream keeps (24 hours): what
                    // is left starts at the trim horizon.
                    GetShardIteratorError::TrimmedDataAccessException(_) if after.is_some() => {
                        Box::pin(self.iterator(arn, shard, None)).await
                    }
                    GetShardIteratorError::ResourceNotFoundException(_) => Ok(None),
                    other => Err(StoreError::service("GetShardIterator", &other)),
                }
            }
        }
    }

    /// One pass over the stream: every shard this console holds or can take is read until
    /// a page comes back empty (its iterator is kept for the next round: AWS hands out
    /// empty pages while records follow) or it ends.
    pub async fn round(&mut self) -> Result<Report, StoreError> {
        let mut report = Report::default();
        let Some(arn) = self.stream_arn().await? else {
            return Ok(report);
        };
        let shards = self.shards(&arn).await?;
        let listed: std::collections::HashSet<&str> =
            shards.iter().map(|s| s.id.as_str()).collect();
        let mut finished: HashMap<String, bool> = HashMap::new();
        for sh in &shards {
            let state = load_state(&self.store, &sh.id).await?;
            finished.insert(sh.id.clone(), state.finished);
        }
        for sh in &shards {
            if finished.get(&sh.id).copied().unwrap_or(false) {
                self.iterators.remove(&sh.id);
                continue;
            }
            // A child waits until its parent is read to its end (unless the parent is
            // gone from the stream): one item's records then come in order.
            let parent_pending = sh
                .parent
                .as_deref()
                .is_some_and(|p| listed.contains(p) && !finished.get(p).copied().unwrap_or(false));
            if parent_pending {
                continue;
            }
            if !self.lease(&sh.id).await? {
                self.iterators.remove(&sh.id);
                continue;
            }
            if self.read_shard(&arn, &sh.id, &mut report).await? {
                finished.insert(sh.id.clone(), true);
            }
        }
        Ok(report)
    }

    /// Reads one held shard for a while. True when it was read to its end.
    async fn read_shard(
        &mut self,
        arn: &str,
        shard: &str,
        report: &mut Report,
    ) -> Result<bool, StoreError> {
        let mut it = match self.iterators.remove(shard) {
            Some(it) => Some(it),
            None => {
                let state = load_state(&self.store, shard).await?;
                self.iterator(arn, shard, state.sequence.as_deref()).await?
            }
        };
        for _ in 0..PAGES_PER_ROUND {
            let Some(current) = it.take() else {
                // Closed and read to its end.
                self.save(shard, None, true).await?;
                return Ok(true);
            };
            let out = match self
                .store
                .streams()
                .get_records()
                .shard_iterator(&current)
                .limit(PAGE)
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) => match e.into_service_error() {
                    // Iterators live 15 minutes, and one can point past what the shard
                    // still keeps: start again from the saved position.
                    GetRecordsError::ExpiredIteratorException(_)
                    | GetRecordsError::TrimmedDataAccessException(_) => return Ok(false),
                    other => return Err(StoreError::service("GetRecords", &other)),
                },
            };
            let records = out.records.unwrap_or_default();
            let empty = records.is_empty();
            let mut last = None;
            for r in records {
                report.records += 1;
                let Some(data) = r.dynamodb else { continue };
                last = data.sequence_number.clone().or(last);
                if r.event_name != Some(OperationType::Remove) {
                    continue;
                }
                let Some(old) = data.old_image else { continue };
                if count_removal(&self.store, &convert(old)?).await? {
                    report.counted += 1;
                } else {
                    report.repeated += 1;
                }
            }
            it = out.next_shard_iterator;
            if last.is_some() && !self.save(shard, last.as_deref(), false).await? {
                // Another console holds the shard now.
                return Ok(false);
            }
            if empty {
                break;
            }
        }
        match it {
            Some(next) => {
                self.iterators.insert(shard.to_string(), next);
                Ok(false)
            }
            None => {
                self.save(shard, None, true).await?;
                Ok(true)
            }
        }
    }
}

fn keep_until() -> i64 {
    (Utc::now() + Duration::days(KEEP_DAYS)).timestamp()
}

const PAGE: i32 = 1000;

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
        crate::server::store::items::delete(store, SETTINGS.base, "pk", &state_key(&shard.id))
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
