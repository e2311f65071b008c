//! A resend of a time window in the chaos run (docs/events.md, "Resend a time window"):
//! once the outbox has drained, the harness resends everything decided since the storm began through a
//! console's REST API, with one `Idempotency-Key` sent again until answered (consoles die
//! under it), and kills consoles and fails DynamoDB while the job runs. The check: one job,
//! finished, counting as moved exactly what it chose; every side effect decided in the
//! window moved by it exactly once (one audit record each, none outside the window) and
//! taken by the receiver once more than before;
//! and the window held something (a run that resent nothing proves nothing).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::clients::Http;
use super::procs::Receiver;
use ops_console::server::store::audit;
use ops_console::server::store::events::jobs;
use ops_console::server::store::many::scan_json;
use ops_console::server::store::schema::MW_IDEMPOTENCY;
use ops_console::server::store::Store;

/// A resend started: what it is to take (the side effects delivered when it started and
/// decided in its window: dead ones are not asked for), and what the receiver had taken
/// before it.
pub struct Started {
    chosen: BTreeSet<String>,
    /// Decided in the window but not delivered when it started.
    other: usize,
    before: HashMap<String, u32>,
}

fn moment(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A moment to the second, as the console and the records write it.
fn second(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Resends what was decided from `since` to now; answers once a console took it.
pub async fn start(
    http: &Http,
    store: &Store,
    receiver: &Receiver,
    since: DateTime<Utc>,
) -> Result<Started, String> {
    // Whole seconds, as sent: both ends included, compared as times, never as text.
    let (from, to) = (since.trunc_subsecs(0), Utc::now().trunc_subsecs(0));
    let (since, until) = (second(from), second(to));
    let mw = scan_json(store, MW_IDEMPOTENCY.base)
        .await
        .map_err(|e| e.to_string())?;
    let in_window: Vec<&Value> = mw
        .iter()
        .filter(|r| r["kind"] == "action")
        .filter(|r| moment(&r["created_at"]).is_some_and(|t| from <= t && t <= to))
        .collect();
    let chosen: BTreeSet<String> = in_window
        .iter()
        .filter(|r| r["status"] == "delivered")
        .map(|r| text(r, "event_id").to_string())
        .collect();
    let other = in_window.len() - chosen.len();
    let before = receiver.seen.lock().map(|m| m.clone()).unwrap_or_default();
    let body = json!({"since": since, "until": until, "reason": "chaos: the storm again"});
    let give_up = Instant::now() + Duration::from_secs(60);
    match http
        .until_final(
            Method::POST,
            "/api/v1/receiver/resends",
            &body,
            Some("chaos-resend"),
            give_up,
        )
        .await
    {
        Some((202, _)) => Ok(Started {
            chosen,
            other,
            before,
        }),
        other => Err(format!("the resend: unexpected {other:?}")),
    }
}

/// Whether no bulk job runs any more.
pub async fn finished(store: &Store) -> Result<bool, String> {
    Ok(jobs::running(store)
        .await
        .map_err(|e| e.to_string())?
        .is_empty())
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

/// The violations of the resend's promises.
pub async fn check(store: &Store, receiver: &Receiver, s: &Started) -> Result<Vec<String>, String> {
    let err = |e: ops_console::server::store::StoreError| e.to_string();
    let mw = scan_json(store, MW_IDEMPOTENCY.base).await.map_err(err)?;
    let audits = audit::scan_json(store).await.map_err(err)?;
    let mut v = Vec::new();
    let jobs: Vec<&Value> = mw
        .iter()
        .filter(|r| r["kind"] == "job" && r["op"] == "resend")
        .collect();
    for job in &jobs {
        println!(
            "  resend job: {} (created {}, {} of {} moved, {} skipped)",
            job["status"], job["created_at"], job["done"], job["total"], job["skipped"]
        );
    }
    match jobs.as_slice() {
        // Its count is what it moved: each side effect chosen, once (checked below).
        [job] if job["status"] == "finished" && job["done"].as_u64() != Some(s.chosen.len() as u64) => {
            v.push(format!(
                "the resend job counts {} moved, but {} side effects were chosen and each is resent once",
                job["done"],
                s.chosen.len()
            ))
        }
        [job] if job["status"] == "finished" => {}
        [job] => v.push(format!("the resend job is {} after the run", job["status"])),
        other => v.push(format!(
            "{} resend jobs for one Idempotency-Key",
            other.len()
        )),
    }
    let chosen: BTreeSet<&str> = s.chosen.iter().map(String::as_str).collect();
    let mut moved: BTreeMap<&str, usize> = BTreeMap::new();
    for a in audits
        .iter()
        .filter(|a| a["action_type"] == "outbox_resend")
    {
        let key = text(a, "idempotency_key");
        if !key.is_empty() {
            *moved.entry(key).or_default() += 1;
        }
    }
    if chosen.is_empty() {
        v.push("the resend's window held no side effect: it proved nothing".into());
    }
    let seen = receiver.seen.lock().map(|m| m.clone()).unwrap_or_default();
    for key in &chosen {
        match moved.get(key) {
            None => {
                let rec = mw.iter().find(|r| text(r, "event_id") == *key);
                let at = |k: &str| rec.map(|r| r[k].to_string()).unwrap_or_default();
                v.push(format!(
                    "{key} was decided in the window and not resent ({} {} {} attempts {} created {} updated {})",
                    at("status"),
                    at("outbox"),
                    at("outbox_sk"),
                    at("attempts"),
                    at("created_at"),
                    at("updated_at")
                ))
            }
            Some(n) if *n > 1 => v.push(format!("{key} was resent {n} times by one job")),
            Some(_) => {}
        }
        let (was, is) = (
            s.before.get(*key).copied().unwrap_or(0),
            seen.get(*key).copied().unwrap_or(0),
        );
        if is <= was {
            v.push(format!(
                "{key} did not reach the receiver again ({was} before, {is} after)"
            ));
        }
    }
    for key in moved.keys().filter(|k| !chosen.contains(*k)) {
        v.push(format!("{key} was resent, but not decided in the window"));
    }
    println!(
        "  resend of a window: {} side effects decided in it and delivered when it started ({} others not), {} moved by the job",
        chosen.len(),
        s.other,
        moved.len()
    );
    Ok(v)
}
