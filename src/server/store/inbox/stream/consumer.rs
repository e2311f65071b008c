//! The stream consumer's shard work: which shards there are, which to read now (parents
//! before children, only with a lease, see `leases.rs`), and reading a held shard page by
//! page.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodbstreams::operation::get_records::{GetRecordsError, GetRecordsOutput};
use aws_sdk_dynamodbstreams::operation::get_shard_iterator::GetShardIteratorError;
use aws_sdk_dynamodbstreams::types::{OperationType, Record, ShardIteratorType};

use super::leases::Leases;
use super::{convert, count_removal, Report};
use crate::server::store::schema::INBOX;
use crate::server::store::{Store, StoreError};

fn streams_error<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> StoreError
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    StoreError::request(op)
}

/// One shard as `DescribeStream` lists it.
#[derive(Clone, Debug)]
pub(super) struct ShardInfo {
    pub(super) id: String,
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
    leases: Leases,
    /// Where this console is in each shard it reads. Only saves a request: after a
    /// restart (or a lost lease) the saved position is read again.
    iterators: HashMap<String, String>,
    stream: Option<String>,
    /// The shards as last listed, and when. Only saves requests: a list is asked again
    /// after [`SHARDS_EVERY`], or at once when a shard this console read has ended (its
    /// children are new).
    listed: Option<(std::time::Instant, Vec<ShardInfo>)>,
    /// When this console last read every shard it holds to an empty page (or its end).
    caught_up: std::time::Instant,
    /// When it last logged that it is behind ([`BEHIND_ALERT`]).
    warned: Option<std::time::Instant>,
}

/// The `alert` field of the log line a console writes, once a minute, while it has not
/// read its shards to their newest record for [`BEHIND_AFTER`]: the service template's
/// CloudWatch alarm counts these lines (as Prometheus reads the gauge).
pub const BEHIND_ALERT: &str = "inbox_stream_behind";

/// The `alert` field of the log line of a saved position found trimmed.
pub const TRIMMED_ALERT: &str = "inbox_stream_trimmed";

/// How long behind before it is said (the Prometheus rule's 300 s).
pub const BEHIND_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// Whether to log that the consumer is `behind`, last said `since_warned` ago.
fn behind_alert_due(
    behind: std::time::Duration,
    since_warned: Option<std::time::Duration>,
) -> bool {
    behind >= BEHIND_AFTER && since_warned.is_none_or(|w| w >= std::time::Duration::from_secs(60))
}

/// Pages one shard may read in one round before the others get their turn.
const PAGES_PER_ROUND: usize = 20;

