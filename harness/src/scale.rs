//! `ops-harness scale`: many consoles on AWS's partitions, scaled down.
//!
//! Several consoles behind round-robin clients, through the `dynamodb-faults` proxy with
//! AWS's partition and table limits times `scale` (`Limits::scaled`): at `--scale 0.002`
//! a partition takes 2 write and 6 read units a second, so 20 events a second stand for
//! 10,000. Every second the clients offer, open loop (a slow answer does not slow the
//! offer): events (each with one or two side effects delivered to a receiver), publishes,
//! read receipts, measurements, keyed REST writes, trigger calls, and an Overview, Audit
//! and Outbox page view. Then the outbox drains and the run prints, per operation, what was
//! offered and acknowledged, latencies, 5xx and 503s; the throttles the proxy served, by
//! key; the hottest keys as AWS's units a second they stand for; units and requests per
//! event as AWS bills them; and what 100 consoles would add.
//!
//! The run fails when the offer fell short of the asked rate (a slow machine cannot pass by
//! offering less), when nothing was acknowledged or delivered, and, with
//! `--no-throttles`, when any request was throttled.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dynamodb_faults::{Faults, Kind, Limits, Report};
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::chaos::clients::{Http, Tally};
use crate::chaos::procs::{free_port, Console};
use crate::chaos::{console_env, stage, ConsoleSetup, Stage, SECRET};
use ops_console::model::kill_switches::Switch;
use ops_console::model::users::Role;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::ids::random_hex;
use ops_console::server::seed::Rng;
use ops_console::server::services::idempotency::Secret;
use ops_console::server::services::kill_switches::{Switches, Ttls};
use ops_console::server::state::AppState;

/// AWS's limits the figures are read against.
const AWS_PARTITION_WRITE: f64 = 1_000.0;
const AWS_PARTITION_READ: f64 = 3_000.0;
/// `DescribeStream` calls AWS serves a second per account and region.
const AWS_DESCRIBE_STREAM_PER_S: f64 = 10.0;

pub struct Options {
    pub seconds: u64,
    pub consoles: usize,
    /// AWS's limits times this.
    pub scale: f64,
    /// Events offered a second (at the scale: 20 at 0.002 stand for 10,000).
    pub rate: f64,
    pub seed: u64,
    /// Fail when any request was throttled.
    pub no_throttles: bool,
    /// Each table's and global index's write and read quota on AWS, in units a second
    /// (40,000: on-demand's default; raised through Service Quotas), times `scale`.
    pub table_quota: f64,
    pub dir: PathBuf,
    /// Where the figures go as JSON.
    pub report: PathBuf,
}

/// One operation's answers.
#[derive(Default)]
struct Op {
    offered: u64,
    acked: u64,
    /// Acknowledged latencies (retries included), in milliseconds.
    took: Vec<f64>,
    server_errors: u64,
    unavailable: u64,
    /// Final answers that were not 2xx.
    refused: Vec<String>,
}

type Ops = Arc<Mutex<BTreeMap<&'static str, Op>>>;

/// Sends one request until a final answer (no answer, 5xx and 409 in-progress are tried
/// again, as the chaos clients do) and records it under `op`.
async fn send(
    http: Http,
    ops: Ops,
    op: &'static str,
    (method, path, body, idem): (Method, String, Value, Option<String>),
    cookie: Option<String>,
    give_up: Instant,
) {
    let began = Instant::now();
    let mut pause = 100u64;
    let (mut errors, mut unavailable) = (0, 0);
    let last = loop {
        let answer = http
            .once_with(
                method.clone(),
                &path,
                &body,
                idem.as_deref(),
                cookie.as_deref(),
            )
            .await;
        match answer {
            Ok((s, v))
                if s < 500
                    && !(s == 409
                        && v["type"]
                            .as_str()
                            .is_some_and(|t| t.ends_with("in-progress"))) =>
            {
                break Some(s)
            }
            Ok((s, _)) if s >= 500 => {
                errors += 1;
                if s == 503 {
                    unavailable += 1;
                }
            }
            _ => {}
        }
        if Instant::now() >= give_up {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(pause)).await;
        pause = (pause * 2).min(1000);
    };
    let Ok(mut all) = ops.lock() else {
        return;
    };
    let o = all.entry(op).or_default();
    o.server_errors += errors;
    o.unavailable += unavailable;
    match last {
        Some(s) if (200..300).contains(&s) => {
            o.acked += 1;
            o.took.push(began.elapsed().as_secs_f64() * 1000.0);
        }
        Some(s) => o.refused.push(format!("{op}: {s}")),
        None => o.refused.push(format!("{op}: no final answer")),
    }
}

