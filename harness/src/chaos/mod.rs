//! `ops-harness chaos`: several consoles on one set of tables, reached through a DynamoDB
//! that fails the way AWS's does (the `dynamodb-faults` proxy: transaction conflicts,
//! throttles, 500s, resets, lost answers, empty stream pages, shard splits, outages), while
//! clients that retry with the same keys send events, publishes, measurements and
//! kill-switch flips, and consoles are killed at random. Then the promises are checked
//! against DynamoDB directly: every acknowledged request is stored, no effect happened
//! twice, every 5xx carried `Retry-After`, inbox counters match a recount (after removals
//! the consoles' stream consumers had to count through the faulty stream), and every audit
//! record has its action and every action its audit record.

mod automation;
mod checks;
pub(crate) mod clients;
mod hang;
mod hot;
pub(crate) mod procs;
mod resend;
mod timers;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use dynamodb_faults::{Faults, Kind, Outage, Proxy};
use tokio::time::Instant;

use clients::{Acked, Http, Operation, Tally};
use ops_console::model::api_keys::ApiScope;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::dynamo_local::{self, DynamoLocal};
use ops_console::server::seed::Rng;
use ops_console::server::services::api_keys::ApiKeys;
use ops_console::server::store::{schema, Connection, Store};
use procs::{free_port, Console, Receiver};

pub struct Options {
    pub seconds: u64,
    pub clients: usize,
    pub consoles: usize,
    pub seed: u64,
    pub dir: PathBuf,
    /// A console broken on purpose (the checker's own tests): the run must fail.
    pub broken: Option<Break>,
    /// How long clients keep retrying after the storm before they give up.
    pub give_up_seconds: u64,
}

/// What a deliberately broken run breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// DynamoDB unreachable for the whole storm: the consoles answer 503 to everything.
    Unavailable,
    /// The second console hashes keys with another `IDEMPOTENCY_SECRET`.
    OtherSecret,
    /// The second console talks to DynamoDB Local directly, not through the proxy.
    BypassProxy,
    /// The measurements table throttles every request for the whole storm: one kind of
    /// operation fails while the others are acknowledged.
    MeasurementsDown,
    /// Every condition of a write to the measurements table is made true: a repeat or a
    /// conflicting payload is accepted again.
    MeasurementsUnconditioned,
    /// The expiry phase reads the feeds with an API key the consoles do not know: every
    /// read is refused.
    FeedsUnread,
    /// The `ops` messages live 30 days, not an hour: the expiry phase has nothing to expire.
    NothingExpires,
    /// A transaction to the measurements table cancelled at random (a fifth of them) has
    /// its last item, the hourly counter, applied anyway, as moto's server does.
    TornTransactions,
    /// Flips name themselves in their reasons by a phone number, which the console redacts:
    /// their changes cannot be found by the key.
    RedactedFlipKeys,
}

impl Break {
    /// The breaks whose run goes through the expiry phase (the others are about the storm).
    fn expires(self) -> bool {
        matches!(self, Break::FeedsUnread | Break::NothingExpires)
    }
}

/// The least share of the clients' operations of each kind that must end acknowledged (for
/// a flip: with its final answer, a 409 when another came first). Under these faults a
/// correct console acknowledges nearly every one; the rest are requests still unanswered
/// when the clients give up.
pub const MIN_ACKED_SHARE: f64 = 0.6;

/// The access key the consoles sign with (DynamoDB Local takes letters and digits only).
/// The proxy forwards everything as the harness's own key, so a console that reaches
/// DynamoDB Local directly works in a database of its own (DynamoDB Local keeps one per
/// key), where the harness finds it.
const CONSOLE_KEY: &str = "chaosconsole";
/// The receiver's concurrency limit in the run: below what two consoles send at once (4 each).
const RECEIVER_SLOTS: u64 = 3;
/// The receiver's rate limit in the run (every console together): requests a second, and
/// the burst above it; below what two consoles send unlimited (about 13 a second here), so
/// the resend of the storm and the drains after the receiver's down stretches press on it.
const RECEIVER_RATE: usize = 5;
const RECEIVER_BURST: usize = 5;
/// The window the rate is checked over.
const RATE_WINDOW_S: usize = 6;

