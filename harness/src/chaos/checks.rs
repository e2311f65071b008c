//! What must hold after the storm.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::clients::Acked;
use super::procs::Receiver;
use ops_console::server::services::inbox::verify::verify;
use ops_console::server::store::audit;
use ops_console::server::store::inbox::{self as inbox, MessageItem};
use ops_console::server::store::many::scan_json;
use ops_console::server::store::schema::{INBOX, MEASUREMENTS, MW_IDEMPOTENCY, SETTINGS};
use ops_console::server::store::Store;

#[derive(Debug, Default)]
pub struct Found {
    pub violations: Vec<String>,
    pub applied: usize,
    pub resent: usize,
    pub receiver_requests: u64,
    pub receiver_refused: u64,
    pub bad_signatures: u64,
    pub slow_stretches: u64,
    pub down_stretches: u64,
    /// Acknowledged requests not found stored.
    pub lost: usize,
    /// Effects found twice (two decisions of one event, two messages of one publish).
    pub duplicate_effects: usize,
    /// What each check looked at, and how many: a check that looked at nothing proves
    /// nothing.
    pub looked: Vec<(&'static str, usize)>,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

pub async fn check(store: &Store, acked: &[Acked], receiver: &Receiver) -> Result<Found, String> {
    let err = |e: ops_console::server::store::StoreError| e.to_string();
    let mut f = Found::default();
    let mw = scan_json(store, MW_IDEMPOTENCY.base).await.map_err(err)?;
    let audits = audit::scan_json(store).await.map_err(err)?;
    let meas = scan_json(store, MEASUREMENTS.base).await.map_err(err)?;

    // 1. Every acknowledged request is stored.
    let events: BTreeMap<&str, &Value> = mw
        .iter()
        .filter(|v| v["kind"] == "event")
        .map(|v| (s(v, "event_id"), v))
        .collect();
    let stored_meas: BTreeSet<(String, String)> = meas
        .iter()
        .filter(|v| s(v, "SK").starts_with("MEAS#"))
        .map(|v| {
            (
                s(v, "user_id").to_string(),
                s(v, "measurement_id").to_string(),
            )
        })
        .collect();
    for a in acked {
        match a {
            Acked::Event { key } => match events.get(key.as_str()) {
                Some(e) if e["status"] == "processed" => {}
                Some(e) => f
                    .violations
                    .push(format!("acknowledged event {key} is {}", e["status"])),
                None => f
                    .violations
                    .push(format!("acknowledged event {key} is not stored")),
            },
            Acked::Publish {
                id,
                short_lived: true,
                ..
            } => {
                // Its copies are gone (expired); its publication outlives them by a day.
                let pb: Option<serde_json::Value> = inbox::get(
                    store,
                    &inbox::tenant_pk("chaos"),
                    &inbox::publication_sk("news", id),
                )
                .await
                .map_err(err)?;
                if pb.is_none() {
                    f.violations
                        .push(format!("acknowledged publish {id} has no publication"));
                }
            }
            Acked::Publish { id, uids, .. } => {
                let pks: Vec<String> = match uids {
                    None => vec![inbox::public_pk("chaos", "news")],
                    Some(u) => u
                        .iter()
                        .map(|u| inbox::user_pk("chaos", u, "news"))
                        .collect(),
                };
                for pk in pks {
                    let got: Option<MessageItem> = inbox::get(store, &pk, &inbox::message_sk(id))
                        .await
                        .map_err(err)?;
                    if got.is_none() {
                        f.violations
                            .push(format!("acknowledged publish {id} missing in {pk}"));
                    }
                }
            }
            Acked::Measurement { user, id } => {
                if !stored_meas.contains(&(user.clone(), id.clone())) {
                    f.violations.push(format!(
                        "acknowledged measurement {user}/{id} is not stored"
                    ));
                }
            }
            Acked::Flip { .. } => {}
        }
    }

    f.lost = f.violations.len();
    f.looked
        .push(("acknowledged requests found stored", acked.len()));

    // 2. Side effects: applied once each at the receiver, and each one a recorded action.
    let actions: BTreeMap<&str, &Value> = mw
        .iter()
        .filter(|v| v["kind"] == "action")
        .map(|v| (s(v, "event_id"), v))
        .collect();
    let seen = receiver.seen.lock().map(|m| m.clone()).unwrap_or_default();
    f.receiver_requests = receiver.requests.load(std::sync::atomic::Ordering::Relaxed);
    f.receiver_refused = receiver.refused.load(std::sync::atomic::Ordering::Relaxed);
    f.bad_signatures = receiver
        .bad_signatures
        .load(std::sync::atomic::Ordering::Relaxed);
    f.slow_stretches = receiver
        .slow_stretches
        .load(std::sync::atomic::Ordering::Relaxed);
    f.down_stretches = receiver
        .down_stretches
        .load(std::sync::atomic::Ordering::Relaxed);
    if f.bad_signatures > 0 {
        f.violations.push(format!(
            "{} deliveries had a signature the receiver could not verify",
            f.bad_signatures
        ));
    }
    f.applied = seen.len();
    f.looked
        .push(("side effects each delivered once", actions.len()));
    f.resent = seen.values().map(|n| (*n as usize).saturating_sub(1)).sum();
    for key in seen.keys() {
        if !actions.contains_key(key.as_str()) {
            f.violations.push(format!(
                "the receiver got {key}, which no action record has"
            ));
        }
    }
    for (key, a) in &actions {
        if a["status"] != "delivered" {
            f.violations.push(format!(
                "{key} is {} after the run, not delivered",
                a["status"]
            ));
        } else if !seen.contains_key(*key) {
            f.violations.push(format!(
                "{key} is recorded delivered but never reached the receiver"
            ));
        }
    }

    // 3. Every audit record has its action, and every action its audit record.
    let by_key: BTreeMap<&str, Vec<&Value>> = audits.iter().fold(BTreeMap::new(), |mut m, a| {
        m.entry(s(a, "idempotency_key")).or_default().push(a);
        m
    });
    for (key, e) in &events {
        if e["status"] != "processed" {
            continue;
        }
        let decisions = by_key.get(key).map_or(0, |v| {
            v.iter().filter(|a| a["action_type"] == "decision").count()
        });
        if decisions > 1 {
            f.duplicate_effects += decisions - 1;
        }
        if decisions != 1 {
            f.violations
                .push(format!("event {key} has {decisions} decision audits"));
        }
    }
    for (key, a) in &actions {
        let want = match a["status"].as_str() {
            Some("delivered") => "success",
            Some("dead") => "dead letter",
            _ => "queued",
        };
        let audited = by_key
            .get(key)
            .is_some_and(|v| v.iter().any(|x| s(x, "result").starts_with(want)));
        if !audited {
            f.violations.push(format!(
                "action {key} ({}) has no audit record",
                a["status"]
            ));
        }
    }
    f.looked
        .push(("events with one decision audit", events.len()));
    f.looked
        .push(("audit records with their event or action", audits.len()));
    for a in &audits {
        let t = s(a, "action_type");
        let key = s(a, "idempotency_key");
        let result = s(a, "result");
        match t {
            "decision" if !events.contains_key(key) => f
                .violations
                .push(format!("decision audit without its event {key}")),
            "route" | "tag" | "assign" | "auto_reply" | "escalate"
                if !result.starts_with("suppressed") && !actions.contains_key(key) =>
            {
                f.violations
                    .push(format!("{t} audit without its action {key}"))
            }
            _ => {}
        }
    }
    let switch_audits = audits
        .iter()
        .filter(|a| a["action_type"] == "kill_switch_change")
        .count() as u64;
    let settings = scan_json(store, SETTINGS.base).await.map_err(err)?;
    let version = settings
        .iter()
        .find(|v| v["pk"] == "kill_switches")
        .and_then(|v| v["version"].as_u64())
        .unwrap_or(0);
    let flips = acked
        .iter()
        .filter(|a| matches!(a, Acked::Flip { .. }))
        .count() as u64;
    f.looked.push((
        "kill-switch changes against the version",
        switch_audits as usize,
    ));
    if switch_audits != version || version < flips {
        f.violations.push(format!(
            "kill switches at version {version} with {switch_audits} change audits and {flips} acknowledged flips"
        ));
    }
    let accepted: BTreeSet<(String, String)> = meas
        .iter()
        .filter(|v| matches!(s(v, "action"), "accepted" | "override"))
        .map(|v| {
            (
                s(v, "user_id").to_string(),
                s(v, "measurement_id").to_string(),
            )
        })
        .collect();
    for m in stored_meas.symmetric_difference(&accepted) {
        f.violations.push(format!(
            "measurement {}/{}: stored and accepted audits disagree",
            m.0, m.1
        ));
    }
    f.looked.push((
        "stored measurements against accepted audits",
        stored_meas.len(),
    ));
    let (drifts, hours) = recount_stats(&meas);
    f.violations.extend(drifts);
    f.looked
        .push(("hours of measurement counters recounted", hours));

    // 4. One publish key, one message: every publication belongs to exactly one job.
    let inbox_items = scan_json(store, INBOX.base).await.map_err(err)?;
    let job_ids: Vec<&str> = inbox_items
        .iter()
        .filter(|v| v["kind"] == "PJ")
        .map(|v| s(v, "message_id"))
        .collect();
    let pub_ids: BTreeSet<&str> = inbox_items
        .iter()
        .filter(|v| v["kind"] == "PB")
        .map(|v| s(v, "id"))
        .collect();
    let distinct_jobs: BTreeSet<&str> = job_ids.iter().copied().collect();
    if distinct_jobs.len() != job_ids.len() || distinct_jobs != pub_ids {
        f.violations.push(format!(
            "publishes: {} jobs for {} message ids, {} publications",
            job_ids.len(),
            distinct_jobs.len(),
            pub_ids.len()
        ));
    }
    f.duplicate_effects = job_ids.len() - distinct_jobs.len();
    f.looked
        .push(("publish jobs, one per message", job_ids.len()));

    // 5. Inbox counters agree with a recount.
    let (drift, recounted) = verify(store, chrono::Utc::now().timestamp())
        .await
        .map_err(err)?;
    for d in drift {
        f.violations.push(format!(
            "inbox counter drift: {} [{}] {} counted {} stored {}",
            d.pk, d.category, d.field, d.counted, d.stored
        ));
    }
    f.looked.push(("inbox items recounted", recounted));
    Ok(f)
}

/// The hourly measurement counters (`STATS#nn` shards, summed) against a recount of the
/// audit records, one per attempt, by the hour of the attempt: each counter is written in
/// its attempt's transaction, so they agree exactly, outcome by outcome. Also the hours
/// recounted.
fn recount_stats(meas: &[Value]) -> (Vec<String>, usize) {
    type Hours = BTreeMap<String, BTreeMap<String, i64>>;
    let (mut counted, mut recounted) = (Hours::new(), Hours::new());
    for v in meas {
        let sk = s(v, "SK");
        if s(v, "PK").starts_with("STATS#") {
            let hour = counted.entry(sk.to_string()).or_default();
            for (k, n) in v.as_object().into_iter().flatten() {
                if let (false, Some(n)) = (matches!(k.as_str(), "PK" | "SK" | "ttl"), n.as_i64()) {
                    *hour.entry(k.clone()).or_default() += n;
                }
            }
        } else if sk.starts_with("AUDIT#") {
            let at = s(v, "at");
            let hour = recounted
                .entry(at.get(..13).unwrap_or(at).to_string())
                .or_default();
            *hour.entry("attempts".into()).or_default() += 1;
            *hour.entry(s(v, "action").to_string()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    let hours: BTreeSet<&String> = counted.keys().chain(recounted.keys()).collect();
    for hour in hours {
        let (c, r) = (counted.get(hour), recounted.get(hour));
        let names: BTreeSet<&String> = c.into_iter().chain(r).flat_map(|m| m.keys()).collect();
        for name in names {
            let get = |m: Option<&BTreeMap<String, i64>>| m.and_then(|m| m.get(name)).copied();
            let (counted, audited) = (get(c).unwrap_or(0), get(r).unwrap_or(0));
            if counted != audited {
                out.push(format!(
                    "measurement counters of {hour}: {name} counted {counted}, audited {audited}"
                ));
            }
        }
    }
    (out, recounted.len())
}

/// What the duplicate checks found, counted from what the clients sent.
#[derive(Debug, Default)]
pub struct SentFound {
    pub violations: Vec<String>,
    /// What each check looked at (see [`Found::looked`]).
    pub looked: Vec<(&'static str, usize)>,
    /// Effects beyond the one each request may have.
    pub duplicates: usize,
}

/// Each request a client sent has at most one effect, whichever console served it and
/// however often it was retried: one publication per publish key (its title names the
/// key), one decision per event, one kill-switch change per flip key (its reason names
/// it). Counted against what the clients sent, not against what the system wrote in the
/// same transaction (a second job would come with its own second publication).
pub async fn check_sent(
    store: &Store,
    sent: &[super::clients::Sent],
    acked: &[Acked],
) -> Result<SentFound, String> {
    use super::clients::Sent;
    let err = |e: ops_console::server::store::StoreError| e.to_string();
    let inbox_items = scan_json(store, INBOX.base).await.map_err(err)?;
    let audits = audit::scan_json(store).await.map_err(err)?;
    let meas = scan_json(store, MEASUREMENTS.base).await.map_err(err)?;
    let mut publications: BTreeMap<String, usize> = BTreeMap::new();
    for p in inbox_items.iter().filter(|v| v["kind"] == "PB") {
        if let Some(key) = s(p, "title").strip_prefix("Chaos ") {
            *publications.entry(key.to_string()).or_default() += 1;
        }
    }
    let mut decisions: BTreeMap<&str, usize> = BTreeMap::new();
    // A change by its reason, read from its payload whole (never a substring of it).
    let mut changes: BTreeMap<String, usize> = BTreeMap::new();
    for a in &audits {
        match s(a, "action_type") {
            "decision" => *decisions.entry(s(a, "idempotency_key")).or_default() += 1,
            "kill_switch_change" => {
                let payload: Value =
                    serde_json::from_str(s(a, "action_payload_redacted")).unwrap_or_default();
                *changes
                    .entry(s(&payload, "reason").to_string())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    // A measurement's accepted attempts and stored copies, by user and id.
    let mut accepted: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut stored: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for v in &meas {
        let id = (s(v, "user_id"), s(v, "measurement_id"));
        if s(v, "SK").starts_with("AUDIT#") && matches!(s(v, "action"), "accepted" | "override") {
            *accepted.entry(id).or_default() += 1;
        } else if s(v, "SK").starts_with("MEAS#") {
            stored
                .entry(id)
                .or_default()
                .push(v["weight"].as_f64().unwrap_or(f64::NAN));
        }
    }
    let acked_measurements: BTreeSet<(&str, &str)> = acked
        .iter()
        .filter_map(|a| match a {
            Acked::Measurement { user, id } => Some((user.as_str(), id.as_str())),
            _ => None,
        })
        .collect();
    let acked_flips: BTreeSet<&str> = acked
        .iter()
        .filter_map(|a| match a {
            Acked::Flip { key } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    let mut f = SentFound::default();
    let of = |kind: fn(&Sent) -> bool| sent.iter().filter(|s| kind(s)).count();
    f.looked = vec![
        (
            "events sent, decisions counted",
            of(|s| matches!(s, Sent::Event { .. })),
        ),
        (
            "publish keys sent, publications counted",
            of(|s| matches!(s, Sent::Publish { .. })),
        ),
        (
            "flips sent, changes counted",
            of(|s| matches!(s, Sent::Flip { .. })),
        ),
        (
            "measurements sent, acceptances counted",
            of(|s| matches!(s, Sent::Measurement { .. })),
        ),
    ];
    for one in sent {
        let (what, n) = match one {
            Sent::Publish { key } => (
                format!("publish key {key}"),
                publications.get(key).copied().unwrap_or(0),
            ),
            Sent::Event { key } => (
                format!("event {key}"),
                decisions.get(key.as_str()).copied().unwrap_or(0),
            ),
            Sent::Flip { key } => {
                let n = changes
                    .get(&format!("chaos flip {key}"))
                    .copied()
                    .unwrap_or(0);
                if n == 0 && acked_flips.contains(key.as_str()) {
                    f.violations.push(format!(
                        "acknowledged flip {key}: no change is recorded under its reason"
                    ));
                }
                (format!("flip {key}"), n)
            }
            Sent::Measurement { user, id, weight } => {
                let k = (user.as_str(), id.as_str());
                let n = accepted.get(&k).copied().unwrap_or(0);
                let copies = stored.get(&k).map_or(&[][..], Vec::as_slice);
                if n == 0 && acked_measurements.contains(&k) {
                    f.violations.push(format!(
                        "acknowledged measurement {user}/{id} has no accepted attempt"
                    ));
                }
                // A weight missing or not a number is a difference too.
                let differs = |w: &f64| w.is_nan() || (w - weight).abs() > 1e-9;
                if copies.len() > 1 || copies.iter().any(differs) {
                    f.violations.push(format!(
                        "measurement {user}/{id} was sent weighing {weight} and is stored as {copies:?}"
                    ));
                }
                if n > 1 {
                    f.duplicates += n - 1;
                    f.violations.push(format!(
                        "measurement {user}/{id} was sent once and accepted {n} times"
                    ));
                }
                continue;
            }
        };
        if n > 1 {
            f.duplicates += n - 1;
            f.violations
                .push(format!("{what} was sent once and took effect {n} times"));
        }
    }
    let acked_publishes = acked
        .iter()
        .filter(|a| matches!(a, Acked::Publish { .. }))
        .count();
    let sent_publishes = sent
        .iter()
        .filter(|s| matches!(s, Sent::Publish { .. }))
        .count();
    let total: usize = publications.values().sum();
    if total < acked_publishes || total > sent_publishes {
        f.violations.push(format!(
            "{total} publications for {acked_publishes} acknowledged and {sent_publishes} sent publish keys"
        ));
    }
    Ok(f)
}

/// Moves every inbox item that would expire within two hours (the `ops` messages and
/// their receipts) to just past its expiry, as if the hour went by for it; nothing is
/// deleted yet (TTL deletes late). Returns the ids of the messages now expired.
pub async fn expire_short_lived(store: &Store) -> Result<BTreeSet<String>, String> {
    let err = |e: ops_console::server::store::StoreError| e.to_string();
    let now = chrono::Utc::now().timestamp();
    let items = scan_json(store, INBOX.base).await.map_err(err)?;
    let mut expired = BTreeSet::new();
    for v in &items {
        let at = v["expiredat"].as_i64().unwrap_or(i64::MAX);
        if at >= now + 2 * 3600 {
            continue;
        }
        if v["kind"] == "UM" {
            expired.insert(s(v, "id").to_string());
        }
        store
            .client()
            .update_item()
            .table_name(store.table(INBOX.base))
            .key(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S(s(v, "pk").into()),
            )
            .key(
                "sk",
                aws_sdk_dynamodb::types::AttributeValue::S(s(v, "sk").into()),
            )
            .update_expression("SET expiredat = :past")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(
                ":past",
                aws_sdk_dynamodb::types::AttributeValue::N((now - 1).to_string()),
            )
            .send()
            .await
            .map_err(|e| format!("expiring an item: {e}"))?;
    }
    Ok(expired)
}

/// The chaos users whose feeds are read (`u0`…).
pub const FEED_USERS: u32 = 60;

/// Reads every chaos user's feed through the consoles: none may show an expired message.
/// Also the users whose feed was read to its end (or five pages): a read that fails proves
/// nothing, so the caller requires each feed read at least once.
pub async fn feeds_hide(
    http: &super::clients::Http,
    expired: &BTreeSet<String>,
) -> (Vec<String>, BTreeSet<u32>) {
    let (mut out, mut read) = (Vec::new(), BTreeSet::new());
    let now = chrono::Utc::now().timestamp();
    for u in 0..FEED_USERS {
        let mut cursor: Option<String> = None;
        for page_no in 0..5 {
            let mut path = format!("/api/v1/inbox/tenants/chaos/inboxes/news/users/u{u}/feed");
            if let Some(c) = &cursor {
                path.push_str(&format!("?cursor={c}"));
            }
            let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            let Some((200, page)) = http
                .until_final(hyper::Method::GET, &path, &Value::Null, None, give_up)
                .await
            else {
                break;
            };
            for item in page["items"].as_array().into_iter().flatten() {
                let id = s(item, "id");
                if expired.contains(id) || item["expires_s"].as_i64().is_some_and(|e| e <= now) {
                    out.push(format!(
                        "the feed of u{u} showed message {id} after it expired"
                    ));
                }
            }
            match page["next"].as_str() {
                Some(c) if page_no < 4 => cursor = Some(c.to_string()),
                _ => {
                    read.insert(u);
                    break;
                }
            }
        }
    }
    (out, read)
}
