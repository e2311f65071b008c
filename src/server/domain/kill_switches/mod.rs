//! The rules of a kill-switch change (docs/switches.md), with no I/O: a change as asked
//! for, what it needs (a reason; a confirmation in the risky direction), the switches it
//! leaves, and its audit record in words. A timed change's end is in [`timers`].

pub mod approvals;
pub mod schedule;
pub mod timers;
pub mod triggers;

use chrono::{DateTime, Utc};

use crate::model::kill_switches::{KillSwitches, Reason, Switch, SwitchState};
use crate::model::AppError;
use timers::Ends;

/// The actors of the console's own changes of the switches (a revert or a trip, a trigger
/// URL, a scheduled change): no user may take one of these names.
pub const MACHINE_ACTORS: [&str; 3] = [timers::SYSTEM, triggers::ACTOR, schedule::ACTOR];

/// The start of a trip's reason (docs/switches.md, "Trips"): the rule, its figures, its
/// window follow.
pub const TRIP_REASON: &str = "trip: ";

/// What put `switch` in its safe position without a person, when its last change was that:
/// a trip of an alert rule, or an outside monitor's trigger URL. Every page's banner says
/// so until a person changes the switch (a revert or a schedule is not a trip).
pub fn tripped_by(switch: Switch, state: &SwitchState) -> Option<&'static str> {
    if state.enabled != switch.safe() {
        return None;
    }
    let by = state.changed_by.as_deref()?;
    let reason = state.reason.as_deref().unwrap_or_default();
    if by == timers::SYSTEM && reason.starts_with(TRIP_REASON) {
        Some("a trip")
    } else if by == triggers::ACTOR {
        Some("a trigger URL")
    } else {
        None
    }
}

/// A change as the form (or a client) asks for it.
#[derive(Clone, Debug)]
pub struct ChangeRequest {
    pub switch: Switch,
    pub enable: bool,
    /// The version the person saw when they decided.
    pub expected_version: u64,
    pub reason: String,
    /// Ticked "I confirm" (needed to turn safe mode off or automation on).
    pub confirmed: bool,
    /// A timed change: when the switch goes back by itself.
    pub ends: Option<Ends>,
    /// Skips the second admin's approval (an emergency admin only; docs/switches.md,
    /// "Approvals").
    pub emergency: bool,
}

impl TryFrom<crate::server::contract::kill_switches::SwitchChange> for ChangeRequest {
    type Error = AppError;

    fn try_from(c: crate::server::contract::kill_switches::SwitchChange) -> Result<Self, AppError> {
        Ok(ChangeRequest {
            switch: Switch::parse(&c.switch)?,
            enable: c.enable,
            expected_version: c.expected_version,
            reason: c.reason,
            confirmed: c.confirm,
            ends: Ends::from_api(c.for_minutes, c.ends_at.as_deref())?,
            // Four eyes are people: a client's change in a risky direction waits for an
            // approval in the console; no key skips it.
            emergency: false,
        })
    }
}

impl ChangeRequest {
    /// A change as the console's form sends it: `enable` is `true` or `false`; `confirm` is
    /// present (and not empty) when the "I confirm" box was ticked; `for_minutes` is empty
    /// or absent for a change with no end; `emergency` is present (and not empty) when the
    /// "skip the approval" box was ticked.
    pub fn from_form(
        switch: &str,
        enable: &str,
        expected_version: u64,
        reason: String,
        confirm: Option<&str>,
        for_minutes: Option<&str>,
        emergency: Option<&str>,
    ) -> Result<ChangeRequest, AppError> {
        Ok(ChangeRequest {
            switch: Switch::parse(switch)?,
            enable: match enable {
                "true" => true,
                "false" => false,
                _ => return Err(AppError::invalid("enable", "Expected true or false.")),
            },
            expected_version,
            reason,
            confirmed: confirm.is_some_and(|c| !c.is_empty()),
            ends: Ends::from_form(for_minutes)?,
            emergency: emergency.is_some_and(|e| !e.is_empty()),
        })
    }
}

/// The id of a request for approval or of a scheduled change: 32 lower-case hex digits (16
/// random bytes). Anything else names neither, and is refused before anything is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeId(String);