/// How long a list of the shards is used. AWS serves `DescribeStream` about 10 times a
/// second per account and region: 100 consoles asking once a minute each make fewer than 2.
/// A shard splits about every four hours; the console that reads a parent to its end asks
/// at once, so its children wait for no list.
pub const SHARDS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl Consumer {
    pub fn new(store: Store, owner: &str, lease: std::time::Duration) -> Consumer {
        Consumer {
            leases: Leases::new(store.clone(), owner, lease),
            store,
            iterators: HashMap::new(),
            stream: None,
            listed: None,
            caught_up: std::time::Instant::now(),
            warned: None,
        }
    }

    /// The shards, listed again when the list is older than [`SHARDS_EVERY`].
    async fn shards_now(&mut self, arn: &str) -> Result<Vec<ShardInfo>, StoreError> {
        if let Some((at, shards)) = &self.listed {
            if at.elapsed() < SHARDS_EVERY {
                return Ok(shards.clone());
            }
        }
        let shards = self.shards(arn).await?;
        self.listed = Some((std::time::Instant::now(), shards.clone()));
        Ok(shards)
    }

    pub(super) async fn stream_arn(&mut self) -> Result<Option<String>, StoreError> {
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

    pub(super) async fn shards(&self, arn: &str) -> Result<Vec<ShardInfo>, StoreError> {
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

    /// Gives up every lease this console holds (a clean shutdown hands shards on at once).
    pub async fn release(&mut self) -> Result<(), StoreError> {
        let shards: Vec<String> = self.iterators.keys().cloned().collect();
        self.leases.release(&shards).await?;
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
                    // is left starts at the trim horizon, and the removals in between were
                    // never counted. Said and counted: the recount (`ops-console verify
                    // inbox`) finds the counters they left high.
                    GetShardIteratorError::TrimmedDataAccessException(_) if after.is_some() => {
                        tracing::warn!(alert = TRIMMED_ALERT, shard = %shard, "inbox stream: the saved position was trimmed; removals since may be uncounted (run ops-console verify inbox)");
                        crate::server::metrics::inbox_stream_trimmed();
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
        let done = self.read_round().await;
        // On every way out: a round that fails (DynamoDB Streams away, no stream) leaves
        // the gauge growing, not where the last good one left it.
        let behind = self.caught_up.elapsed();
        crate::server::metrics::inbox_stream_behind(behind.as_secs_f64());
        if behind_alert_due(behind, self.warned.map(|w| w.elapsed())) {
            self.warned = Some(std::time::Instant::now());
            tracing::warn!(alert = BEHIND_ALERT, behind_seconds = behind.as_secs(), "inbox stream: not read to its newest record for over 5 minutes; inbox counters are not coming down");
        }
        done
    }

    async fn read_round(&mut self) -> Result<Report, StoreError> {
        let mut report = Report::default();
        let Some(arn) = self.stream_arn().await? else {
            return Ok(report);
        };
        let shards = self.shards_now(&arn).await?;
        let mut caught_up = true;
        let listed: std::collections::HashSet<&str> =
            shards.iter().map(|s| s.id.as_str()).collect();
        let mut finished: HashMap<String, bool> = HashMap::new();
        for sh in &shards {
            let state = self.leases.state(&sh.id).await?;
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
            if !self.leases.take(&sh.id).await? {
                self.iterators.remove(&sh.id);
                continue;
            }
            // One shard that DynamoDB will not read now (a throttled stream, a 5xx) waits
            // for the next round; the others are read in this one.
            match self.read_shard(&arn, &sh.id, &mut report).await {
                Ok(Read::Ended) => {
                    finished.insert(sh.id.clone(), true);
                    // Its children are new: the next round lists the shards again.
                    self.listed = None;
                }
                Ok(Read::CaughtUp) => {}
                Ok(Read::More) => caught_up = false,
                Err(e) if e.busy().is_some() => {
                    self.iterators.remove(&sh.id);
                    report.deferred += 1;
                    caught_up = false;
                }
                Err(e) => return Err(e),
            }
        }
        if caught_up {
            self.caught_up = std::time::Instant::now();
        }
        Ok(report)
    }

    /// Reads one held shard for a while: to its end, to an empty page, or not as far.
    async fn read_shard(
        &mut self,
        arn: &str,
        shard: &str,
        report: &mut Report,
    ) -> Result<Read, StoreError> {
        let mut it = match self.iterators.remove(shard) {
            Some(it) => Some(it),
            None => {
                let state = self.leases.state(shard).await?;
                self.iterator(arn, shard, state.sequence.as_deref()).await?
            }
        };
        let mut empty = false;
        for _ in 0..PAGES_PER_ROUND {
            let Some(current) = it.take() else {
                // Closed and read to its end.
                self.leases.save(shard, None, true).await?;
                return Ok(Read::Ended);
            };
            let Some(out) = self.records(&current).await? else {
                // The next round starts again from the saved position.
                return Ok(Read::More);
            };
            let records = out.records.unwrap_or_default();
            empty = records.is_empty();
            let last = self.count(records, report).await?;
            it = out.next_shard_iterator;
            if last.is_some() && !self.leases.save(shard, last.as_deref(), false).await? {
                // Another console holds the shard now: it is that console's to read.
                return Ok(Read::CaughtUp);
            }
            if empty {
                break;
            }
        }
        match it {
            Some(next) => {
                self.iterators.insert(shard.to_string(), next);
                Ok(if empty { Read::CaughtUp } else { Read::More })
            }
            None => {
                self.leases.save(shard, None, true).await?;
                Ok(Read::Ended)
            }
        }
    }

    /// One page of records at `iterator`; `None` when the iterator is of no use any more
    /// (iterators live 15 minutes, and one can point past what the shard still keeps).
    async fn records(&self, iterator: &str) -> Result<Option<GetRecordsOutput>, StoreError> {
        let sent = self
            .store
            .streams()
            .get_records()
            .shard_iterator(iterator)
            .limit(PAGE)
            .send()
            .await;
        match sent {
            Ok(out) => Ok(Some(out)),
            Err(e) => match e.into_service_error() {
                GetRecordsError::ExpiredIteratorException(_)
                | GetRecordsError::TrimmedDataAccessException(_) => Ok(None),
                other => Err(StoreError::service("GetRecords", &other)),
            },
        }
    }

    /// Counts the removals among `records` into `report`; the last sequence number seen.
    async fn count(
        &self,
        records: Vec<Record>,
        report: &mut Report,
    ) -> Result<Option<String>, StoreError> {
        let mut last = None;
        for r in records {
            report.records += 1;
            let Some(data) = r.dynamodb else { continue };
            last = data.sequence_number.clone().or(last);
            if let Some(made) = data.approximate_creation_date_time {
                let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
                crate::server::metrics::inbox_stream_lag(now - made.as_secs_f64());
            }
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
        Ok(last)
    }
}

const PAGE: i32 = 1000;

/// How far a round read a shard it holds.
enum Read {
    /// To its end: closed, and every record read.
    Ended,
    /// To an empty page (what follows is not written yet), or it is another console's now.
    CaughtUp,
    /// Not as far: its pages ran out for this round, or its iterator did.
    More,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn being_behind_is_said_past_five_minutes_once_a_minute() {
        let s = Duration::from_secs;
        assert!(!behind_alert_due(s(299), None));
        assert!(behind_alert_due(s(300), None));
        assert!(!behind_alert_due(s(400), Some(s(59))));
        assert!(behind_alert_due(s(400), Some(s(60))));
    }
}
