//! A DynamoDB that behaves like AWS's, for tests: a proxy in front of DynamoDB Local that
//! speaks DynamoDB's JSON protocol (and the Streams protocol) and adds, each switchable and
//! at a configurable rate, what DynamoDB Local never does:
//!
//! - **transaction conflicts** as DynamoDB defines them: a `TransactWriteItems` touching an
//!   item that an in-flight transaction holds is cancelled with `TransactionConflict` in its
//!   `CancellationReasons`, and a single write to such an item fails with
//!   `TransactionConflictException`. Transactions are held open for a few milliseconds so
//!   that concurrent ones really overlap (DynamoDB Local serializes everything);
//! - **throttling**: `ThrottlingException` / `ProvisionedThroughputExceededException` at a
//!   rate, and a per-item write limit (a scaled-down partition limit) that throttles any hot
//!   item, inside transactions as a `ThrottlingError` cancellation reason;
//! - **`InternalServerError`** (HTTP 500) and **connection resets** before the request
//!   reaches the database;
//! - **lost answers**: the write commits in DynamoDB Local, then the answer is dropped (the
//!   connection is reset, at once or after hanging);
//! - **outages**: connections refused, or accepted and never answered;
//! - **client request tokens**: a `TransactWriteItems` repeated with the token of one that
//!   succeeded within ten minutes succeeds again without writing (AWS's idempotency window);
//! - **streams**: empty `GetRecords` pages that still carry a next iterator, shards that
//!   close and continue in two child shards (records split between them by key), and
//!   children that split again; expired iterators, trimmed positions and
//!   `LimitExceededException`;
//! - **partial batches**: `BatchWriteItem` and `BatchGetItem` handing part of their items
//!   or keys back unprocessed;
//! - **ambiguous 500s**: a write that commits and is answered `InternalServerError`;
//! - **late writes**: a write answered 500 at once and applied later, after its client gave
//!   up (and perhaps retried); while it is pending, a transaction with its client token is
//!   answered `TransactionInProgressException`;
//! - **AWS's partitions, scaled down** ([`Limits`]): every write and read charged as AWS
//!   bills it to each partition it lands on, an index's copy to the *index key's*
//!   partition, each partition and each table or index held to its limit and refused with
//!   AWS's throttling reasons; the units by operation (`Report::units`) and by key, the
//!   hottest first (`Report::keys`);
//! - **index lag**: a query of a global index does not see the items written in the last
//!   few milliseconds.
//!
//! It is test tooling: nothing in the product depends on it.

mod batch;
mod capacity;
mod errors;
mod expr;
mod items;
mod lag;
mod limiter;
mod partitions;
mod rng;
mod server;
mod streams;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use server::Proxy;

