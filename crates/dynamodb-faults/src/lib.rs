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
//! - **streams**: empty `GetRecords` pages that still carry a next iterator, and shards that
//!   close and continue in two child shards (records split between them by key).
//!
//! It is test tooling: nothing in the product depends on it.

mod errors;
mod items;
mod limiter;
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
    /// Writes per second any one item takes before it is throttled (0: no limit).
    pub item_writes_per_s: u32,
    /// Share of requests answered `InternalServerError` (500) without reaching the database.
    pub internal_error_rate: f64,
    /// Share of requests whose connection is reset before they reach the database.
    pub reset_rate: f64,
    /// Share of writes that commit and whose answer is then lost.
    pub lost_answer_rate: f64,
    /// A lost answer hangs this long before the connection is reset (0: reset at once).
    pub lost_answer_hang_ms: u64,
    /// Share of `GetRecords` calls answered with an empty page and the same position.
    pub empty_page_rate: f64,
    /// An open stream shard is closed and split in two once this many of its records have
    /// passed (0: never).
    pub split_after_records: u64,
    pub outage: Outage,
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
}

impl Kind {
    pub const ALL: [Kind; 12] = [
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
        }
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    by_kind: [AtomicU64; 12],
    requests: AtomicU64,
    writes: AtomicU64,
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
}

impl Report {
    pub fn get(&self, kind: Kind) -> u64 {
        self.injected.get(&kind).copied().unwrap_or(0)
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
        }
    }
}
