//! Four eyes on the risky direction (docs/switches.md, "Approvals"), with no I/O: which
//! changes wait for a second admin, what a request replaces, and what an approval or a
//! rejection may decide. Turning safety on never waits.

use chrono::{DateTime, Duration, Utc};

use super::timers::{minute, Ends};
use super::ChangeRequest;
use crate::model::kill_switches::{Approval, KillSwitches, Switch};
use crate::model::AppError;

/// How a change goes ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// At once: towards safety, or no approval is required.
    Apply,
    /// As a request a second admin approves or rejects.
    Request,
    /// At once, skipping the approval: marked in the history, announced as an alert.
    Emergency,
}

/// How `req` goes ahead when approvals are `required`, for an actor who may (`emergency_ok`)
/// or may not skip them.
pub fn route(req: &ChangeRequest, required: bool, emergency_ok: bool) -> Result<Route, AppError> {
    if !req.switch.needs_confirmation(req.enable) || !required {
        return Ok(Route::Apply);
    }
    match (req.emergency, emergency_ok) {
        (false, _) => Ok(Route::Request),
        (true, true) => Ok(Route::Emergency),
        (true, false) => Err(AppError::Refused(
            "Only the emergency admins named in the settings may skip the approval.".into(),
        )),
    }
}

/// The requests that may still be approved at `now`, against the switches' `version`:
/// expired ones and stale ones (asked against another version) are dropped.
pub fn pending(all: &[Approval], now: DateTime<Utc>, version: u64) -> Vec<Approval> {
    all.iter()
        .filter(|a| !expired(a, now) && a.version == version)
        .cloned()
        .collect()
}

fn expired(a: &Approval, now: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(&a.expires_at).map_or(true, |t| t.with_timezone(&Utc) <= now)
}

fn verb(a: &Approval) -> String {
    turn_in_words(Some(a.switch), a.enable)
}

/// "turn safe mode off": a move of `switch` (none: one this release cannot read), in words.
fn turn_in_words(switch: Option<Switch>, enable: bool) -> String {
    let name = match switch {
        Some(Switch::SafeMode) => "safe mode",
        Some(Switch::AutomationEnabled) => "automation",
        None => "a kill switch",
    };
    format!("turn {name} {}", if enable { "on" } else { "off" })
}

/// The request `req` by `actor` makes of `all` (the requests as stored) against `current`:
/// the requests afterwards and the new one. The requester's own pending request for the
/// same switch is replaced (an edit, under a new id: an approval of the old one is refused);
/// another admin's is in the way.
#[allow(clippy::too_many_arguments)]
pub fn request(
    all: &[Approval],
    current: &KillSwitches,
    req: &ChangeRequest,
    reason: &str,
    actor: &str,
    on_behalf_of: Option<&str>,
    id: &str,
    now: DateTime<Utc>,
    minutes: i64,
) -> Result<(Vec<Approval>, Approval), AppError> {
    // The same checks as the change itself: the version seen, a real move, a valid end.
    super::plan(current, req, reason, actor, now)?;
    let mut next = pending(all, now, current.version);
    // A person's request takes the place of a client's (an API key cannot keep one in the
    // way of every admin's); a client's never takes another's.
    let person = !actor.starts_with("api:");
    if let Some(other) = next.iter().find(|a| {
        a.switch == req.switch
            && a.requested_by != actor
            && !(person && a.requested_by.starts_with("api:"))
    }) {
        return Err(AppError::Conflict(format!(
            "{}'s request to {} waits for approval: approve or reject it first.",
            other.requested_by,
            verb(other)
        )));
    }
    next.retain(|a| a.switch != req.switch);
    let (for_minutes, ends_at) = match req.ends {
        None => (None, None),
        Some(Ends::After(m)) => (Some(m), None),
        Some(Ends::At(t)) => (None, Some(crate::server::clock::iso(t))),
    };
    let made = Approval {
        id: id.to_string(),
        switch: req.switch,
        enable: req.enable,
        reason: reason.to_string(),
        for_minutes,
        ends_at,
        version: current.version,
        requested_by: actor.to_string(),
        on_behalf_of: on_behalf_of.map(str::to_string),
        requested_at: crate::server::clock::iso(now),
        expires_at: crate::server::clock::iso(now + Duration::minutes(minutes)),
    };
    next.push(made.clone());
    Ok((next, made))
}

