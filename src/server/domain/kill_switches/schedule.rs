//! Scheduled changes (docs/switches.md, "Scheduled changes"), with no I/O: a change set for
//! a later time, what conflicts with it, and what it does when its time comes: the change,
//! or nothing (the switch was changed meanwhile, or is there already) and why.

use chrono::{DateTime, Duration, Utc};

use super::timers::minute;
use super::ChangeRequest;
use crate::model::kill_switches::{KillSwitches, Scheduled, Switch};
use crate::model::AppError;

/// Who runs a scheduled change: the switch's last change and the audit record name it.
pub const ACTOR: &str = "schedule";
/// The form field and JSON member of a change's time.
pub const FIELD: &str = "at";
/// How far ahead a change may be set: past a month it is a plan, not a schedule.
pub const MAX_DAYS: i64 = 31;
/// Two changes of one switch closer than this are in conflict: their order is a guess.
pub const MIN_GAP_MINUTES: i64 = 5;
/// The most changes set at once (the schedule is one item, read every 5 s).
pub const MAX_PENDING: usize = 50;
/// Changes one API key may have set at once: a client cannot fill the schedule.
pub const MAX_PENDING_PER_KEY: usize = 5;

/// A change's time as the form sends it (`2026-11-27T18:00`, UTC, from a `datetime-local`
/// input) or as a client sends it (RFC 3339 with its offset); empty: now.
pub fn parse_at(raw: Option<&str>) -> Result<Option<DateTime<Utc>>, AppError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S"))
        .map(|t| Some(t.and_utc()))
        .map_err(|_| AppError::invalid(FIELD, "The time is a date and time in UTC."))
}