fn pct(samples: &[f64], p: f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s.get(i).copied().unwrap_or(0.0)
}

/// What customers write: each event's decision queues one or two side effects.
const TEXTS: &[&str] = &[
    "hello, a quick question",
    "Where is my order? It has not arrived",
];

/// Real consoles the run's few stand for: their background work (dispatch polls, stream
/// polls) is stretched so that together it weighs on the scaled partitions what this many
/// consoles' would on AWS's.
const CONSOLES_STOOD_FOR: f64 = 100.0;

/// People signed in to the console during the run: page views rotate over their sessions
/// (one session for every view would be a hot item no support team makes).
const PEOPLE: usize = 8;

/// Signs in [`PEOPLE`] admins made for the run; their session cookies.
async fn sign_in(
    store: &ops_console::server::store::Store,
    config: &Config,
    port: u16,
) -> Result<Vec<String>, String> {
    let state = AppState::new(
        config.clone(),
        store.clone(),
        Clock::default(),
        Secret::new(SECRET.as_bytes().to_vec()),
    );
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<axum::body::Bytes>>();
    let mut cookies = Vec::new();
    for i in 0..PEOPLE {
        let (name, password) = (format!("scale-admin-{i}"), random_hex(12));
        state
            .users
            .add_user(&name, Role::Admin, &password, "scale")
            .await
            .map_err(|e| e.to_string())?;
        let form = format!("name={name}&password={password}&next=/");
        let req = hyper::Request::post(format!("http://127.0.0.1:{port}/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(http_body_util::Full::new(axum::body::Bytes::from(form)))
            .map_err(|e| e.to_string())?;
        let res = client.request(req).await.map_err(|e| e.to_string())?;
        let cookie = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with("ops_session=") && !c.starts_with("ops_session=;"))
            .and_then(|c| c.split(';').next())
            .map(str::to_string)
            .ok_or_else(|| format!("sign-in refused: {}", res.status()))?;
        cookies.push(cookie);
    }
    Ok(cookies)
}

/// Runs the scale run; the reasons it failed (none: it held).
pub async fn run(opts: &Options) -> Result<Vec<String>, String> {
    // A quota of 0 would turn the quotas off (the proxy's "no limit").
    if opts.table_quota <= 0.0 || opts.scale <= 0.0 {
        return Err("--table-quota and --scale must be above 0".into());
    }
    let Stage {
        local: _local,
        config,
        store,
        key,
        proxy,
        receiver,
        hook_port,
        exe,
    } = stage(&opts.dir, "scale", opts.seed).await?;
    let hook_secret = receiver.secret.expose();
    let mut consoles = Vec::new();
    for i in 0..opts.consoles.max(1) {
        let port = free_port()?;
        let setup = ConsoleSetup {
            endpoint: proxy.endpoint(),
            secret: SECRET,
        };
        let mut env = console_env(
            &setup,
            port,
            (hook_port, &hook_secret),
            &opts.dir.join(format!("console-{i}")),
        );
        // Each console's polls stretched by consoles / (100 × scale): the few consoles'
        // background stands for 100 consoles' on AWS's limits (events wake the dispatcher
        // at once; a poll only finds what nothing woke it for).
        let stretch = opts.consoles.max(1) as f64 / (CONSOLES_STOOD_FOR * opts.scale);
        let poll_ms = ((1_000.0 * stretch) as i64)
            .clamp(1_000, 60_000)
            .to_string();
        env.push(("OPS_INBOX_STREAM_POLL_MS".into(), poll_ms.clone()));
        // The due group on its own index, as a fleet of this release runs it.
        env.push(("OPS_EVENTS_DUE_INDEX".into(), "true".into()));
        env.push(("OPS_EVENTS_DAY_SHARDS".into(), "64".into()));
        // The receiver takes what is sent: the run is about DynamoDB.
        for (k, v) in env.iter_mut() {
            match k.as_str() {
                "OPS_EVENTS_DISPATCH_POLL_MS" => *v = poll_ms.clone(),
                "OPS_EVENTS_RECEIVER_CONCURRENCY" => *v = "32".into(),
                "OPS_EVENTS_RECEIVER_RATE" | "OPS_EVENTS_RECEIVER_BURST" => *v = "5000".into(),
                "OPS_EVENTS_LEASE_SECONDS" | "OPS_INBOX_STREAM_LEASE_SECONDS" => *v = "10".into(),
                _ => {}
            }
        }
        let mut c = Console::new(
            exe.clone(),
            port,
            env,
            opts.dir.join(format!("console-{i}.log")),
        );
        c.start()?;
        consoles.push(c);
    }
    for c in &consoles {
        if !c.healthy(Duration::from_secs(60)).await {
            return Err(format!(
                "a console did not start (see {}/console-*.log)",
                opts.dir.display()
            ));
        }
    }
    let ports: Vec<u16> = consoles.iter().map(|c| c.port).collect();
    let cookies = sign_in(&store, &config, ports[0]).await?;
    let http = Http::new(ports.clone(), key.clone(), Arc::new(Tally::default()), 0);
    // A trigger URL whose calls carry resolved alerts: each call is read and changes nothing.
    let secret = Switches::new(store.clone(), Clock::default(), Ttls::from(&config.ttl))
        .rotate_trigger(Switch::SafeMode, "scale")
        .await
        .map_err(|e| format!("the trigger URL: {e:?}"))?;
    let trigger_path = Some(format!("/api/v1/kill-switches/triggers/{secret}"));

    // Side effects go out: safe mode off, automation on (as after go-live).
    for (switch, enable) in [("safe_mode", false), ("automation_enabled", true)] {
        let now = http
            .switches(Instant::now() + Duration::from_secs(30))
            .await?;
        let body = json!({"switch": switch, "enable": enable, "expected_version": now["version"],
            "reason": "scale run", "confirm": true});
        match http
            .until_final(
                Method::POST,
                "/api/v1/kill-switches",
                &body,
                Some(&random_hex(8)),
                Instant::now() + Duration::from_secs(30),
            )
            .await
        {
            Some((200, _)) => {}
            other => return Err(format!("{switch} could not be set: {other:?}")),
        }
    }

    // Limits on from here: setting up is not the run.
    proxy.set(Faults {
        partitions: Some(Limits {
            table_write_per_s: opts.table_quota * opts.scale,
            table_read_per_s: opts.table_quota * opts.scale,
            ..Limits::scaled(opts.scale)
        }),
        ..Faults::default()
    });
    let before = proxy.report();
    let measured_from = Instant::now();
    let ops: Ops = Arc::default();
    let started = Instant::now();
    let stop = started + Duration::from_secs(opts.seconds);
    let give_up = stop + Duration::from_secs(60);
    let mut rng = Rng::new(opts.seed);
    let mut tasks = tokio::task::JoinSet::new();
    let tick = Duration::from_secs_f64(1.0 / opts.rate);
    let per_second = opts.rate.round().max(1.0) as u64;
    let mut n: u64 = 0;
    let mut published: Vec<String> = Vec::new();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut behind = Duration::ZERO;
    loop {
        let due = started + tick * n as u32;
        if due >= stop {
            break;
        }
        let now = Instant::now();
        if due > now {
            tokio::time::sleep_until(due).await;
        } else {
            behind = behind.max(now - due);
        }
        while let Ok(id) = done_rx.try_recv() {
            published.push(id);
        }
        n += 1;
        if n.is_multiple_of(per_second) {
            // A publish to a few users, then read receipts and feeds of earlier ones.
            let uids: Vec<String> = (0..3).map(|_| format!("u{}", rng.below(1_000))).collect();
            let body = json!({"audience": {"kind": "users", "uids": uids}, "category": "news",
                "title": format!("Scale {n}"), "body": "At scale."});
            let path = "/api/v1/inbox/tenants/chaos/inboxes/news/messages".to_string();
            {
                let (http, ops, done) = (http.clone(), ops.clone(), done_tx.clone());
                if let Ok(mut all) = ops.lock() {
                    all.entry("publish").or_default().offered += 1;
                }
                let key = random_hex(12);
                let uid = uids[0].clone();
                tasks.spawn(async move {
                    let answer = http
                        .once_with(Method::POST, &path, &body, Some(&key), None)
                        .await;
                    let Ok(mut all) = ops.lock() else { return };
                    let o = all.entry("publish").or_default();
                    match answer {
                        Ok((201, v)) => {
                            o.acked += 1;
                            if let Some(id) = v["message_id"].as_str() {
                                let _ = done.send(format!("{uid}/{id}"));
                            }
                        }
                        Ok((s, _)) => {
                            if s >= 500 {
                                o.server_errors += 1;
                            }
                            if s == 503 {
                                o.unavailable += 1;
                            }
                            o.refused.push(format!("publish: {s}"));
                        }
                        Err(e) => o.refused.push(format!("publish: {e}")),
                    }
                });
            }
        }
        let mut go = |op: &'static str,
                      req: (Method, String, Value, Option<String>),
                      cookie: Option<String>| {
            if let Ok(mut all) = ops.lock() {
                all.entry(op).or_default().offered += 1;
            }
            tasks.spawn(send(http.clone(), ops.clone(), op, req, cookie, give_up));
        };
        // Every tick an event, across many conversations (as a large helpdesk has).
        let conversation = format!("scale-conv-{}", rng.below(1_000_000));
        let body = json!({"conversation_id": conversation, "message_id": format!("m{n}"),
            "created_at": chrono::Utc::now().to_rfc3339(), "channel": "email",
            "text": rng.pick(TEXTS), "customer": {"id": format!("cust-{}", rng.below(100_000))}});
        go(
            "event",
            (Method::POST, "/api/v1/events".into(), body, None),
            None,
        );
        if n.is_multiple_of(4) {
            let user = format!("scale-u{}", rng.below(100_000));
            let body = json!({"measurement_id": format!("w{n}"), "user_id": user,
                "weight": 70.0 + (n % 30) as f64 / 10.0, "unit": "kg",
                "timestamp": (chrono::Utc::now() - chrono::Duration::minutes((n % 600) as i64)).to_rfc3339(),
                "source": "scale"});
            go(
                "measurement",
                (Method::POST, "/api/v1/measurements".into(), body, None),
                None,
            );
        }
        if n.is_multiple_of(10) {
            let id = format!("scale-c{n}");
            let body = json!({"conversation_id": id, "channel_method": "whatsapp",
                "recipient_tel": format!("+4477009{:05}", n % 100_000),
                "company_id": format!("ci-scale-{:03}", rng.below(500)), "project_id": "pi-scale-001",
                "request_id": format!("req-{n}"), "recipient_first_name": "Jane", "recipient_last_name": "Doe",
                "comms_consent": true,
                "channel_config": {"company_whatsapp_number": "+447700900101", "company_email": "x@acme.example"},
                "company_rep": {"name": "Sam Carter", "email": "sam@acme.example"}});
            go(
                "keyed REST write",
                (
                    Method::POST,
                    "/api/v1/conversations".into(),
                    body,
                    Some(random_hex(12)),
                ),
                None,
            );
        }
        if n.is_multiple_of(per_second) {
            if let Some(last) = published.pop() {
                let (uid, id) = last.split_once('/').unwrap_or_default();
                let base = format!("/api/v1/inbox/tenants/chaos/inboxes/news/users/{uid}");
                go(
                    "read receipt",
                    (
                        Method::POST,
                        format!("{base}/messages/{id}/read"),
                        json!({}),
                        None,
                    ),
                    None,
                );
                go(
                    "feed",
                    (Method::GET, format!("{base}/feed"), Value::Null, None),
                    None,
                );
            }
            // A monitor's call now and then (Alertmanager repeats a group every few minutes).
            if let Some(path) = trigger_path
                .as_ref()
                .filter(|_| n.is_multiple_of(10 * per_second))
            {
                let resolved = json!({"version": "4", "status": "resolved", "alerts": [{"status": "resolved", "labels": {"alertname": "ScaleRun"}}]});
                go(
                    "trigger call",
                    (Method::POST, path.clone(), resolved, None),
                    None,
                );
            }
            for (i, page) in ["/", "/audit", "/outbox"].into_iter().enumerate() {
                let cookie = &cookies[(n as usize + i) % cookies.len()];
                go(
                    "page view",
                    (Method::GET, page.into(), Value::Null, None),
                    Some(cookie.clone()),
                );
            }
        }
    }
    let offered_for = started.elapsed().as_secs_f64();
    // The keys' rates are those of the offer: the drain after it would thin them out.
    let at_stop = proxy.report();
    while tasks.join_next().await.is_some() {}
    let answered_for = started.elapsed().as_secs_f64();
    // Every side effect delivered (or the wait ends): the outbox drains.
    let events_acked = ops
        .lock()
        .map(|o| o.get("event").map_or(0, |e| e.acked))
        .unwrap_or(0);
    let drain_deadline = Instant::now() + Duration::from_secs(120);
    let mut last = (0usize, Instant::now());
    loop {
        let seen = receiver.seen.lock().map(|s| s.len()).unwrap_or(0);
        if seen != last.0 {
            last = (seen, Instant::now());
        }
        let quiet = last.1.elapsed() > Duration::from_secs(8);
        if (seen as u64 >= events_acked && quiet) || Instant::now() > drain_deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let delivered = receiver.seen.lock().map(|s| s.len()).unwrap_or(0) as u64;
    let report = proxy.report();
    let window = measured_from.elapsed().as_secs_f64();
    for c in consoles.iter_mut() {
        c.stop(true);
    }
    let ops = std::mem::take(&mut *ops.lock().map_err(|e| e.to_string())?);
    let timing = Timing {
        offered_for,
        answered_for,
        window,
        behind,
    };
    let figures = print(opts, &ops, &before, &report, &at_stop, delivered, &timing);
    std::fs::create_dir_all(opts.report.parent().unwrap_or(&opts.dir)).ok();
    let _ = std::fs::write(
        &opts.report,
        serde_json::to_string_pretty(&figures).unwrap_or_default(),
    );

    let mut failed = Vec::new();
    let offered_events = ops.get("event").map_or(0, |o| o.offered);
    let wanted = opts.rate * opts.seconds as f64;
    if (offered_events as f64) < 0.95 * wanted || offered_for > opts.seconds as f64 * 1.05 {
        failed.push(format!(
            "offered {offered_events} events in {offered_for:.1} s: short of {wanted:.0} at {} a second",
            opts.rate
        ));
    }
    if events_acked == 0 || delivered == 0 {
        failed.push(
            "no event was acknowledged or no side effect delivered: the run did no work".into(),
        );
    }
    let throttled = report.get(Kind::PartitionThrottle) + report.get(Kind::QuotaThrottle);
    if opts.no_throttles && throttled > 0 {
        failed.push(format!(
            "{throttled} requests were throttled (see the keys above)"
        ));
    }
    Ok(failed)
}

/// How long the run's parts took, in seconds.
struct Timing {
    /// Until the last offer.
    offered_for: f64,
    /// Until the last answer.
    answered_for: f64,
    /// From the first offer until the outbox drained: what the proxy's figures cover.
    window: f64,
    /// The most an offer was late.
    behind: Duration,
}

/// Prints the figures; the same as JSON.
fn print(
    opts: &Options,
    ops: &BTreeMap<&'static str, Op>,
    before: &Report,
    report: &Report,
    at_stop: &Report,
    delivered: u64,
    t: &Timing,
) -> Value {
    let secs = opts.seconds as f64;
    let (offered_for, answered_for, behind) = (t.offered_for, t.answered_for, t.behind);
    let stands_for = opts.rate / opts.scale;
    println!(
        "\nscale run: {} consoles, limits × {} ({} write / {} read units a second per partition, \
         a table or index quota of {:.0} each, {:.0} on AWS), \
         {:.1} events a second offered for {:.0} s, standing for {:.0} a second on AWS \
         (offer ended {:.1} s in, the last answer {:.1} s in, at most {:.0} ms behind)",
        opts.consoles,
        opts.scale,
        AWS_PARTITION_WRITE * opts.scale,
        AWS_PARTITION_READ * opts.scale,
        opts.table_quota * opts.scale,
        opts.table_quota,
        opts.rate,
        secs,
        stands_for,
        offered_for,
        answered_for,
        behind.as_secs_f64() * 1000.0
    );
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6}",
        "operation", "offered/s", "acked/s", "p50 ms", "p99 ms", "5xx", "503"
    );
    let mut rows = Vec::new();
    for (name, o) in ops {
        println!(
            "{:<18} {:>9.2} {:>9.2} {:>9.1} {:>9.1} {:>6} {:>6}",
            name,
            o.offered as f64 / secs,
            o.acked as f64 / secs,
            pct(&o.took, 0.5),
            pct(&o.took, 0.99),
            o.server_errors,
            o.unavailable
        );
        for r in o.refused.iter().take(3) {
            println!("    not acknowledged: {r}");
        }
        rows.push(
            json!({"operation": name, "offered": o.offered, "acked": o.acked,
            "p50_ms": pct(&o.took, 0.5), "p99_ms": pct(&o.took, 0.99),
            "server_errors": o.server_errors, "unavailable": o.unavailable}),
        );
    }
    let events = ops.get("event").map_or(0, |o| o.acked).max(1) as f64;
    let used = report.units_since(before);
    println!(
        "side effects delivered: {delivered} ({:.2} per event)",
        delivered as f64 / events
    );
    println!(
        "as AWS bills it, everything included (deliveries, publishes, reads, page views): \
         {:.1} write units, {:.1} read units and {:.1} DynamoDB requests per event; {:.1} requests per delivery",
        used.write / events,
        used.read / events,
        used.calls as f64 / events,
        used.calls as f64 / delivered.max(1) as f64
    );
    // Where the units go: every key's units summed by its table or index, largest first.
    let mut by_resource: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for k in &report.keys {
        let (mut w, mut r) = (k.write, k.read);
        if let Some(b) = before.keys.iter().find(|b| b.key == k.key) {
            (w, r) = (w - b.write, r - b.read);
        }
        let resource = k.key.split_once('|').map_or(k.key.as_str(), |(r, _)| r);
        let sum = by_resource.entry(resource).or_default();
        (sum.0, sum.1) = (sum.0 + w, sum.1 + r);
    }
    let mut costs: Vec<(&str, f64, f64)> = by_resource
        .into_iter()
        .map(|(name, (w, r))| (name, w / events, r / events))
        .collect();
    costs.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("write and read units per event, by table and index (the largest writes first):");
    for (i, (name, w, r)) in costs.iter().take(10).enumerate() {
        println!("    {w:>7.1} write {r:>7.1} read  {name}");
        // The three largest: which of their keys, by a key's shape (`pk=rate#…` → `pk=rate#`).
        if i < 3 {
            let mut shapes: BTreeMap<String, f64> = BTreeMap::new();
            for k in report
                .keys
                .iter()
                .filter(|k| k.key.starts_with(&format!("{name}|")))
            {
                let spent = k.write
                    - before
                        .keys
                        .iter()
                        .find(|b| b.key == k.key)
                        .map_or(0.0, |b| b.write);
                *shapes
                    .entry(key_shape(&k.key[name.len() + 1..]))
                    .or_default() += spent;
            }
            let mut shapes: Vec<(String, f64)> = shapes.into_iter().collect();
            shapes.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (shape, spent) in shapes.iter().take(4).filter(|(_, s)| *s > 0.0) {
                println!("            {:>7.1} write  {shape}", spent / events);
            }
        }
    }
    let throttled: Vec<&dynamodb_faults::KeyUse> =
        report.keys.iter().filter(|k| k.throttled > 0).collect();
    println!(
        "throttles served: {} by partitions, {} by table or index quotas",
        report.get(Kind::PartitionThrottle) - before.get(Kind::PartitionThrottle),
        report.get(Kind::QuotaThrottle) - before.get(Kind::QuotaThrottle)
    );
    for k in throttled.iter().take(10) {
        println!("    {:>6} refused on {}", k.throttled, k.key);
    }
    // The hottest keys during the offer, as the units a second they stand for on AWS.
    let earlier = |key: &str| before.keys.iter().find(|k| k.key == key);
    let during: Vec<dynamodb_faults::KeyUse> = at_stop
        .keys
        .iter()
        .map(|k| {
            let mut k = k.clone();
            if let Some(b) = earlier(&k.key) {
                k.write -= b.write;
                k.read -= b.read;
                k.throttled -= b.throttled;
            }
            k
        })
        .collect();
    let limit = |k: &dynamodb_faults::KeyUse| -> (f64, f64) {
        let w = k.write / t.offered_for / opts.scale;
        let r = k.read / t.offered_for / opts.scale;
        (w, r)
    };
    let mut hot: Vec<&dynamodb_faults::KeyUse> =
        during.iter().filter(|k| !k.key.ends_with("|*")).collect();
    hot.sort_by(|a, b| {
        let (aw, ar) = limit(a);
        let (bw, br) = limit(b);
        (bw / AWS_PARTITION_WRITE)
            .max(br / AWS_PARTITION_READ)
            .total_cmp(&(aw / AWS_PARTITION_WRITE).max(ar / AWS_PARTITION_READ))
    });
    println!(
        "hottest keys, as AWS units a second at {stands_for:.0} events a second (a partition takes {AWS_PARTITION_WRITE:.0} write, {AWS_PARTITION_READ:.0} read):"
    );
    let mut hottest = Vec::new();
    for k in hot.iter().take(10) {
        let (w, r) = limit(k);
        println!(
            "    {:>7.0} write {:>7.0} read  {:>4.0} %  {}",
            w,
            r,
            100.0 * (w / AWS_PARTITION_WRITE).max(r / AWS_PARTITION_READ),
            k.key
        );
        hottest.push(
            json!({"key": k.key, "write_per_s": w, "read_per_s": r, "throttled": k.throttled}),
        );
    }
    // What 100 consoles would add, from each console's own rates.
    let per_console = |n: u64| n as f64 / t.window / opts.consoles.max(1) as f64;
    let describe = per_console(report.describe_stream - before.describe_stream);
    println!(
        "per console: {:.2} DescribeStream calls a second → 100 consoles: {:.1} a second (AWS serves about {AWS_DESCRIBE_STREAM_PER_S:.0} per account and region)",
        describe,
        describe * 100.0
    );
    // The busiest item the switches are read from, over the offer.
    let switch_items: Vec<&dynamodb_faults::KeyUse> = during
        .iter()
        .filter(|k| k.key.contains("|pk=kill_switches") && k.read > 0.0)
        .collect();
    let busiest = switch_items.iter().map(|k| k.read).fold(0.0f64, f64::max);
    println!(
        "kill-switch reads: {:.2} units a second on the busiest of {} items; on AWS at {stands_for:.0} events a second: {:.0} units a second (a partition takes {AWS_PARTITION_READ:.0})",
        busiest / t.offered_for,
        switch_items.len(),
        busiest / t.offered_for / opts.scale
    );
    json!({
        "consoles": opts.consoles, "scale": opts.scale, "table_quota": opts.table_quota, "rate": opts.rate, "seconds": opts.seconds,
        "stands_for_events_per_s": stands_for, "operations": rows, "delivered": delivered,
        "write_units_per_event": used.write / events, "read_units_per_event": used.read / events,
        "requests_per_event": used.calls as f64 / events,
        "throttled_partitions": report.get(Kind::PartitionThrottle) - before.get(Kind::PartitionThrottle),
        "throttled_quota": report.get(Kind::QuotaThrottle) - before.get(Kind::QuotaThrottle),
        "refused_keys": throttled.iter().take(10).map(|k| json!({"key": k.key, "throttled": k.throttled})).collect::<Vec<_>>(),
        "hottest": hottest,
        "units_per_event_by_resource": costs.iter().map(|(name, w, r)| json!({"resource": name, "write": w, "read": r})).collect::<Vec<_>>(),
        "describe_stream_per_console_per_s": describe,
    })
}

/// A key as the kind of item it is: its attribute and its value up to the first `#` or
/// `:` (`pk=rate#…` → `pk=rate#`, `outbox=due#05` → `outbox=due#`), or with its digits
/// as `N` when it has neither (`conversation_id=scale-conv-N`).
fn key_shape(key: &str) -> String {
    let (attr, value) = key.split_once('=').unwrap_or((key, ""));
    let shape = match value.find(['#', ':']) {
        Some(i) => value[..=i].to_string(),
        None => value
            .chars()
            .map(|c| if c.is_ascii_digit() { 'N' } else { c })
            .collect(),
    };
    format!("{attr}={shape}")
}