/// A second admin's decision on a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn parse(s: &str) -> Result<Decision, AppError> {
        match s {
            "approve" => Ok(Decision::Approve),
            "reject" => Ok(Decision::Reject),
            _ => Err(AppError::invalid("decision", "Expected approve or reject.")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }

    /// As its record and its metric name it: `approved`, `rejected`.
    pub fn past(self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::Reject => "rejected",
        }
    }
}

/// The request `id` of `all`, if `decider` may decide it so against `current`; and the
/// requests without it. Anyone (its requester too) may reject a request; only another
/// admin may approve it, before it expires, while the switches are as it saw them.
pub fn decide(
    all: &[Approval],
    current: &KillSwitches,
    id: &str,
    decider: &str,
    decision: Decision,
    now: DateTime<Utc>,
) -> Result<(Approval, Vec<Approval>), AppError> {
    let Some(found) = all.iter().find(|a| a.id == id).cloned() else {
        return Err(AppError::Conflict(
            "This request is no longer pending: it was decided, or replaced by its requester. \
             Reload the page."
                .into(),
        ));
    };
    let rest = pending(all, now, current.version)
        .into_iter()
        .filter(|a| a.id != id)
        .collect();
    if decision == Decision::Reject {
        return Ok((found, rest));
    }
    if expired(&found, now) {
        return Err(AppError::Conflict(format!(
            "This request expired at {}: ask for a new one.",
            minute(&found.expires_at)
        )));
    }
    // A key made on the command line names its maker `cli:<login>`: the same person.
    let maker = found
        .on_behalf_of
        .as_deref()
        .map(|m| m.strip_prefix("cli:").unwrap_or(m));
    if found.requested_by == decider || maker == Some(decider) {
        return Err(AppError::Refused(
            "You made this request: another admin must approve it.".into(),
        ));
    }
    if current.version != found.version {
        return Err(AppError::Conflict(format!(
            "The switches changed since this request was made (now {}); it can no longer be \
             approved. Reject it and ask again.",
            current.summary()
        )));
    }
    Ok((found, rest))
}

/// The change an approved request makes.
pub fn change_of(a: &Approval) -> Result<ChangeRequest, AppError> {
    Ok(ChangeRequest {
        switch: a.switch,
        enable: a.enable,
        expected_version: a.version,
        reason: a.reason.clone(),
        confirmed: true,
        ends: match (a.for_minutes, a.ends_at.as_deref()) {
            (None, None) => None,
            (m, t) => Ends::from_api(m, t)?,
        },
        emergency: false,
    })
}

/// The note an approved change carries in the history.
pub fn approved_note(a: &Approval, approver: &str, reason: &str) -> String {
    format!(
        "asked by {} at {}, approved by {approver}: “{reason}”",
        a.requested_by,
        minute(&a.requested_at)
    )
}

/// The note a change made on the emergency path carries in the history.
pub const EMERGENCY_NOTE: &str = "emergency: made without a second admin's approval";

