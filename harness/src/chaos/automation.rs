//! The switches' automation in the chaos run (docs/switches.md, "Trips", "Trigger URLs",
//! "Scheduled changes"): after the clients' storm, while consoles are killed and DynamoDB
//! fails around them, the harness
//!
//! 1. turns automation on (through a console, as a person would), then has a monitor call
//!    the automation switch's trigger URL with one Alertmanager firing episode several
//!    times, to both consoles, two at a time: the switch must go off exactly once;
//! 2. sets a scheduled change (automation on, a minute and a half later) through a console:
//!    it must run exactly once, by the schedule, on behalf of its author;
//! 3. once it ran, sends the same episode again: the schedule's decision must stand (the
//!    episode moved the switch already).
//!
//! The check counts in the history what the harness sent, not what the consoles wrote
//! beside it.

use std::time::Duration;

use chrono::Utc;
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::clients::Http;
use ops_console::model::kill_switches::Switch;
use ops_console::server::clock::Clock;
use ops_console::server::domain::kill_switches::{schedule as schedule_rules, triggers};
use ops_console::server::services::kill_switches::Switches;
use ops_console::server::store::audit;
use ops_console::server::store::kill_switch_schedule;
use ops_console::server::store::Store;

/// How many times the monitor sends the firing episode, before and after the schedule ran.
const CALLS: usize = 6;
const ALERT: &str = "ChaosFiring";

/// What the harness set going: the trigger's path and the scheduled change's id.
pub struct Started {
    trigger_path: String,
    scheduled_id: String,
    /// Calls of the trigger URL that got a final answer.
    pub calls: usize,
}

/// Alertmanager's payload of one firing episode of [`ALERT`].
fn episode() -> Value {
    json!({
        "version": "4", "status": "firing", "receiver": "ops-console",
        "groupKey": "{}:{alertname=\"ChaosFiring\"}",
        "groupLabels": {"alertname": ALERT}, "commonLabels": {"alertname": ALERT},
        "alerts": [{"status": "firing", "labels": {"alertname": ALERT},
                    "startsAt": "2026-11-27T08:00:00Z"}]
    })
}

/// Sends the firing episode [`CALLS`] times, two at a time (round robin: to both consoles);
/// each must get its final answer, a 200 (a call given up on proves nothing).
async fn fire(http: &Http, path: &str, give_up: Instant) -> Result<usize, String> {
    let body = episode();
    for _ in 0..CALLS / 2 {
        let (a, b) = tokio::join!(
            http.until_final(Method::POST, path, &body, None, give_up),
            http.until_final(Method::POST, path, &body, None, give_up),
        );
        for answer in [a, b] {
            match answer {
                Some((200, _)) => {}
                None => return Err("a trigger URL call got no final answer".into()),
                Some((s, v)) => return Err(format!("a trigger URL call answered {s} {v}")),
            }
        }
    }
    Ok(CALLS)
}

/// Sends `body` (a change of the switches: `expected_version` filled in from a fresh read,
/// and `at` from `at()` when given) until it is accepted with `want`, or `done` finds it
/// made already. A 409 reads again: the switches changed, or the change was made by a try
/// whose answer was lost (a late write: the console answered 503, and its key's retry
/// finds the change there; docs/switches.md, known limits).
async fn change<F, Fut>(
    http: &Http,
    body: Value,
    at: Option<fn() -> String>,
    (want, key): (u16, &str),
    done: F,
    give_up: Instant,
) -> Result<Value, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Value>, String>>,
{
    for attempt in 0..10 {
        if let Some(made) = done().await? {
            return Ok(made);
        }
        let mut body = body.clone();
        body["expected_version"] = http.switches(give_up).await?["version"].clone();
        if let Some(at) = at {
            body["at"] = Value::String(at());
        }
        let key = format!("{key}-{attempt}");
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
            Some((s, v)) if s == want => return Ok(v),
            Some((409, _)) => {}
            other => return Err(format!("{key}: unexpected {other:?}")),
        }
    }
    Err(format!("{key}: never accepted"))
}

/// The scheduled change's time: a minute and a half ahead of each try (a schedule takes
/// nothing under a minute).
fn ninety_seconds_ahead() -> String {
    (Utc::now() + chrono::Duration::seconds(90)).to_rfc3339()
}

const SCHEDULED_REASON: &str = "chaos: a scheduled change";