/// What the proxy does wrong on purpose. `Faults::default()` forwards everything untouched.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Cancel a transaction (or fail a single write) that touches an item an in-flight
    /// transaction holds, as DynamoDB does.
    pub conflicts: bool,
    /// How long every transaction holds its items before it is forwarded, in milliseconds
    /// (a random value in this range), so that concurrent transactions overlap.
    pub hold_ms: (u64, u64),
    /// Share of transactions cancelled with `TransactionConflict` even without an overlap.
    pub conflict_rate: f64,
    /// Share of data requests answered `ThrottlingException` or
    /// `ProvisionedThroughputExceededException`.
    pub throttle_rate: f64,
    /// Only requests whose body contains this text are throttled so (empty: any): a table's
    /// partition throttles some reads and not others, e.g. the `Select=COUNT` queries.
    pub throttle_matching: String,
    /// Writes per second any one item takes before it is throttled (0: no limit).
    pub item_writes_per_s: u32,
    /// Share of requests answered `InternalServerError` (500) without reaching the database.
    pub internal_error_rate: f64,
    /// Share of requests whose connection is reset before they reach the database.
    pub reset_rate: f64,
    /// Only requests whose body contains this text are reset so (empty: any).
    pub reset_matching: String,
    /// Share of writes that commit and whose answer is then lost.
    pub lost_answer_rate: f64,
    /// A lost answer hangs this long before the connection is reset (0: reset at once).
    pub lost_answer_hang_ms: u64,
    /// Share of `GetRecords` calls answered with an empty page and the same position.
    pub empty_page_rate: f64,
    /// An open stream shard (a child too) is closed and split in two once this many of its
    /// records have passed (0: never).
    pub split_after_records: u64,
    pub outage: Outage,
    /// Share of `BatchWriteItem` and `BatchGetItem` calls that come back with part of their
    /// items or keys unprocessed.
    pub partial_batch_rate: f64,
    /// How many items or keys such a batch processes at most (0: a random half).
    pub partial_batch_keeps: usize,
    /// A `Query` page ends after this many items (0: at DynamoDB Local's own 1 MB): the
    /// 1 MB page at a scale a test can fill.
    pub query_page_items: u32,
    /// Share of writes that commit and are then answered `InternalServerError`.
    pub error_after_commit_rate: f64,
    /// Share of writes answered `InternalServerError` at once and applied `late_write_ms`
    /// later.
    pub late_write_rate: f64,
    pub late_write_ms: u64,
    /// Only writes whose request contains this text are made late (empty: any write).
    pub late_write_matching: String,
    /// AWS's partitions and their limits (`None`: units as DynamoDB Local reports them,
    /// no partitions).
    pub partitions: Option<Limits>,
    /// A query of a global index does not see items written in the last this many
    /// milliseconds (0: it sees everything at once).
    pub index_lag_ms: u64,
    /// Only items whose JSON contains this text lag (empty: every item): AWS replicates
    /// each index partition on its own, so one partition can lag behind another.
    pub index_lag_matching: String,
    /// Share of `GetRecords` calls answered `ExpiredIteratorException`.
    pub expired_iterator_rate: f64,
    /// Share of stream reads (`GetRecords`, `DescribeStream`) answered
    /// `LimitExceededException`.
    pub stream_limit_rate: f64,
    /// Share of `GetShardIterator` calls at a sequence number answered
    /// `TrimmedDataAccessException`.
    pub trimmed_rate: f64,
    /// A trim also takes away this many records past the reader's position, unread (AWS
    /// trims what is older than a day, read or not): their changes are never seen.
    pub trim_loses: u32,
    /// Global indexes still being built (added to a table in use): a `Query` of one is
    /// answered `ValidationException` "Cannot read from backfilling global secondary
    /// index", as AWS answers until the index is ACTIVE (DynamoDB Local builds at once).
    pub backfilling_indexes: Vec<String>,
    /// Writes whose request contains this text have every condition made true (empty:
    /// none), as a console whose conditional writes were broken would send them: never a
    /// fault of AWS's, but the chaos checker's own test that a second effect is caught.
    pub ignore_conditions_matching: String,
    /// A transaction cancelled at random whose request contains this text has its last
    /// item applied anyway (empty: none), as moto's server does: never AWS's behaviour, but
    /// the chaos checker's own test that a counter written without its record is caught.
    pub tear_cancelled_matching: String,
}

impl Faults {
    /// The kinds this setting switches on (those a run must see injected at least once).
    pub fn switched_on(&self) -> Vec<Kind> {
        let mut on = Vec::new();
        let mut add = |yes: bool, kind: Kind| {
            if yes {
                on.push(kind);
            }
        };
        add(self.conflicts, Kind::Conflict);
        add(self.conflict_rate > 0.0, Kind::RandomConflict);
        add(self.throttle_rate > 0.0, Kind::Throttle);
        add(self.internal_error_rate > 0.0, Kind::InternalError);
        add(self.reset_rate > 0.0, Kind::Reset);
        add(self.lost_answer_rate > 0.0, Kind::LostAnswer);
        add(self.empty_page_rate > 0.0, Kind::EmptyPage);
        add(self.split_after_records > 0, Kind::ShardSplit);
        add(self.partial_batch_rate > 0.0, Kind::PartialBatch);
        add(self.error_after_commit_rate > 0.0, Kind::ErrorAfterCommit);
        add(self.late_write_rate > 0.0, Kind::LateWrite);
        add(self.index_lag_ms > 0, Kind::IndexLag);
        add(self.expired_iterator_rate > 0.0, Kind::ExpiredIterator);
        add(self.stream_limit_rate > 0.0, Kind::StreamLimit);
        add(self.trimmed_rate > 0.0, Kind::Trimmed);
        add(!self.backfilling_indexes.is_empty(), Kind::Backfilling);
        add(
            !self.ignore_conditions_matching.is_empty(),
            Kind::ConditionIgnored,
        );
        add(!self.tear_cancelled_matching.is_empty(), Kind::Torn);
        add(self.query_page_items > 0, Kind::PagedQuery);
        add(
            self.partitions
                .is_some_and(|l| l.partition_write_per_s > 0.0 || l.partition_read_per_s > 0.0),
            Kind::PartitionThrottle,
        );
        on
    }
}

