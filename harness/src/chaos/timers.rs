//! Timed kill-switch changes in the chaos run (docs/switches.md): after the clients' storm,
//! the harness turns safe mode off for a minute through a console and waits, with consoles
//! killed and DynamoDB failing around it, for the consoles to end it. The check reads the
//! switches' history in version order: every revert ends a timed change whose end had come,
//! no timed change is ended twice or after a newer change of its switch replaced it, every
//! replaced one says so, and every one past its end was ended.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::clients::Http;
use ops_console::server::clock::Clock;
use ops_console::server::store::audit;
use ops_console::server::store::kill_switches;
use ops_console::server::store::Store;

/// Turns safe mode off for one minute through the consoles (on first, if a client left it
/// off); answers when it was accepted.
pub async fn start(http: &Http) -> Result<DateTime<Utc>, String> {
    let give_up = Instant::now() + Duration::from_secs(60);
    for attempt in 0..10 {
        let now = http.switches(give_up).await?;
        let off = !now["safe_mode"].as_bool().unwrap_or(true);
        let body = if off {
            json!({"switch": "safe_mode", "enable": true, "expected_version": now["version"],
                   "reason": "chaos: on, to time a change"})
        } else {
            json!({"switch": "safe_mode", "enable": false, "expected_version": now["version"],
                   "reason": "chaos: a timed change", "confirm": true, "for_minutes": 1})
        };
        let key = format!("chaos-timed-{attempt}");
        match http
            .until_final(
                Method::POST,
                "/api/v1/kill-switches",
                &body,
                Some(&key),
                give_up,
            )
            .await
        {
            Some((200, _)) if !off => return Ok(Utc::now()),
            Some((200 | 409, _)) => {}
            other => return Err(format!("a timed change: unexpected {other:?}")),
        }
    }
    Err("the timed change was never accepted".into())
}

/// Whether no switch has a timed change running (the one started has been ended).
pub async fn ended(store: &Store) -> Result<bool, String> {
    let s = kill_switches::load(store, Clock::default().now())
        .await
        .map_err(|e| e.to_string())?;
    Ok(s.safe_mode.ends_at.is_none() && s.automation_enabled.ends_at.is_none())
}

/// One change of the switches, as its audit record says.
struct Change {
    version: u64,
    at: DateTime<Utc>,
    actor: String,
    switch: String,
    ends_at: Option<DateTime<Utc>>,
    note: String,
}

fn time(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The violations of the timed-change rules in the switches' history; `reverts_expected`:
/// the run made a timed change and waited for its end, so at least one revert must be there.
pub async fn check(store: &Store, reverts_expected: bool) -> Result<Vec<String>, String> {
    let audits = audit::scan_json(store).await.map_err(|e| e.to_string())?;
    let mut changes: Vec<Change> = audits
        .iter()
        .filter(|a| a["action_type"] == "kill_switch_change")
        .filter_map(|a| {
            let p: Value = serde_json::from_str(a["action_payload_redacted"].as_str()?).ok()?;
            let sk = a["ts_action_id"].as_str()?;
            Some(Change {
                version: p["version"].as_u64()?,
                at: time(sk.split('#').next()?)?,
                actor: a["actor"].as_str()?.to_string(),
                switch: p["switch"].as_str()?.to_string(),
                ends_at: p["ends_at"].as_str().and_then(time),
                note: p["note"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect();
    changes.sort_by_key(|c| c.version);
    let mut violations = Vec::new();
    // Per switch: the running timed change (its version and end).
    let mut running: BTreeMap<String, (u64, DateTime<Utc>)> = BTreeMap::new();
    let mut reverts = 0;
    for c in &changes {
        let timer = running.remove(&c.switch);
        if c.actor == "system" {
            reverts += 1;
            match timer {
                None => violations.push(format!(
                    "version {}: {} was reverted with no timed change running (a second revert, or one over a newer change)",
                    c.version, c.switch
                )),
                // The revert's time is the console's clock; the end was set by another's.
                Some((v, end)) if c.at + chrono::Duration::seconds(2) < end => violations.push(format!(
                    "version {}: the timed change of version {v} was reverted at {} before its end {end}",
                    c.version, c.at
                )),
                Some(_) => {}
            }
        } else if let Some((v, _)) = timer {
            if !c.note.contains("will not revert") {
                violations.push(format!(
                    "version {}: a change of {} replaced the timed change of version {v} without saying so",
                    c.version, c.switch
                ));
            }
        }
        if let Some(end) = c.ends_at {
            running.insert(c.switch.clone(), (c.version, end));
        }
    }
    // The consoles look every 5 s; a minute late is a revert missed, not a slow one.
    let late = Utc::now() - chrono::Duration::seconds(60);
    for (switch, (v, end)) in &running {
        if *end < late {
            violations.push(format!(
                "the timed change of {switch} at version {v} ended at {end} and was never reverted"
            ));
        }
    }
    if reverts_expected && reverts == 0 {
        violations.push("the run made a timed change and no console ended it".into());
    }
    println!(
        "  timed kill-switch changes: {} made, {reverts} ended by a console",
        changes.iter().filter(|c| c.ends_at.is_some()).count()
    );
    Ok(violations)
}