/// A request's audit record in words: "Request to turn safe mode off: “…” (until …)", or
/// "alice's request to turn safe mode off rejected: “…”".
pub fn approval_in_words(p: &serde_json::Value) -> String {
    let text = |k: &str| p.get(k).and_then(serde_json::Value::as_str).unwrap_or("?");
    let what = turn_in_words(
        Switch::parse(text("switch")).ok(),
        p.get("enable").and_then(serde_json::Value::as_bool) == Some(true),
    );
    match text("change") {
        "requested" => format!(
            "Asks a second admin to {what}: “{}” (open until {})",
            text("reason"),
            minute(text("expires_at"))
        ),
        "rejected" => format!(
            "Rejected {}'s request to {what}: “{}”",
            text("requested_by"),
            text("reason")
        ),
        "approved" => format!(
            "Approved {}'s request to {what}: “{}”",
            text("requested_by"),
            text("reason")
        ),
        "withdrawn" => super::withdrawn_in_words(p, "request"),
        other => format!("Request to {what} {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kill_switches::Switch;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn off(expected_version: u64) -> ChangeRequest {
        ChangeRequest {
            switch: Switch::SafeMode,
            enable: false,
            expected_version,
            reason: "incident over".into(),
            confirmed: true,
            ends: None,
            emergency: false,
        }
    }

    #[test]
    fn safety_on_never_waits_and_only_named_admins_skip() {
        let mut on = off(0);
        on.enable = true;
        assert_eq!(route(&on, true, false).unwrap(), Route::Apply);
        assert_eq!(route(&off(0), false, false).unwrap(), Route::Apply);
        assert_eq!(route(&off(0), true, false).unwrap(), Route::Request);
        let mut urgent = off(0);
        urgent.emergency = true;
        assert_eq!(route(&urgent, true, true).unwrap(), Route::Emergency);
        assert!(matches!(
            route(&urgent, true, false),
            Err(AppError::Refused(_))
        ));
    }

    #[test]
    fn a_request_is_decided_by_another_admin_in_time_against_the_version_it_saw() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let (all, made) = request(
            &[],
            &current,
            &off(0),
            "incident over",
            "alice",
            None,
            "r1",
            now,
            60,
        )
        .unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(made.expires_at, "2026-11-27T11:00:00.000Z");
        let approve = |who: &str, when: &str, current: &KillSwitches| {
            decide(&all, current, "r1", who, Decision::Approve, at(when))
        };
        assert!(matches!(
            approve("alice", "2026-11-27T10:01:00Z", &current),
            Err(AppError::Refused(_))
        ));
        assert!(approve("bob", "2026-11-27T11:00:00Z", &current)
            .unwrap_err()
            .to_string()
            .contains("expired"));
        let mut changed = current.clone();
        changed.version = 1;
        assert!(approve("bob", "2026-11-27T10:01:00Z", &changed)
            .unwrap_err()
            .to_string()
            .contains("can no longer be approved"));
        let (found, rest) = approve("bob", "2026-11-27T10:01:00Z", &current).unwrap();
        assert_eq!(found.id, "r1");
        assert!(rest.is_empty());
        // Its requester may withdraw it.
        assert!(decide(&all, &current, "r1", "alice", Decision::Reject, now).is_ok());
    }

    #[test]
    fn asking_again_replaces_ones_own_request_and_another_admins_is_in_the_way() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let (all, _) = request(
            &[],
            &current,
            &off(0),
            "first",
            "alice",
            None,
            "r1",
            now,
            60,
        )
        .unwrap();
        let (all, _) = request(
            &all,
            &current,
            &off(0),
            "second",
            "alice",
            None,
            "r2",
            now,
            60,
        )
        .unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].id, "r2");
        assert!(decide(&all, &current, "r1", "bob", Decision::Approve, now)
            .unwrap_err()
            .to_string()
            .contains("no longer pending"));
        let err = request(
            &all,
            &current,
            &off(0),
            "mine",
            "carol",
            None,
            "r3",
            now,
            60,
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("alice's request"), "{err}");
    }

    #[test]
    fn a_persons_request_takes_a_clients_place_and_a_cli_key_is_its_makers() {
        let now = at("2026-11-27T10:00:00Z");
        let current = KillSwitches::safe_defaults();
        let ask = |all: &[Approval], who: &str, maker: Option<&str>, id: &str| {
            request(all, &current, &off(0), "why", who, maker, id, now, 60)
        };
        let (all, _) = ask(&[], "api:bot", Some("cli:root"), "r1").unwrap();
        // Another client is kept waiting; a person is not.
        assert!(ask(&all, "api:other", None, "r2").is_err());
        let (all, _) = ask(&all, "alice", None, "r3").unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].id, "r3");
        assert!(ask(&all, "api:bot", None, "r4").is_err(), "and it stays");
        // The maker of a key made on the command line (`cli:root`) is root.
        let (all, _) = ask(&[], "api:bot", Some("cli:root"), "r5").unwrap();
        let own = decide(&all, &current, "r5", "root", Decision::Approve, now);
        assert!(matches!(own, Err(AppError::Refused(_))), "{own:?}");
        assert!(decide(&all, &current, "r5", "carol", Decision::Approve, now).is_ok());
    }
}