/// AWS's throughput limits, scaled down, in capacity units a second (0: no limit). Each
/// request is charged to the partitions it lands on as AWS bills it (see the `partitions`
/// module), whatever the limits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    pub partition_write_per_s: f64,
    pub partition_read_per_s: f64,
    /// A table's, and each global index's, own quota.
    pub table_write_per_s: f64,
    pub table_read_per_s: f64,
    /// Seconds of unused units a bucket keeps (at least one; a bucket starts with one
    /// second's worth). Scaled down, one second holds a request or two where AWS's holds
    /// hundreds, and chance alone would throttle a key at half its rate: `scaled` keeps ten
    /// seconds, so that a key's rate over seconds decides, and a key past its rate for
    /// more than a few seconds is refused, as on AWS.
    pub window_s: f64,
}

impl Limits {
    /// AWS's, times `scale`: a partition takes 1,000 write and 3,000 read units a second; an
    /// on-demand table (and each of its global indexes) 40,000 of each, the default quota.
    /// `scaled(0.002)` is 2 and 6 a partition, 80 and 80 a table.
    pub fn scaled(scale: f64) -> Limits {
        Limits {
            partition_write_per_s: 1_000.0 * scale,
            partition_read_per_s: 3_000.0 * scale,
            table_write_per_s: 40_000.0 * scale,
            table_read_per_s: 40_000.0 * scale,
            window_s: 10.0,
        }
    }

    /// Units billed and charged by partition, nothing refused.
    pub fn unlimited() -> Limits {
        Limits::default()
    }
}

/// What one partition key (`table|attribute=value`, `table/index/name|attribute=value`)
/// spent, and how often it refused a request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyUse {
    pub key: String,
    pub write: f64,
    pub read: f64,
    pub throttled: u64,
}

impl KeyUse {
    pub(crate) fn new(key: &str) -> KeyUse {
        KeyUse {
            key: key.to_string(),
            ..KeyUse::default()
        }
    }
}

/// DynamoDB unreachable, as a client sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outage {
    #[default]
    None,
    /// Connections are refused, and open ones reset.
    Refuse,
    /// Connections are accepted and requests read, but nothing is answered until the
    /// outage ends; then the connection is reset.
    Hang,
}

/// Every kind of fault the proxy injects, by the name it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A transaction or write cancelled because an in-flight transaction held its item.
    Conflict,
    /// A transaction cancelled with `TransactionConflict` at random.
    RandomConflict,
    /// A request throttled at random.
    Throttle,
    /// A write throttled by the per-item limit.
    HotItem,
    InternalError,
    Reset,
    /// A write committed whose answer was dropped.
    LostAnswer,
    /// A repeated client request token answered without writing.
    TokenReplay,
    EmptyPage,
    ShardSplit,
    /// An open connection reset, or a request refused, by an outage (connections refused
    /// by the closed port are not seen, so not counted).
    OutageRefused,
    /// A request left unanswered by an outage.
    OutageHung,
    /// A batch call that came back with part of it unprocessed.
    PartialBatch,
    /// A write that committed and was answered `InternalServerError`.
    ErrorAfterCommit,
    /// A write answered 500 at once and applied later.
    LateWrite,
    /// A transaction whose client token belonged to one still running.
    TokenInProgress,
    /// A request refused by a partition's limit (`…KeyRangeThroughputExceeded`).
    PartitionThrottle,
    /// A request refused by a table's or index's quota (`…AccountLimitExceeded`).
    QuotaThrottle,
    /// An item a query of a global index did not see yet.
    IndexLag,
    /// An item a query of a global index showed as it was before its latest write.
    IndexOldVersion,
    /// An item a query of a global index showed where it no longer is (deleted, or moved
    /// to another index key).
    IndexGhost,
    /// A `Select=COUNT` query of a global index whose count lagged as its items did.
    CountLag,
    ExpiredIterator,
    StreamLimit,
    Trimmed,
    /// A stream record trimmed away before it was read.
    TrimmedLost,
    /// A query of an index still being built.
    Backfilling,
    /// A write whose conditions were made true (a broken console's).
    ConditionIgnored,
    /// A cancelled transaction whose last item was applied anyway (a broken database's).
    Torn,
    /// A query page that ended at `query_page_items`, before the reader's limit, with more
    /// to read.
    PagedQuery,
}