/// Steps 1 and 2: automation on, the trigger fired, the change scheduled.
pub async fn start(
    http: &Http,
    store: &Store,
    config: &ops_console::server::config::Config,
) -> Result<Started, String> {
    let give_up = Instant::now() + Duration::from_secs(90);
    let on = json!({"switch": "automation_enabled", "enable": true, "confirm": true,
                    "reason": "chaos: on, for the trigger"});
    let is_on = || async {
        let now = http.switches(give_up).await?;
        Ok::<_, String>(
            now["automation_enabled"]
                .as_bool()
                .unwrap_or(false)
                .then_some(now),
        )
    };
    change(http, on, None, (200, "chaos-automation-on"), is_on, give_up).await?;
    // An admin makes the trigger URL (the secret is shown once: here, to the harness).
    let switches = Switches::new(
        store.clone(),
        Clock::default(),
        ops_console::server::services::kill_switches::Ttls::from(&config.ttl),
    );
    let secret = switches
        .rotate_trigger(Switch::AutomationEnabled, "chaos")
        .await
        .map_err(|e| format!("the trigger URL: {e:?}"))?;
    let trigger_path = format!("/api/v1/kill-switches/triggers/{secret}");
    let calls = fire(http, &trigger_path, give_up).await?;
    let scheduled = json!({"switch": "automation_enabled", "enable": true, "confirm": true,
                           "reason": SCHEDULED_REASON});
    // Set already (a try whose answer was lost): the schedule lists it by its reason.
    let listed = || async {
        match http
            .until_final(
                Method::GET,
                "/api/v1/kill-switches/schedule",
                &Value::Null,
                None,
                give_up,
            )
            .await
        {
            Some((200, v)) => Ok(v["scheduled"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["reason"] == SCHEDULED_REASON))
                .map(|c| json!({ "scheduled": c }))),
            other => Err(format!("the schedule could not be read: {other:?}")),
        }
    };
    let made = change(
        http,
        scheduled,
        Some(ninety_seconds_ahead),
        (202, "chaos-scheduled"),
        listed,
        give_up,
    )
    .await?;
    let scheduled_id = made["scheduled"]["id"]
        .as_str()
        .ok_or_else(|| format!("a scheduled change's answer without its id: {made}"))?
        .to_string();
    Ok(Started {
        trigger_path,
        scheduled_id,
        calls,
    })
}

/// Whether the scheduled change is no longer pending (it ran, or was void).
pub async fn ran(store: &Store) -> Result<bool, String> {
    let s = kill_switch_schedule::load(store, Clock::default().now())
        .await
        .map_err(|e| e.to_string())?;
    Ok(s.pending.is_empty())
}

/// Step 3: the episode again, after the schedule turned automation back on.
pub async fn fire_again(http: &Http, started: &mut Started) -> Result<(), String> {
    let give_up = Instant::now() + Duration::from_secs(60);
    started.calls += fire(http, &started.trigger_path, give_up).await?;
    Ok(())
}

/// The broken promises: the trigger's episode moved the switch other than once, the
/// scheduled change ran other than once (or was void), or a repeat of the episode
/// overruled the schedule.
pub async fn check(store: &Store, started: &Started) -> Result<Vec<String>, String> {
    let audits = audit::scan_json(store).await.map_err(|e| e.to_string())?;
    let changes: Vec<&Value> = audits
        .iter()
        .filter(|a| a["action_type"] == "kill_switch_change")
        .collect();
    let by = |actor: &str| changes.iter().filter(|a| a["actor"] == actor).count();
    let mut violations = Vec::new();
    let trips = by(triggers::ACTOR);
    if trips != 1 {
        violations.push(format!(
            "one firing episode of a trigger URL ({} calls answered) moved the switch {trips} times, not once",
            started.calls
        ));
    }
    let id = &started.scheduled_id;
    let ends = |suffix: &str| {
        audits
            .iter()
            .filter(|a| {
                a["ts_action_id"]
                    .as_str()
                    .is_some_and(|k| k.ends_with(suffix))
            })
            .count()
    };
    let (runs, voids) = (ends(&format!("#run-{id}")), ends(&format!("#void-{id}")));
    if (runs, voids) != (1, 0) {
        violations.push(format!(
            "the scheduled change {id} ran {runs} times and was void {voids} times, not run once"
        ));
    }
    if runs > 0 && by(schedule_rules::ACTOR) != runs {
        violations.push("a scheduled change's run is not recorded as the schedule's".into());
    }
    let now = ops_console::server::store::kill_switches::load(store, Clock::default().now())
        .await
        .map_err(|e| e.to_string())?;
    if !now.automation_enabled.enabled {
        violations.push(
            "automation is off at the end: a repeat of a firing episode overruled the scheduled change"
                .into(),
        );
    }
    println!(
        "  switch automation: {} trigger URL calls answered, {trips} trip; the scheduled change ran {runs} times",
        started.calls
    );
    Ok(violations)
}