impl ChangeId {
    pub fn parse(raw: &str) -> Result<ChangeId, AppError> {
        let id = raw.trim();
        if id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(ChangeId(id.to_string()))
        } else {
            Err(AppError::invalid("id", "Unknown change: reload the page."))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks that need no I/O; run before anything is read or written.
pub fn validate(req: &ChangeRequest) -> Result<Reason, AppError> {
    let reason = Reason::parse(&req.reason)?;
    if req.switch.needs_confirmation(req.enable) && !req.confirmed {
        return Err(AppError::invalid(
            "confirm",
            format!(
                "Confirm the change: {}",
                req.switch.describe(req.enable).to_lowercase()
            ),
        ));
    }
    if req.ends.is_some() && !req.switch.needs_confirmation(req.enable) {
        return Err(AppError::invalid(
            timers::FIELD,
            "A change towards safety has no end: turning safety off again is a decision a \
             person makes.",
        ));
    }
    Ok(reason)
}

/// The switches after the change, or why the change does not apply to `current`.
pub fn plan(
    current: &KillSwitches,
    req: &ChangeRequest,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<KillSwitches, AppError> {
    if current.version != req.expected_version {
        return Err(stale(current));
    }
    if current.get(req.switch).enabled == req.enable {
        return Err(AppError::Conflict(format!(
            "{} is already {}; nothing changed.",
            req.switch.label(),
            if req.enable { "on" } else { "off" }
        )));
    }
    let ends_at = req.ends.map(|e| e.at(now)).transpose()?;
    let mut next = current.clone();
    *next.get_mut(req.switch) = SwitchState {
        enabled: req.enable,
        changed_by: Some(actor.to_string()),
        changed_at: Some(crate::server::clock::iso(now)),
        reason: Some(reason.to_string()),
        ends_at: ends_at.map(crate::server::clock::iso),
    };
    next.version = current.version + 1;
    Ok(next)
}

pub fn stale(current: &KillSwitches) -> AppError {
    AppError::Conflict(format!(
        "Changed by someone else since you loaded this page: now {}. Nothing was overwritten; \
         review the current values and try again.",
        current.summary()
    ))
}

/// A change's audit record in words: "Safe mode turned off until 2026-11-26 16:00 UTC:
/// “incident over”", with what else it did ("; ends the timed change by alice …").
pub fn change_in_words(p: &serde_json::Value, reason: &str) -> String {
    let name = match p.get("switch").and_then(serde_json::Value::as_str) {
        Some("safe_mode") => "Safe mode",
        Some("automation_enabled") => "Automation",
        _ => "A kill switch",
    };
    let to = match p.get("to").and_then(serde_json::Value::as_bool) {
        Some(true) => "on",
        Some(false) => "off",
        None => "changed",
    };
    let until = p
        .get("ends_at")
        .and_then(serde_json::Value::as_str)
        .map(|t| format!(" until {}", timers::minute(t)))
        .unwrap_or_default();
    let note = p
        .get("note")
        .and_then(serde_json::Value::as_str)
        .map(|n| format!("; {n}"))
        .unwrap_or_default();
    format!("{name} turned {to}{until}{reason}{note}")
}

/// A trigger URL's audit record in words: "Safe mode's trigger URL rotated".
pub fn trigger_in_words(p: &serde_json::Value) -> String {
    let name = match p.get("switch").and_then(serde_json::Value::as_str) {
        Some("safe_mode") => "Safe mode",
        Some("automation_enabled") => "Automation",
        _ => "A kill switch",
    };
    let change = p
        .get("change")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("changed");
    format!("{name}'s trigger URL {change}")
}

/// A trip's audit record in words: "Trip attached: when outbox.dead_letters fires, safe
/// mode turns on".
/// A record of what an author left pending, withdrawn with their right (scheduled changes
/// or requests, `thing`s): "Withdrawn with their right: 2 requests by alice, api:bot: “…”".
pub fn withdrawn_in_words(p: &serde_json::Value, thing: &str) -> String {
    let n = p
        .get("ids")
        .and_then(serde_json::Value::as_array)
        .map_or(0, Vec::len);
    let authors: Vec<&str> = p
        .get("authors")
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    let reason = p
        .get("reason")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?");
    let plural = if n == 1 { "" } else { "s" };
    format!(
        "Withdrawn with their right: {n} {thing}{plural} by {}: “{reason}”",
        authors.join(", ")
    )
}

pub fn trip_in_words(p: &serde_json::Value) -> String {
    let text = |k: &str| p.get(k).and_then(serde_json::Value::as_str).unwrap_or("?");
    let then = Switch::parse(text("switch")).map_or("a kill switch moves", Switch::trip_effect);
    format!(
        "Trip {}: when {} fires, {then}",
        text("change"),
        text("rule")
    )
}

#[cfg(test)]
mod tests;