impl Kind {
    pub const ALL: [Kind; 30] = [
        Kind::Conflict,
        Kind::RandomConflict,
        Kind::Throttle,
        Kind::HotItem,
        Kind::InternalError,
        Kind::Reset,
        Kind::LostAnswer,
        Kind::TokenReplay,
        Kind::EmptyPage,
        Kind::ShardSplit,
        Kind::OutageRefused,
        Kind::OutageHung,
        Kind::PartialBatch,
        Kind::ErrorAfterCommit,
        Kind::LateWrite,
        Kind::TokenInProgress,
        Kind::PartitionThrottle,
        Kind::QuotaThrottle,
        Kind::IndexLag,
        Kind::IndexOldVersion,
        Kind::IndexGhost,
        Kind::CountLag,
        Kind::ExpiredIterator,
        Kind::StreamLimit,
        Kind::Trimmed,
        Kind::TrimmedLost,
        Kind::Backfilling,
        Kind::ConditionIgnored,
        Kind::Torn,
        Kind::PagedQuery,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Conflict => "transaction conflicts (overlap)",
            Kind::RandomConflict => "transaction conflicts (random)",
            Kind::Throttle => "throttles (random)",
            Kind::HotItem => "throttles (hot item)",
            Kind::InternalError => "500 InternalServerError",
            Kind::Reset => "connection resets",
            Kind::LostAnswer => "lost answers (committed)",
            Kind::TokenReplay => "client-token replays",
            Kind::EmptyPage => "empty stream pages",
            Kind::ShardSplit => "stream shard splits",
            Kind::OutageRefused => "outage: connections reset",
            Kind::OutageHung => "outage: unanswered",
            Kind::PartialBatch => "batches partly unprocessed",
            Kind::ErrorAfterCommit => "500 after commit",
            Kind::LateWrite => "late writes (500, applied later)",
            Kind::TokenInProgress => "client token in progress",
            Kind::PartitionThrottle => "throttles (partition units)",
            Kind::QuotaThrottle => "throttles (table or index quota)",
            Kind::IndexLag => "items an index did not see yet",
            Kind::IndexOldVersion => "old versions an index showed",
            Kind::IndexGhost => "ghosts an index showed (deleted or moved)",
            Kind::CountLag => "index counts that lagged",
            Kind::ExpiredIterator => "expired stream iterators",
            Kind::StreamLimit => "stream LimitExceeded",
            Kind::Trimmed => "trimmed stream positions",
            Kind::TrimmedLost => "stream records trimmed away unread",
            Kind::Backfilling => "queries of an index still being built",
            Kind::ConditionIgnored => "writes with their conditions made true (broken)",
            Kind::Torn => "cancelled transactions applied in part (broken)",
            Kind::PagedQuery => "query pages ended early (more to read)",
        }
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    by_kind: [AtomicU64; Kind::ALL.len()],
    requests: AtomicU64,
    writes: AtomicU64,
    /// Late writes not applied yet.
    pub(crate) late_pending: AtomicU64,
    /// `DescribeStream` calls (AWS serves about 10 a second per account and region).
    pub(crate) describe_stream: AtomicU64,
}

impl Counters {
    pub(crate) fn add(&self, kind: Kind) {
        let i = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        self.by_kind[i].fetch_add(1, Ordering::Relaxed);
    }
}

/// What the proxy saw and did so far.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub requests: u64,
    /// Item writes admitted (a transaction counts each of its items).
    pub writes: u64,
    pub injected: BTreeMap<Kind, u64>,
    /// The item written most often within one second, and how often.
    pub hottest: Option<(String, u32)>,
    /// Capacity units by operation, as AWS bills them.
    pub units: BTreeMap<String, Units>,
    /// Late writes still waiting to land.
    pub late_pending: u64,
    /// `DescribeStream` calls received.
    pub describe_stream: u64,
    /// Units by partition key, the most used first (with [`Faults::partitions`] set).
    pub keys: Vec<KeyUse>,
}