/// `req`, by `actor`, set for `at` against `current`, added to `pending` (the changes set
/// already); or why not.
#[allow(clippy::too_many_arguments)]
pub fn schedule(
    pending: &[Scheduled],
    current: &KillSwitches,
    req: &ChangeRequest,
    reason: &str,
    actor: &str,
    id: &str,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(Vec<Scheduled>, Scheduled), AppError> {
    if at < now + Duration::minutes(1) || at > now + Duration::days(MAX_DAYS) {
        return Err(AppError::invalid(
            FIELD,
            format!("A scheduled change is set between a minute and {MAX_DAYS} days from now."),
        ));
    }
    if current.version != req.expected_version {
        return Err(super::stale(current));
    }
    if pending.len() >= MAX_PENDING {
        return Err(AppError::Conflict(format!(
            "{MAX_PENDING} changes are set already: cancel one first."
        )));
    }
    let own = pending.iter().filter(|s| s.scheduled_by == actor).count();
    if actor.starts_with("api:") && own >= MAX_PENDING_PER_KEY {
        return Err(AppError::Conflict(format!(
            "This client has {MAX_PENDING_PER_KEY} changes set already, the most one API key \
             may: an admin cancels one on the Kill switch automation page first."
        )));
    }
    // A timed change's end counts from when it runs, by the rules of a change made then.
    if let Some(ends) = req.ends {
        ends.at(at)?;
    }
    let (for_minutes, ends_at) = match req.ends {
        None => (None, None),
        Some(super::timers::Ends::After(m)) => (Some(m), None),
        Some(super::timers::Ends::At(t)) => (None, Some(crate::server::clock::iso(t))),
    };
    conflicts(pending, current, req, at)?;
    let made = Scheduled {
        id: id.to_string(),
        switch: req.switch,
        enable: req.enable,
        reason: reason.to_string(),
        for_minutes,
        ends_at,
        at: crate::server::clock::iso(at),
        scheduled_by: actor.to_string(),
        scheduled_at: crate::server::clock::iso(now),
        seen_change: current.get(req.switch).changed_at.clone(),
    };
    let mut next = pending.to_vec();
    next.push(made.clone());
    next.sort_by(|a, b| a.at.cmp(&b.at));
    Ok((next, made))
}

/// Why `req` at `at` conflicts with the changes of its switch set already (`pending`), if
/// it does: two closer than [`MIN_GAP_MINUTES`], or one that would not move the switch.
fn conflicts(
    pending: &[Scheduled],
    current: &KillSwitches,
    req: &ChangeRequest,
    at: DateTime<Utc>,
) -> Result<(), AppError> {
    let mut same: Vec<&Scheduled> = pending.iter().filter(|s| s.switch == req.switch).collect();
    if let Some(near) = same
        .iter()
        .find(|s| time(&s.at).is_some_and(|t| (t - at).num_minutes().abs() < MIN_GAP_MINUTES))
    {
        return Err(AppError::Conflict(format!(
            "{} is already set to turn {} at {} (by {}): two changes of a switch are at least \
             {MIN_GAP_MINUTES} minutes apart.",
            near.switch.label(),
            on_off(near.enable),
            minute(&near.at),
            near.scheduled_by
        )));
    }
    // In time order, each change of a switch moves it: the one before this one (or, with
    // none, the switch as it is) must leave it in the other position, and the one after
    // must move it back.
    same.sort_by(|a, b| a.at.cmp(&b.at));
    let before = same
        .iter()
        .rev()
        .find(|s| time(&s.at).is_some_and(|t| t < at));
    let after = same.iter().find(|s| time(&s.at).is_some_and(|t| t > at));
    let from = before.map_or(current.get(req.switch).enabled, |s| s.enable);
    if from == req.enable {
        let why = match before {
            Some(s) => format!(
                "the change set for {} by {} turns it {} already",
                minute(&s.at),
                s.scheduled_by,
                on_off(s.enable)
            ),
            None => format!("it is {} already", on_off(from)),
        };
        return Err(AppError::Conflict(format!(
            "{} would not move at {}: {why}.",
            req.switch.label(),
            minute(&crate::server::clock::iso(at))
        )));
    }
    if let Some(s) = after.filter(|s| s.enable == req.enable) {
        return Err(AppError::Conflict(format!(
            "{} is set to turn {} at {} (by {}): this change would leave that one with \
             nothing to do.",
            s.switch.label(),
            on_off(s.enable),
            minute(&s.at),
            s.scheduled_by
        )));
    }
    Ok(())
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn time(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The changes whose time has come at `now`, oldest first.
pub fn due(pending: &[Scheduled], now: DateTime<Utc>) -> Vec<Scheduled> {
    pending
        .iter()
        .filter(|s| time(&s.at).is_some_and(|t| t <= now))
        .cloned()
        .collect()
}

/// What a due change does to `current`.
#[derive(Clone, Debug)]
pub enum Run {
    /// The change, as its author asked for it.
    Change(ChangeRequest),
    /// Nothing, and why (in words, for the history).
    Void(String),
}

/// What `s`, due, does to `current` (with `pending`, the schedule as stored): nothing when
/// a later change of its switch is due too (the consoles were away; the latest plan holds),
/// when the switch was changed after it was set (a person decided since), or when it is in
/// its position already.
pub fn run(
    s: &Scheduled,
    current: &KillSwitches,
    pending: &[Scheduled],
    now: DateTime<Utc>,
) -> Run {
    if let Some(later) = due(pending, now)
        .into_iter()
        .find(|p| p.switch == s.switch && p.at > s.at)
    {
        return Run::Void(format!(
            "void: the change set for {} by {} was due too",
            minute(&later.at),
            later.scheduled_by
        ));
    }
    let st = current.get(s.switch);
    if st.changed_at != s.seen_change {
        return Run::Void(format!(
            "void: {} was changed by {} at {} after this was set",
            s.switch.label(),
            st.changed_by.as_deref().unwrap_or("someone"),
            st.changed_at.as_deref().map(minute).unwrap_or_default()
        ));
    }
    if st.enabled == s.enable {
        return Run::Void(format!(
            "void: {} is {} already",
            s.switch.label(),
            on_off(s.enable)
        ));
    }
    Run::Change(ChangeRequest {
        switch: s.switch,
        enable: s.enable,
        expected_version: current.version,
        reason: s.reason.clone(),
        confirmed: true,
        ends: match (s.for_minutes, s.ends_at.as_deref()) {
            (Some(m), _) => Some(super::timers::Ends::After(m)),
            (None, Some(t)) => time(t).map(super::timers::Ends::At),
            (None, None) => None,
        },
        emergency: false,
    })
}

/// The schedule after `ran` ran and left `switch`'s last change at `changed_at`: the other
/// changes of that switch were set against the schedule's own moves, so they see this one
/// (a change by anyone else still voids them).
pub fn after_run(
    rest: Vec<Scheduled>,
    ran: &Scheduled,
    changed_at: Option<String>,
) -> Vec<Scheduled> {
    rest.into_iter()
        .map(|mut p| {
            if p.switch == ran.switch && p.at > ran.at {
                p.seen_change = changed_at.clone();
            }
            p
        })
        .collect()
}

/// The reason a scheduled change is recorded with: its author's, saying whose and when.
pub fn reason_of(s: &Scheduled) -> String {
    let r = format!(
        "scheduled by {} at {}: {}",
        s.scheduled_by,
        minute(&s.scheduled_at),
        s.reason
    );
    r.chars()
        .take(crate::model::kill_switches::MAX_REASON_CHARS)
        .collect()
}

/// A scheduled change's audit record in words.
pub fn schedule_in_words(p: &serde_json::Value) -> String {
    let text = |k: &str| p.get(k).and_then(serde_json::Value::as_str).unwrap_or("?");
    let name = Switch::parse(text("switch")).map_or("A kill switch", Switch::label);
    let to = on_off(p.get("enable").and_then(serde_json::Value::as_bool) == Some(true));
    match text("change") {
        "scheduled" => format!(
            "{name} set to turn {to} at {}: “{}”",
            minute(text("at")),
            text("reason")
        ),
        "cancelled" => format!(
            "Cancelled: {name} to turn {to} at {} (set by {}): “{}”",
            minute(text("at")),
            text("scheduled_by"),
            text("reason")
        ),
        "void" => format!(
            "Did not run: {name} to turn {to} at {} (set by {}); {}",
            minute(text("at")),
            text("scheduled_by"),
            text("why")
        ),
        "withdrawn" => super::withdrawn_in_words(p, "scheduled change"),
        other => format!("{name} scheduled change {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn req(switch: Switch, enable: bool) -> ChangeRequest {
        ChangeRequest {
            switch,
            enable,
            expected_version: 0,
            reason: "holiday".into(),
            confirmed: true,
            ends: None,
            emergency: false,
        }
    }

    #[test]
    fn the_form_sends_utc_minutes_and_a_client_any_offset() {
        assert_eq!(parse_at(Some("")).unwrap(), None);
        assert_eq!(
            parse_at(Some("2026-11-27T18:00")).unwrap(),
            Some(at("2026-11-27T18:00:00Z"))
        );
        assert_eq!(
            parse_at(Some("2026-11-27T19:00:00+01:00")).unwrap(),
            Some(at("2026-11-27T18:00:00Z"))
        );
        assert_eq!(parse_at(Some("tomorrow")).unwrap_err().field(), Some("at"));
    }

    #[test]
    fn changes_of_a_switch_alternate_and_keep_apart() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let a = |p: &[Scheduled], enable: bool, t: &str, id: &str| {
            schedule(
                p,
                &current,
                &req(Switch::SafeMode, enable),
                "r",
                "alice",
                id,
                at(t),
                now,
            )
        };
        // Safe mode is on: turning it on at 18:00 would not move it.
        assert!(a(&[], true, "2026-11-27T18:00:00Z", "x").is_err());
        let (p, _) = a(&[], false, "2026-11-27T18:00:00Z", "s1").unwrap();
        let (p, _) = a(&p, true, "2026-11-27T22:00:00Z", "s2").unwrap();
        // Off again at 20:00 finds it off (set at 18:00).
        let err = a(&p, false, "2026-11-27T20:00:00Z", "s3").unwrap_err();
        assert!(err.to_string().contains("turns it off already"), "{err}");
        // Two minutes from another: refused.
        let err = a(&p, true, "2026-11-27T22:02:00Z", "s4").unwrap_err();
        assert!(err.to_string().contains("at least 5 minutes"), "{err}");
        // Not in the past, not a year ahead.
        assert!(a(&p, false, "2026-11-27T09:00:00Z", "s5").is_err());
        assert!(a(&p, false, "2027-11-27T09:00:00Z", "s6").is_err());
        assert_eq!(due(&p, at("2026-11-27T18:00:00Z")).len(), 1);
    }

    #[test]
    fn one_api_key_sets_at_most_five_changes_and_a_person_is_not_held_by_it() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let set = |p: &[Scheduled], who: &str, i: usize| {
            let enable = i % 2 == 1;
            let t = now + Duration::hours(1 + i as i64);
            schedule(
                p,
                &current,
                &req(Switch::SafeMode, enable),
                "r",
                who,
                &format!("s{i}"),
                t,
                now,
            )
        };
        let mut p = Vec::new();
        for i in 0..MAX_PENDING_PER_KEY {
            p = set(&p, "api:bot", i).unwrap().0;
        }
        let err = set(&p, "api:bot", MAX_PENDING_PER_KEY).unwrap_err();
        assert!(
            err.to_string().contains("the most one API key may"),
            "{err}"
        );
        assert!(set(&p, "alice", MAX_PENDING_PER_KEY).is_ok());
    }

    #[test]
    fn a_due_change_does_nothing_to_a_switch_changed_since() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let (_, s) = schedule(
            &[],
            &current,
            &req(Switch::SafeMode, false),
            "r",
            "alice",
            "s1",
            at("2026-11-27T18:00:00Z"),
            now,
        )
        .unwrap();
        assert!(matches!(run(&s, &current, &[], now), Run::Change(_)));
        let mut changed = current.clone();
        changed.safe_mode.changed_by = Some("bob".into());
        changed.safe_mode.changed_at = Some("2026-11-27T12:00:00.000Z".into());
        match run(&s, &changed, &[], now) {
            Run::Void(why) => assert!(why.contains("changed by bob"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