/// The faults switched on for the whole run (outages and kills come on top). Every kind
/// switched on must be injected at least once: the rates are set so that a 25-second run
/// gives each a few dozen chances at least.
pub fn steady_faults() -> Faults {
    Faults {
        conflicts: true,
        hold_ms: (2, 8),
        conflict_rate: 0.02,
        throttle_rate: 0.02,
        throttle_matching: String::new(),
        item_writes_per_s: 0,
        internal_error_rate: 0.01,
        reset_rate: 0.01,
        reset_matching: String::new(),
        lost_answer_rate: 0.03,
        lost_answer_hang_ms: 0,
        empty_page_rate: 0.3,
        split_after_records: 60,
        outage: Outage::None,
        partial_batch_rate: 0.2,
        partial_batch_keeps: 0,
        // Pages of 10 items: every reader that must read on past a page does, often.
        query_page_items: 10,
        error_after_commit_rate: 0.02,
        late_write_rate: 0.02,
        late_write_ms: 1500,
        late_write_matching: String::new(),
        // AWS's partitions at 0.8 % of their units (8 write, 24 read a second): the busiest
        // keys of the run (a user's measurements: about ten units each) pass that now and
        // then and are refused, as a hot partition is on AWS; no table quota.
        partitions: Some(dynamodb_faults::Limits {
            partition_write_per_s: 8.0,
            partition_read_per_s: 24.0,
            table_write_per_s: 0.0,
            table_read_per_s: 0.0,
            window_s: 10.0,
        }),
        // A second behind: the outbox claims meet it tens of times in a short run (at
        // 300 ms a loaded machine met it twice, or not at all, in 25 s).
        index_lag_ms: 1000,
        index_lag_matching: String::new(),
        expired_iterator_rate: 0.1,
        stream_limit_rate: 0.1,
        trimmed_rate: 0.3,
        // A trim loses nothing unread here: the inbox counters must match a recount.
        trim_loses: 0,
        // The indexes the consoles read are built: an upgrade's backfill is tests/it's.
        backfilling_indexes: Vec::new(),
        // Broken consoles' and databases' business (`--broken measurements-unconditioned`,
        // `torn-transactions`).
        ignore_conditions_matching: String::new(),
        tear_cancelled_matching: String::new(),
    }
}

#[derive(Debug, Default)]
pub struct Disruptions {
    pub console_kills: u32,
    pub refused_outages: u32,
    pub hung_outages: u32,
}

pub(crate) const SECRET: &str = "chaos-idempotency-secret-0123456789abcdef";
const OTHER_SECRET: &str = "chaos-another-secret-for-the-broken-run-0";

/// What a console is started with: where it finds DynamoDB, and its secret.
pub(crate) struct ConsoleSetup<'a> {
    pub(crate) endpoint: String,
    pub(crate) secret: &'a str,
}

