//! Timed changes (docs/switches.md, "Changes that end on their own"): a change in the
//! risky direction (safe mode off, automation on) may carry an end, a duration or a time;
//! when it comes, the switch goes back towards safety, by the system, unless a newer change
//! of that switch replaced the timed one (which then says so in the history).

use chrono::{DateTime, Duration, Utc};

use crate::model::kill_switches::{KillSwitches, Switch, SwitchState};
use crate::model::AppError;

/// The form's and the API's field for a duration.
pub const FIELD: &str = "for_minutes";
/// The API's field for an end time.
pub const FIELD_AT: &str = "ends_at";
/// Who a revert is recorded as.
pub const SYSTEM: &str = "system";
/// The longest a timed change may run: past a week, a change is a decision, not a window.
pub const MAX_MINUTES: i64 = 7 * 24 * 60;

/// When a timed change ends, as asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// This many minutes after the change is made.
    After(i64),
    /// At this time.
    At(DateTime<Utc>),
}

impl Ends {
    /// The form's duration select: empty or absent is no end.
    pub fn from_form(for_minutes: Option<&str>) -> Result<Option<Ends>, AppError> {
        match for_minutes.map(str::trim) {
            None | Some("") => Ok(None),
            Some(m) => m
                .parse::<i64>()
                .map(|m| Some(Ends::After(m)))
                .map_err(|_| AppError::invalid(FIELD, "The duration is a number of minutes.")),
        }
    }

    /// A REST body's `for_minutes` or `ends_at` (RFC 3339), not both.
    pub fn from_api(
        for_minutes: Option<i64>,
        ends_at: Option<&str>,
    ) -> Result<Option<Ends>, AppError> {
        match (for_minutes, ends_at) {
            (Some(_), Some(_)) => Err(AppError::invalid(
                FIELD_AT,
                "Give for_minutes or ends_at, not both.",
            )),
            (Some(m), None) => Ok(Some(Ends::After(m))),
            (None, Some(t)) => DateTime::parse_from_rfc3339(t.trim())
                .map(|t| Some(Ends::At(t.with_timezone(&Utc))))
                .map_err(|_| {
                    AppError::invalid(FIELD_AT, "ends_at is a time in RFC 3339, with its offset.")
                }),
            (None, None) => Ok(None),
        }
    }

    /// The end of a change made at `now`: at least a minute ahead, at most a week.
    pub fn at(self, now: DateTime<Utc>) -> Result<DateTime<Utc>, AppError> {
        let (end, field) = match self {
            Ends::After(m) if (1..=MAX_MINUTES).contains(&m) => (now + Duration::minutes(m), FIELD),
            Ends::After(_) => {
                return Err(AppError::invalid(
                    FIELD,
                    format!("A timed change runs 1 to {MAX_MINUTES} minutes (a week)."),
                ))
            }
            Ends::At(t) => (t, FIELD_AT),
        };
        if end < now + Duration::minutes(1) || end > now + Duration::minutes(MAX_MINUTES) {
            return Err(AppError::invalid(
                field,
                "A timed change ends between a minute and a week from now.",
            ));
        }
        Ok(end)
    }
}

/// The switches whose timed change has ended at `now`.
pub fn due(current: &KillSwitches, now: DateTime<Utc>) -> Vec<Switch> {
    Switch::ALL
        .into_iter()
        .filter(|s| current.get(*s).enabled != s.safe())
        .filter(|s| end_of(current.get(*s)).is_some_and(|end| end <= now))
        .collect()
}

fn end_of(st: &SwitchState) -> Option<DateTime<Utc>> {
    let t = st.ends_at.as_deref()?;
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The switches once the timed change of `switch` has ended: back in its safe position, by
/// the system, saying whose change ended.
pub fn revert(current: &KillSwitches, switch: Switch, now: DateTime<Utc>) -> KillSwitches {
    let st = current.get(switch);
    let mut next = current.clone();
    *next.get_mut(switch) = SwitchState {
        // Towards safety, always: only a change away from it has an end.
        enabled: switch.safe(),
        changed_by: Some(SYSTEM.into()),
        changed_at: Some(crate::server::clock::iso(now)),
        reason: Some(format!(
            "reverted: the change by {} at {} ended",
            st.changed_by.as_deref().unwrap_or("someone"),
            st.changed_at.as_deref().map(minute).unwrap_or_default()
        )),
        ends_at: None,
    };
    next.version = current.version + 1;
    next
}

/// What a change of `switch` says about the timed change it replaces, if one was running.
pub fn voids(current: &KillSwitches, switch: Switch) -> Option<String> {
    let st = current.get(switch);
    let end = st.ends_at.as_deref()?;
    Some(format!(
        "ends the timed change by {}, which was to end at {}: it will not revert",
        st.changed_by.as_deref().unwrap_or("someone"),
        minute(end)
    ))
}

/// `2026-11-26 16:00 UTC` of an RFC 3339 time (as given, if it is not one).
pub fn minute(t: &str) -> String {
    DateTime::parse_from_rfc3339(t)
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| t.to_string())
}

/// The time left until `ends_at` in words: `1 h 59 min left`, `under a minute left`.
pub fn left(ends_at: &str, now: DateTime<Utc>) -> String {
    let Some(end) = DateTime::parse_from_rfc3339(ends_at).ok() else {
        return String::new();
    };
    let minutes = (end.with_timezone(&Utc) - now).num_minutes();
    match minutes {
        m if m < 1 => "under a minute left".into(),
        m if m < 60 => format!("{m} min left"),
        m => format!("{} h {} min left", m / 60, m % 60),
    }
}

#[cfg(test)]
mod tests;