/// What calls of one operation consumed, as AWS bills them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Units {
    pub calls: u64,
    pub write: f64,
    pub read: f64,
}

impl Report {
    /// Units consumed since `before` (an earlier report of the same proxy), all operations.
    pub fn units_since(&self, before: &Report) -> Units {
        let total = |r: &Report| {
            r.units.values().fold(Units::default(), |a, u| Units {
                calls: a.calls + u.calls,
                write: a.write + u.write,
                read: a.read + u.read,
            })
        };
        let (now, then) = (total(self), total(before));
        Units {
            calls: now.calls - then.calls,
            write: now.write - then.write,
            read: now.read - then.read,
        }
    }
}

impl Report {
    pub fn get(&self, kind: Kind) -> u64 {
        self.injected.get(&kind).copied().unwrap_or(0)
    }

    /// This report with only the faults injected since `before` (an earlier report of the
    /// same proxy): what one phase of a run injected. Requests, writes and units stay the
    /// whole run's.
    pub fn since(&self, before: &Report) -> Report {
        let mut r = self.clone();
        for (kind, n) in r.injected.iter_mut() {
            *n = n.saturating_sub(before.get(*kind));
        }
        r
    }

    pub fn total_injected(&self) -> u64 {
        self.injected.values().sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} requests, {} item writes; faults injected:",
            self.requests, self.writes
        )?;
        for kind in Kind::ALL {
            writeln!(f, "    {:<34} {}", kind.name(), self.get(kind))?;
        }
        for k in self.keys.iter().filter(|k| k.throttled > 0).take(5) {
            writeln!(
                f,
                "  refused on {}: {} times ({:.0} write, {:.0} read units spent)",
                k.key, k.throttled, k.write, k.read
            )?;
        }
        match &self.hottest {
            Some((item, n)) => write!(f, "  most-written item: {item} at {n} writes/s"),
            None => write!(f, "  most-written item: none"),
        }
    }
}

pub(crate) struct Shared {
    pub(crate) faults: Mutex<Faults>,
    pub(crate) counters: Counters,
    pub(crate) rng: Mutex<rng::Rng>,
    pub(crate) limiter: limiter::Limiter,
    pub(crate) holds: items::Holds,
    pub(crate) schemas: items::Schemas,
    pub(crate) tokens: items::Tokens,
    pub(crate) streams: streams::Streams,
    pub(crate) capacity: capacity::Capacity,
    pub(crate) ledger: partitions::Ledger,
    pub(crate) recent: lag::RecentWrites,
}

impl Shared {
    pub(crate) fn new(faults: Faults, seed: u64) -> Arc<Shared> {
        Arc::new(Shared {
            faults: Mutex::new(faults),
            counters: Counters::default(),
            rng: Mutex::new(rng::Rng::new(seed)),
            limiter: limiter::Limiter::default(),
            holds: items::Holds::default(),
            schemas: items::Schemas::default(),
            tokens: items::Tokens::default(),
            streams: streams::Streams::default(),
            capacity: capacity::Capacity::default(),
            ledger: partitions::Ledger::default(),
            recent: lag::RecentWrites::default(),
        })
    }

    pub(crate) fn faults(&self) -> Faults {
        self.faults.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// True with probability `rate`.
    pub(crate) fn roll(&self, rate: f64) -> bool {
        rate > 0.0
            && self
                .rng
                .lock()
                .map(|mut r| r.unit() < rate)
                .unwrap_or(false)
    }

    pub(crate) fn between(&self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        self.rng
            .lock()
            .map(|mut r| lo + r.below(hi - lo + 1))
            .unwrap_or(lo)
    }

    pub(crate) fn report(&self) -> Report {
        let injected = Kind::ALL
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, self.counters.by_kind[i].load(Ordering::Relaxed)))
            .collect();
        Report {
            requests: self.counters.requests.load(Ordering::Relaxed),
            writes: self.counters.writes.load(Ordering::Relaxed),
            injected,
            hottest: self.limiter.hottest(),
            units: self.capacity.units(),
            late_pending: self.counters.late_pending.load(Ordering::Relaxed),
            describe_stream: self.counters.describe_stream.load(Ordering::Relaxed),
            keys: self.ledger.keys(),
        }
    }
}