pub(crate) fn console_env(
    setup: &ConsoleSetup<'_>,
    port: u16,
    hook: (u16, &str),
    dir: &std::path::Path,
) -> Vec<(String, String)> {
    let (hook_port, hook_secret) = hook;
    vec![
        ("OPS_DYNAMODB_ENDPOINT", setup.endpoint.clone()),
        ("AWS_ACCESS_KEY_ID", CONSOLE_KEY.into()),
        ("AWS_SECRET_ACCESS_KEY", "chaos".into()),
        ("OPS_APP_SITE_ADDR", format!("127.0.0.1:{port}")),
        ("OPS_APP_DATA_DIR", dir.display().to_string()),
        ("OPS_APP_DEMO_DATA", "false".into()),
        // Every console must hash keys with the same secret, or a retry that lands on
        // another console would not find its key.
        ("IDEMPOTENCY_SECRET", setup.secret.into()),
        (
            "OPS_EVENTS_WEBHOOK_URL",
            format!("http://127.0.0.1:{hook_port}/hook"),
        ),
        ("OPS_EVENTS_WEBHOOK_SECRET", hook_secret.into()),
        // The receiver listens on this machine.
        (
            "OPS_OPERATIONS_OUTBOUND_ALLOWED_NETWORKS",
            "127.0.0.0/8".into(),
        ),
        // Shorter than the receiver's slow answers: those attempts end "unknown".
        ("OPS_EVENTS_WEBHOOK_TIMEOUT_MS", "2000".into()),
        // About a minute in all: longer than any stretch the receiver is down.
        (
            "OPS_EVENTS_RETRY_SCHEDULE",
            "1s,2s,3s,5s,8s,10s,10s,10s,10s".into(),
        ),
        ("OPS_EVENTS_DISPATCH_POLL_MS", "200".into()),
        // The receiver's down stretches open the breaker; a probe this often closes it
        // within the run.
        ("OPS_EVENTS_BREAKER_PROBE_SECONDS", "2".into()),
        // Every console together: at most this many requests at the receiver at once.
        (
            "OPS_EVENTS_RECEIVER_CONCURRENCY",
            RECEIVER_SLOTS.to_string(),
        ),
        // Every console together: at most rate × w + burst requests in any w seconds.
        ("OPS_EVENTS_RECEIVER_RATE", RECEIVER_RATE.to_string()),
        ("OPS_EVENTS_RECEIVER_BURST", RECEIVER_BURST.to_string()),
        ("OPS_EVENTS_LEASE_SECONDS", "3".into()),
        ("OPS_IDEMPOTENCY_STALE_SECONDS", "3".into()),
        ("OPS_INBOX_STREAM_LEASE_SECONDS", "3".into()),
        (
            "OPS_OPERATIONS_REQUEST_DEADLINE_MS",
            hang::REQUEST_DEADLINE.as_millis().to_string(),
        ),
        ("RUST_LOG", "warn".into()),
        ("LEPTOS_SITE_ROOT", "target/site".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

pub(crate) async fn connect(endpoint: &str, config: &Config) -> Store {
    Store::connect(Connection {
        endpoint: Some(endpoint),
        region: &config.dynamodb.region,
        table_prefix: "",
        env: config.env.as_str(),
    })
    .await
}

/// The tenant and inbox the publishes go to: messages of category `ops` live an hour,
/// so that the expiry phase can remove them as DynamoDB's TTL would.
pub(crate) async fn prepare_inbox(store: &Store) -> Result<(), String> {
    prepare_inbox_with(store, "1h").await
}

/// [`prepare_inbox`], the `ops` messages living `ops_ttl`.
async fn prepare_inbox_with(store: &Store, ops_ttl: &str) -> Result<(), String> {
    use ops_console::server::contract::inbox::{InboxSettings, TenantSettings};
    use ops_console::server::domain::inbox::keys::{InboxKey, TenantKey};
    let inbox = ops_console::server::services::inbox::Inbox::new(store.clone(), 365);
    let now = chrono::Utc::now();
    let (tenant, news) = (TenantKey::parse("chaos"), InboxKey::parse("news"));
    let (tenant, news) = (
        tenant.map_err(|e| e.to_string())?,
        news.map_err(|e| e.to_string())?,
    );
    inbox
        .put_tenant(
            &tenant,
            TenantSettings {
                title: Some("Chaos".into()),
                ttl: Some("30d".into()),
            },
            now,
        )
        .await
        .map_err(|e| e.to_string())?;
    let body = InboxSettings {
        title: Some("News".into()),
        description: None,
        ttl: Some(
            [("default", "30d"), ("ops", ops_ttl)]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        ),
    };
    inbox
        .put_inbox(&tenant, &news, body, now)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// What a run stands on: its own DynamoDB Local (its log in the run's directory), the
/// tables bootstrapped, an API key with every scope, the inbox the publishes go to, the
/// proxy in front of DynamoDB Local (no faults yet), the receiver of side effects, and the
/// console binary.
pub(crate) struct Stage {
    pub(crate) local: DynamoLocal,
    pub(crate) config: Config,
    /// DynamoDB Local directly (not through the proxy).
    pub(crate) store: Store,
    pub(crate) key: String,
    pub(crate) proxy: Proxy,
    pub(crate) receiver: Arc<Receiver>,
    pub(crate) hook_port: u16,
    pub(crate) exe: std::path::PathBuf,
}

/// Sets the stage in `dir` (emptied first); `name` names the API key.
pub(crate) async fn stage(dir: &std::path::Path, name: &str, seed: u64) -> Result<Stage, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let exe = procs::console_binary()?;
    let local = DynamoLocal::start(dynamo_local::Options {
        jar: None,
        data_dir: None,
        port: None,
        log_file: Some(dir.join("dynamodb-local.log")),
    })
    .map_err(|e| e.to_string())?;
    let config = Config::for_tests(&local.endpoint(), "");
    let store = connect(&local.endpoint(), &config).await;
    store
        .wait_until_reachable(Duration::from_secs(60))
        .await
        .map_err(|e| e.to_string())?;
    schema::bootstrap(&store).await.map_err(|e| e.to_string())?;
    let key = ApiKeys::new(store.clone(), Clock::default(), &config.ttl)
        .create_api_key(name, &ApiScope::ALL, 1, name)
        .await
        .map_err(|e| e.to_string())?;
    prepare_inbox(&store).await?;
    let proxy = Proxy::start(&local.endpoint(), Faults::default(), seed)
        .await
        .map_err(|e| format!("proxy: {e}"))?;
    // Whatever the consoles sign with, the proxy reaches the harness's database.
    proxy.forward_as(&std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "local".into()));
    let receiver = Arc::new(Receiver::new());
    let hook_port = procs::start_receiver(receiver.clone()).await?;
    Ok(Stage {
        local,
        config,
        store,
        key,
        proxy,
        receiver,
        hook_port,
        exe,
    })
}

/// Runs the harness; the broken promises (none: every check held).
pub async fn run(opts: &Options) -> Result<Vec<String>, String> {
    let began = Instant::now();
    let mut phases: Vec<(&str, Duration)> = Vec::new();
    // The harness reads and checks DynamoDB directly; only the consoles go through the proxy.
    let Stage {
        local,
        config,
        store,
        key,
        proxy,
        receiver,
        hook_port,
        exe,
    } = stage(&opts.dir, "chaos", opts.seed).await?;
    let hook_secret = receiver.secret.expose();
    let mut consoles = Vec::new();
    for i in 0..opts.consoles.max(1) {
        let port = free_port()?;
        let second = i == 1;
        let setup = ConsoleSetup {
            endpoint: match opts.broken {
                Some(Break::BypassProxy) if second => local.endpoint(),
                _ => proxy.endpoint(),
            },
            secret: match opts.broken {
                Some(Break::OtherSecret) if second => OTHER_SECRET,
                _ => SECRET,
            },
        };
        let mut env = console_env(
            &setup,
            port,
            (hook_port, &hook_secret),
            &opts.dir.join(format!("console-{i}")),
        );
        // A fleet halfway through turning `events.due_index` on: every other console
        // writes the due group on `due-index`, the rest on `outbox-index`; each delivers
        // what the others queued.
        env.push(("OPS_EVENTS_DUE_INDEX".into(), (i % 2 == 0).to_string()));
        // So does a day's events: over 64 shards on one, the release before's 32 on the
        // other; both list all of them.
        env.push((
            "OPS_EVENTS_DAY_SHARDS".into(),
            if i % 2 == 0 { "64" } else { "32" }.into(),
        ));
        let log = opts.dir.join(format!("console-{i}.log"));
        let mut c = Console::new(exe.clone(), port, env, log);
        c.start()?;
        consoles.push(c);
    }
    for c in &consoles {
        if !c.healthy(Duration::from_secs(60)).await {
            return Err("a console did not start (see target/chaos/console-*.log)".into());
        }
    }
    phases.push(("ready", began.elapsed()));
    let hot_http = Http::new(
        consoles.iter().map(|c| c.port).collect(),
        key.clone(),
        Arc::new(Tally::default()),
        0,
    );
    // A broken run is about its break: the hot-item run is the healthy runs' business.
    let hot_run = match opts.broken {
        None => hot::run(&proxy, &hot_http).await,
        Some(_) => hot::HotRun::default(),
    };
    print_hot(&hot_run);
    if opts.broken == Some(Break::NothingExpires) {
        prepare_inbox_with(&store, "30d").await?;
    }
    // The faults the storm and what follows it injected are counted from here: the
    // hot-item run turns conflicts on by itself.
    let before_storm = proxy.report();
    proxy.set(steady_faults());
    if opts.broken == Some(Break::Unavailable) {
        proxy.update(|f| f.outage = Outage::Refuse);
    }
    if opts.broken == Some(Break::MeasurementsDown) {
        proxy.update(|f| {
            f.throttle_rate = 1.0;
            // Its name as a request names the table (`"measurements-<env>`).
            f.throttle_matching = format!("\"{}-", schema::MEASUREMENTS.base);
        });
    }
    if opts.broken == Some(Break::TornTransactions) {
        proxy.update(|f| {
            f.conflict_rate = 0.2;
            f.tear_cancelled_matching = format!("\"{}-", schema::MEASUREMENTS.base);
        });
    }
    if opts.broken == Some(Break::MeasurementsUnconditioned) {
        proxy.update(|f| {
            f.ignore_conditions_matching = format!("\"{}-", schema::MEASUREMENTS.base);
        });
    }

    let started = Instant::now();
    let storm_began = chrono::Utc::now();
    let stop = started + Duration::from_secs(opts.seconds);
    let give_up = stop + Duration::from_secs(opts.give_up_seconds);
    let tally = Arc::new(Tally::default());
    let ports: Vec<u16> = consoles.iter().map(|c| c.port).collect();
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..opts.clients {
        let http = Http::new(ports.clone(), key.clone(), tally.clone(), id as u64);
        let flip_keys = match opts.broken {
            Some(Break::RedactedFlipKeys) => clients::FlipKeys::Redacted,
            _ => clients::FlipKeys::Letters,
        };
        tasks.spawn(clients::client(
            http,
            id,
            opts.seed,
            (stop, give_up),
            flip_keys,
        ));
    }

    let weather = tokio::spawn(procs::weather(receiver.clone(), opts.seed, stop));
    let mut rng = Rng::new(opts.seed);
    let mut hits = Disruptions::default();
    while Instant::now() + Duration::from_millis(1500) < stop {
        tokio::time::sleep(Duration::from_millis(1500 + rng.below(3000))).await;
        if opts.broken != Some(Break::Unavailable) {
            disrupt(&mut rng, &proxy, &mut consoles, &mut hits).await?;
        }
    }

    let mut runs = ClientRuns::default();
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| e.to_string())? {
            Ok(r) => runs.add(r),
            Err(e) => runs.errors.push(e),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    phases.push(("storm", began.elapsed()));
    if opts.broken == Some(Break::Unavailable) {
        proxy.update(|f| f.outage = Outage::None);
    }
    // A hang past the SDK's timeouts (a broken run is about its break).
    let long_hang = match opts.broken {
        None => {
            let http = Http::new(ports.clone(), key.clone(), tally.clone(), 9);
            let h = hang::run(&proxy, &http, consoles.len()).await;
            println!(
                "long hang: DynamoDB unanswering for {:?}; {} of {} requests answered 503 by the {:?} deadline (longest {:.1?}); {} events sent meanwhile acknowledged after it",
                hang::LONG_HANG,
                h.in_time,
                h.asked,
                hang::REQUEST_DEADLINE,
                h.longest,
                h.acked.len()
            );
            runs.acked.extend(h.acked.iter().cloned());
            runs.sent.extend(h.sent.iter().cloned());
            h.violations
        }
        Some(_) => Vec::new(),
    };
    phases.push(("long hang", began.elapsed()));

    // Expiry: the short-lived messages pass their expiry and stay a while (TTL deletes
    // late), then are removed as DynamoDB's TTL would, while the faults and the kills go
    // on; no feed may show one once expired, and the consoles' stream consumers must count
    // every removal once.
    let http = Http::new(ports.clone(), key.clone(), tally.clone(), 7);
    // A timed change made now ends about a minute later, while the expiry and the wait
    // below go on killing consoles and failing DynamoDB (a broken run is about its break).
    // So does a scheduled change set now, after a trigger URL's episode moved a switch.
    let own = Http::new(ports.clone(), key.clone(), Arc::new(Tally::default()), 8);
    let (timed, mut automatic) = match opts.broken {
        None => (
            Some(timers::start(&own).await?),
            Some(automation::start(&own, &store, &config).await?),
        ),
        Some(_) => (None, None),
    };
    // A broken run is about its break: the expiry is the healthy runs' business, and
    // that of the breaks of the expiry's own checks.
    let reader = match opts.broken {
        Some(Break::FeedsUnread) => {
            Http::new(ports.clone(), "ops_unknown".into(), tally.clone(), 7)
        }
        _ => http,
    };
    let expiry = match opts.broken {
        Some(b) if !b.expires() => Expiry::default(),
        _ => expire(&store, &proxy, &reader, &mut rng, &mut consoles, &mut hits).await?,
    };
    phases.push(("expiry", began.elapsed()));
    if let Some(started) = automatic.as_mut() {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !(timers::ended(&store).await? && automation::ran(&store).await?)
            && Instant::now() < deadline
        {
            disrupt(&mut rng, &proxy, &mut consoles, &mut hits).await?;
            tokio::time::sleep(Duration::from_millis(1000 + rng.below(2000))).await;
        }
        automation::fire_again(&own, started).await?;
    }
    proxy.set(Faults::default());
    let _ = weather.await;
    // What the storm and what followed it injected, the hot-item run's left out.
    let report = proxy.report().since(&before_storm);
    phases.push(("automation", began.elapsed()));
    let settled = settle(&store).await;
    let drained = drain_outbox(&store, &config).await;
    phases.push(("drained", began.elapsed()));
    // Everything decided since the storm began resent, with consoles dying and DynamoDB
    // failing under the job; then the outbox drains again.
    let resent = match (opts.broken, &drained) {
        (None, Ok(())) => Some(
            async {
                let s = resend::start(&own, &store, &receiver, storm_began).await?;
                let deadline = Instant::now() + Duration::from_secs(120);
                disrupt(&mut rng, &proxy, &mut consoles, &mut hits).await?;
                while !resend::finished(&store).await? && Instant::now() < deadline {
                    disrupt(&mut rng, &proxy, &mut consoles, &mut hits).await?;
                    tokio::time::sleep(Duration::from_millis(500 + rng.below(1500))).await;
                }
                drain_outbox(&store, &config).await?;
                Ok::<_, String>(s)
            }
            .await,
        ),
        _ => None,
    };
    for c in consoles.iter_mut() {
        c.stop(true);
    }
    phases.push(("resent", began.elapsed()));

    let acked = &runs.acked;
    let found = checks::check(&store, acked, &receiver).await?;
    let sent = checks::check_sent(&store, &runs.sent, acked).await?;
    print_report(
        opts,
        elapsed,
        &tally,
        acked,
        &hits,
        &report,
        expiry.removed,
        &found,
    );
    println!(
        "  sent again after an acknowledgement: {} requests ({} answered otherwise); duplicates counted from what clients sent: {}",
        runs.repeats,
        runs.repeats_differed.len(),
        sent.duplicates
    );
    let mut violations: Vec<String> = runs.errors.iter().map(|e| format!("client: {e}")).collect();
    let looked: Vec<&(&str, usize)> = found.looked.iter().chain(&sent.looked).collect();
    println!(
        "  the checks looked at: {}",
        looked
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    violations.extend(
        looked
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(what, _)| format!("a check looked at nothing: {what} 0")),
    );
    violations.extend(found.violations.iter().cloned());
    violations.extend(sent.violations.iter().cloned());
    violations.extend(
        runs.repeats_differed
            .iter()
            .map(|r| format!("a repeat: {r}")),
    );
    violations.extend(expiry.violations.iter().cloned());
    violations.extend(long_hang);
    let (opened, closed) = breaker_changes(&store).await?;
    println!("  receiver breaker: opened {opened} times, closed {closed} times (one probe every 2 s while open)");
    // The drain waited for every parked action, so at most the last opening may be left
    // open, and only with nothing to probe (its close lost to an outage, say).
    if closed > opened || opened > closed + 1 {
        violations.push(format!(
            "the receiver's breaker opened {opened} times and closed {closed} times"
        ));
    }
    let most = receiver
        .most_at_once
        .load(std::sync::atomic::Ordering::SeqCst);
    println!("  receiver slots: at most {most} requests at the receiver at once (slow answers aside), {RECEIVER_SLOTS} slots");
    if most > RECEIVER_SLOTS || most == 0 {
        violations.push(format!(
            "{most} requests at the receiver at once, with {RECEIVER_SLOTS} slots"
        ));
    }
    if opts.broken.is_none() {
        violations.extend(rate_check(&receiver));
    }
    let phases: Vec<String> = phases
        .iter()
        .map(|(name, at)| format!("{name} {:.0} s", at.as_secs_f64()))
        .collect();
    println!("  phases (time from the start): {}", phases.join(", "));
    match &resent {
        Some(Ok(s)) => violations.extend(resend::check(&store, &receiver, s).await?),
        Some(Err(e)) => violations.push(format!("the resend: {e}")),
        None => {}
    }
    violations.extend(timers::check(&store, timed.is_some()).await?);
    if let Some(started) = &automatic {
        violations.extend(automation::check(&store, started).await?);
    }
    violations.extend(proof_of_work(&tally, acked, &report));
    violations.extend(bypassed(&local.endpoint(), &config).await);
    let hot_missing = hot_http.tally().without_retry_after.load(Ordering::Relaxed);
    if hot_missing > 0 {
        violations.push(format!(
            "the hot-item run answered {hot_missing} 5xx without Retry-After"
        ));
    }
    if let Err(e) = settled {
        violations.push(e);
    }
    if let Err(e) = drained {
        violations.push(e);
    }
    if hot_run.throttled > 0 {
        violations.push(format!(
            "the hot-item run was throttled {} times",
            hot_run.throttled
        ));
    }
    violations.extend(
        hot_run
            .failures
            .iter()
            .map(|f| format!("hot-item run: {f}")),
    );
    let missing = tally.without_retry_after.load(Ordering::Relaxed);
    if missing > 0 {
        let examples = tally
            .bad_answers
            .lock()
            .map(|b| b.join("; "))
            .unwrap_or_default();
        violations.push(format!(
            "{missing} 5xx answers without Retry-After ({examples})"
        ));
    }
    for v in &violations {
        println!("  VIOLATION: {v}");
    }
    println!(
        "  {}",
        if violations.is_empty() {
            "every check held"
        } else {
            "checks FAILED"
        }
    );
    Ok(violations)
}

/// One disruption: a console killed (and restarted), or DynamoDB unreachable for a while
/// (connections refused, or requests left unanswered).
async fn disrupt(
    rng: &mut Rng,
    proxy: &Proxy,
    consoles: &mut [Console],
    hits: &mut Disruptions,
) -> Result<(), String> {
    let down = Duration::from_millis(300 + rng.below(1700));
    match rng.below(10) {
        0..=5 => {
            let i = rng.below(consoles.len() as u64) as usize;
            let c = &mut consoles[i];
            c.stop(false);
            hits.console_kills += 1;
            tokio::time::sleep(down.min(Duration::from_millis(1500))).await;
            c.start()?;
            if !c.healthy(Duration::from_secs(60)).await {
                return Err("a console did not come back".into());
            }
        }
        n => {
            let outage = if n < 8 { Outage::Refuse } else { Outage::Hang };
            match outage {
                Outage::Refuse => hits.refused_outages += 1,
                _ => hits.hung_outages += 1,
            }
            proxy.update(|f| f.outage = outage);
            tokio::time::sleep(down).await;
            proxy.update(|f| f.outage = Outage::None);
        }
    }
    Ok(())
}

/// The clients' runs put together.
#[derive(Default)]
struct ClientRuns {
    acked: Vec<Acked>,
    sent: Vec<clients::Sent>,
    repeats: u64,
    repeats_differed: Vec<String>,
    errors: Vec<String>,
}

impl ClientRuns {
    fn add(&mut self, r: clients::ClientRun) {
        self.acked.extend(r.acked);
        self.sent.extend(r.sent);
        self.repeats += r.repeats;
        self.repeats_differed.extend(r.repeats_differed);
    }
}

/// A run proves something only if it did work and met faults: enough of the clients'
/// operations of every kind ended acknowledged (a kind that fails whole would otherwise
/// hide behind the others), and every kind of fault switched on was injected.
fn proof_of_work(tally: &Tally, acked: &[Acked], report: &dynamodb_faults::Report) -> Vec<String> {
    let mut out = Vec::new();
    let operations = tally.operations();
    println!(
        "  acknowledged: {} of {operations} client operations; by kind (at least {:.0} % each must be):",
        acked.len(),
        MIN_ACKED_SHARE * 100.0
    );
    for op in Operation::ALL {
        let (tried, settled) = tally.of(op);
        let share = settled as f64 / tried.max(1) as f64;
        println!(
            "    {:<17} {settled} of {tried} ({:.0} %)",
            op.name(),
            share * 100.0
        );
        if tried == 0 || share < MIN_ACKED_SHARE {
            out.push(format!(
                "only {:.0} % of {tried} client operations were acknowledged for {} (at least {:.0} % must be): the run proves nothing for them",
                share * 100.0,
                op.name(),
                MIN_ACKED_SHARE * 100.0
            ));
        }
    }
    // Those switched on, and what the storm's lost answers, late writes and index lag
    // must bring about: a transaction sent again under its token, after it committed and
    // while it was still applying; an index showing an item where it no longer is (the
    // outbox's claims and deliveries make dozens). Old versions are served too, but the
    // dispatcher's reads filter most of them out (a claimed copy's lease is in the
    // future), so a run may see none: `due_index` tests them.
    let must = steady_faults().switched_on().into_iter().chain([
        Kind::TokenReplay,
        Kind::TokenInProgress,
        Kind::IndexGhost,
    ]);
    for kind in must {
        if report.get(kind) == 0 {
            out.push(format!(
                "the fault \"{}\" was injected 0 times in the storm",
                kind.name()
            ));
        }
    }
    out
}

/// Tables that exist in the database of the consoles' own access key: only a console
/// that reached DynamoDB Local without the proxy could have made them.
async fn bypassed(local: &str, config: &Config) -> Vec<String> {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(config.dynamodb.region.clone()))
        .endpoint_url(local)
        .credentials_provider(Credentials::new(CONSOLE_KEY, "chaos", None, None, "chaos"))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(conf);
    match client.list_tables().send().await {
        Ok(out) if !out.table_names().is_empty() => vec![format!(
            "requests reached DynamoDB Local without the proxy: the consoles' own database has {} tables",
            out.table_names().len()
        )],
        Ok(_) => Vec::new(),
        Err(e) => vec![format!("could not look for requests that bypassed the proxy: {e}")],
    }
}

/// What the expiry phase found.
#[derive(Default)]
struct Expiry {
    removed: usize,
    violations: Vec<String>,
}

/// The short-lived (`ops`) messages pass their expiry (as if an hour went by for them) and
/// stay there a while, as DynamoDB's TTL leaves expired items for hours or days; every
/// user's feed is read through the consoles meanwhile, and none may show one. Then every
/// expired item is deleted, page by page, with disruptions in between.
async fn expire(
    store: &Store,
    proxy: &Proxy,
    http: &Http,
    rng: &mut Rng,
    consoles: &mut [Console],
    hits: &mut Disruptions,
) -> Result<Expiry, String> {
    let expired = checks::expire_short_lived(store).await?;
    let (mut violations, mut read) = (Vec::new(), std::collections::BTreeSet::new());
    for _ in 0..3 {
        let (shown, feeds) = checks::feeds_hide(http, &expired).await;
        violations.extend(shown);
        read.extend(feeds);
        if rng.below(2) == 0 {
            disrupt(rng, proxy, consoles, hits).await?;
        }
    }
    if read.len() < checks::FEED_USERS as usize {
        violations.push(format!(
            "the feeds of {} of {} users could not be read: the expiry was not checked there",
            checks::FEED_USERS as usize - read.len(),
            checks::FEED_USERS
        ));
    }
    if expired.is_empty() {
        violations.push("no message was short-lived: the expiry phase expired nothing".into());
    }
    let now = chrono::Utc::now().timestamp();
    let mut start = None;
    let mut removed = 0;
    loop {
        let (_, deleted, next) =
            ops_console::server::store::inbox::stream::sweep_page(store, now, start)
                .await
                .map_err(|e| e.to_string())?;
        removed += deleted;
        if rng.below(3) == 0 {
            disrupt(rng, proxy, consoles, hits).await?;
        }
        match next {
            Some(n) => start = Some(n),
            None => break,
        }
    }
    if removed == 0 {
        violations.push("the expiry phase removed nothing: no removal was counted".into());
    }
    // A few more seconds of faults while the consumers read the removals.
    tokio::time::sleep(Duration::from_secs(3)).await;
    disrupt(rng, proxy, consoles, hits).await?;
    Ok(Expiry {
        removed,
        violations,
    })
}

/// Waits until the consoles' stream consumers have counted every removal (the inbox
/// counters agree with a recount), for up to a minute.
/// After the storm, as an operator would: safe mode off if a client left it on, what it
/// held released (a bulk job), then every side effect delivered by the consoles within
/// two minutes (their retry schedule is about one).
async fn drain_outbox(store: &Store, config: &Config) -> Result<(), String> {
    use ops_console::server::services::events::outbox::{job_op, BulkRequest};
    use ops_console::server::services::events::Events;
    use ops_console::server::store::events::outbox::Group;
    use ops_console::server::store::events::outbox_reads::{count, Filter};
    let err = |e: ops_console::server::store::StoreError| e.to_string();
    let switches = ops_console::server::services::kill_switches::Switches::new(
        store.clone(),
        Clock::default(),
        ops_console::server::services::kill_switches::Ttls::from(&config.ttl),
    );
    let now = switches.load().await.map_err(|e| format!("{e:?}"))?;
    if now.safe_mode.enabled {
        let req = ops_console::server::domain::kill_switches::ChangeRequest {
            switch: ops_console::model::kill_switches::Switch::SafeMode,
            enable: false,
            expected_version: now.version,
            reason: "chaos run over".into(),
            confirmed: true,
            ends: None,
            emergency: false,
        };
        let origin = ops_console::server::services::kill_switches::Origin {
            actor: "chaos",
            idempotency_key: "chaos-drain",
            action_id: "chaos-drain",
        };
        switches
            .change(&req, &origin)
            .await
            .map_err(|e| format!("{e:?}"))?;
    }
    let events = Events::new(
        store.clone(),
        Clock::default(),
        std::sync::Arc::new(config.clone()),
        ops_console::server::crypto::Seal::from_keys([9; 32], [9; 32]),
    )?;
    if count(store, Group::Held, &Filter::default())
        .await
        .map_err(err)?
        > 0
    {
        let req = BulkRequest {
            op: job_op("release").map_err(|e| e.to_string())?,
            filter: Filter::default(),
            reason: "chaos run over".into(),
            actor: "chaos".into(),
            form_key: "chaos-release".into(),
        };
        events
            .start_bulk("held", req)
            .await
            .map_err(|e| e.to_string())?;
        for _ in 0..50 {
            events.run_jobs().await.map_err(err)?;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let due = count(store, Group::Due, &Filter::default())
            .await
            .map_err(err)?;
        let held = count(store, Group::Held, &Filter::default())
            .await
            .map_err(err)?;
        if due + held == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{due} side effects still due and {held} held two minutes after the run"
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// How often the receiver's breaker opened and closed over the run, from its audit.
async fn breaker_changes(store: &Store) -> Result<(usize, usize), String> {
    use ops_console::server::store::audit::list_partition;
    use ops_console::server::store::events::receiver::AUDIT_PARTITION;
    let (mut opened, mut closed, mut cursor) = (0, 0, None::<String>);
    loop {
        let page = list_partition(store, AUDIT_PARTITION, cursor.as_deref(), 500)
            .await
            .map_err(|e| e.to_string())?;
        for a in &page.items {
            match a.action_type.as_str() {
                "receiver_breaker_open" => opened += 1,
                "receiver_breaker_close" => closed += 1,
                _ => {}
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((opened, closed)),
        }
    }
}

async fn settle(store: &Store) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (drift, _) = ops_console::server::services::inbox::verify::verify(
            store,
            chrono::Utc::now().timestamp(),
        )
        .await
        .map_err(|e| e.to_string())?;
        if drift.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "inbox counters still disagree with a recount a minute after the run ({} counters)",
                drift.len()
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn print_hot(run: &hot::HotRun) {
    println!(
        "hot-item run: {} users' measurements (one a second each) and {} readers of one broadcast, {} writes/s per item allowed",
        hot::USERS,
        hot::USERS,
        hot::ITEM_WRITES_PER_S
    );
    println!(
        "  {} requests, throttled {} times; most-written item: {}",
        run.requests,
        run.throttled,
        match &run.hottest {
            Some((item, n)) => format!("{item} at {n} writes/s"),
            None => "none".into(),
        }
    );
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    opts: &Options,
    elapsed: f64,
    tally: &Tally,
    acked: &[Acked],
    hits: &Disruptions,
    report: &dynamodb_faults::Report,
    removed: usize,
    found: &checks::Found,
) {
    let count = |f: fn(&Acked) -> bool| acked.iter().filter(|a| f(a)).count();
    let requests = tally.requests.load(Ordering::Relaxed);
    println!(
        "chaos: {:.0} s, {} consoles, {} clients, seed {}",
        elapsed, opts.consoles, opts.clients, opts.seed
    );
    println!(
        "  load held: {} requests ({:.0}/s), {} retries, {} operations",
        requests,
        requests as f64 / elapsed.max(1.0),
        tally.retries.load(Ordering::Relaxed),
        tally.operations()
    );
    println!(
        "  acknowledged: {} events, {} publishes, {} measurements, {} flips; {} gave up unanswered",
        count(|a| matches!(a, Acked::Event { .. })),
        count(|a| matches!(a, Acked::Publish { .. })),
        count(|a| matches!(a, Acked::Measurement { .. })),
        count(|a| matches!(a, Acked::Flip { .. })),
        tally.unanswered.load(Ordering::Relaxed)
    );
    println!(
        "  5xx answers: {} ({} without Retry-After)",
        tally.server_errors.load(Ordering::Relaxed),
        tally.without_retry_after.load(Ordering::Relaxed)
    );
    println!(
        "  disruptions: {} console kills, {} DynamoDB outages refusing connections, {} leaving requests unanswered",
        hits.console_kills, hits.refused_outages, hits.hung_outages
    );
    println!(
        "  acknowledged requests lost: {}; duplicate effects: {}",
        found.lost, found.duplicate_effects
    );
    println!("  DynamoDB through the proxy: {report}");
    println!("  expiry: {removed} inbox items removed as TTL would; counted down by the consoles' stream consumers");
    println!(
        "  side effects: {} applied at the receiver from {} requests ({} refused by it with 503 and retried, {} re-sent with the same webhook-id and dropped, {} with a bad signature); it was slow {} times and down {} times",
        found.applied, found.receiver_requests, found.receiver_refused, found.resent, found.bad_signatures, found.slow_stretches, found.down_stretches
    );
}

/// The receiver's rate: at most `rate × w + burst` requests in any w seconds, plus two
/// seconds' rate for a send's way from its count to the receiver (a slot, a claim through
/// DynamoDB's faults and outages, a connection). The busiest window must hold at least
/// half the rate's worth, or the run never came near the limit and proves nothing.
fn rate_check(receiver: &Receiver) -> Vec<String> {
    let most = receiver.busiest(Duration::from_secs(RATE_WINDOW_S as u64));
    let bound = RECEIVER_RATE * (RATE_WINDOW_S + 2) + RECEIVER_BURST;
    let pressed = RECEIVER_RATE * RATE_WINDOW_S / 2;
    println!(
        "  receiver rate: at most {most} requests in any {RATE_WINDOW_S} s (rate {RECEIVER_RATE}/s, burst {RECEIVER_BURST}: at most {bound} with the way, at least {pressed} to have come near it)"
    );
    if most > bound {
        vec![format!(
            "{most} requests at the receiver within {RATE_WINDOW_S} s, rate {RECEIVER_RATE}/s and burst {RECEIVER_BURST}"
        )]
    } else if most < pressed {
        vec![format!(
            "the run never came near the receiver's rate: at most {most} requests in {RATE_WINDOW_S} s"
        )]
    } else {
        Vec::new()
    }
}
