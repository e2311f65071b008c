//! What the console reads of measurements: a user's series and attempts, attempts by
//! outcome, and the hourly rates with their alert.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use crate::model::measurements::{
    AttemptPage, AttemptRow, Point, RateHour, Rates, Rejected, RuleLine,
};
use crate::model::{percent, AppError};
use crate::server::store::measurements::{self as store, Action, AuditItem};
use crate::server::store::query::Start;
use crate::server::store::Store;

fn row(a: AuditItem) -> AttemptRow {
    let p = a.payload.unwrap_or_default();
    AttemptRow {
        at: a.at,
        user_id: a.user_id,
        measurement_id: a.measurement_id,
        action: a.action.as_str().into(),
        reason: a.reason,
        weight_kg: p.weight_kg,
        timestamp: p.timestamp,
        source: p.source,
        correlation_id: a.correlation_id,
    }
}

/// What `role` may see of a page of attempts (viewers: user ids and reasons redacted).
pub fn for_role(mut page: AttemptPage, role: crate::model::users::Role) -> AttemptPage {
    use crate::server::domain::redact;
    for r in &mut page.rows {
        r.user_id = redact::for_role(role, &r.user_id);
        r.reason = redact::for_role(role, &r.reason);
    }
    page
}

/// Attempts of one user (any outcome, or one), or of one outcome across users.
pub async fn attempts(
    store: &Store,
    user: &str,
    outcome: &str,
    cursor: Option<&str>,
) -> Result<AttemptPage, AppError> {
    let (user, outcome) = (user.trim(), outcome.trim());
    check_user(user)?;
    let outcome = parse_outcome(outcome)?;
    let cursor = cursor.filter(|c| !c.is_empty());
    let start = cursor.map_or(Start::First, Start::After);
    let (items, next) = match outcome {
        _ if !user.is_empty() => {
            let (items, next, _) = store::audits_of_user(store, user, outcome, start, 25).await?;
            (items, next)
        }
        Some(o) => store::audits_by_outcome(store, o, cursor, 25).await?,
        None => return Ok(AttemptPage::default()),
    };
    Ok(AttemptPage {
        rows: items.into_iter().map(row).collect(),
        next,
        user_ref: String::new(),
    })
}

/// An outcome as chosen on a page: empty for all of them.
pub fn parse_outcome(outcome: &str) -> Result<Option<Action>, AppError> {
    if outcome.is_empty() {
        return Ok(None);
    }
    Action::parse(outcome)
        .map(Some)
        .ok_or_else(|| AppError::invalid("outcome", "Unknown outcome."))
}

/// A user id as typed into a page: within the ids the API takes (128 characters), so it
/// stays within DynamoDB's key sizes.
fn check_user(user: &str) -> Result<(), AppError> {
    if user.chars().count() > 128 {
        return Err(AppError::invalid(
            "user",
            "A user id is at most 128 characters.",
        ));
    }
    Ok(())
}

/// A user's newest measurements and the rejected attempts among their newest audits.
pub async fn series(store: &Store, user: &str) -> Result<(Vec<Point>, Vec<Rejected>), AppError> {
    check_user(user)?;
    let points = store::measurements_of_user(store, user, 200)
        .await?
        .into_iter()
        .map(|m| Point {
            timestamp: m.timestamp,
            weight_kg: m.weight_kg,
            overridden: m.overridden,
        })
        .collect();
    let (recent, _, _) = store::audits_of_user(store, user, None, Start::First, 200).await?;
    let rejected = recent
        .into_iter()
        .filter(|a| {
            matches!(
                a.action,
                Action::OutOfOrder | Action::Conflict | Action::Skipped
            )
        })
        .filter_map(|a| {
            let p = a.payload?;
            Some(Rejected {
                timestamp: p.timestamp,
                weight_kg: p.weight_kg.parse().ok()?,
                action: a.action.as_str().into(),
            })
        })
        .collect();
    Ok((points, rejected))
}

/// Hourly counts over `24h` or `7d`, every hour present, and the duplicate alert (judged
/// from 20 attempts in the window).
pub async fn rates(
    store: &Store,
    window: &str,
    alert_duplicate_max_pct: f64,
    now: DateTime<Utc>,
) -> Result<Rates, AppError> {
    let hours = window_hours(window);
    let from = now - Duration::hours(hours - 1);
    let found = store::stats(store, &hour_of(from), &hour_of(now)).await?;
    Ok(rates_of(
        found,
        hours,
        alert_duplicate_max_pct,
        now,
        "every user",
    ))
}

/// Attempts audited per user read for the user's rates, at most (the newest).
const USER_AUDITS_MAX: usize = 2_000;

/// [`rates`] of one user, counted from the user's own attempt records in the window (the
/// hourly counters are kept for every user together), and how long the user's conflicts
/// took to resolve ([`resolution`]).
pub async fn rates_of_user(
    store: &Store,
    user: &str,
    window: &str,
    alert_duplicate_max_pct: f64,
    now: DateTime<Utc>,
) -> Result<(Rates, String), AppError> {
    let hours = window_hours(window);
    let first = hour_of(now - Duration::hours(hours - 1));
    let mut by_hour: std::collections::BTreeMap<String, HashMap<String, i64>> = Default::default();
    let mut start = None::<String>;
    let mut read = 0;
    let mut capped = false;
    let mut seen = Vec::new();
    'pages: loop {
        let at = start.as_deref().map_or(Start::First, Start::After);
        let (items, next, _) = store::audits_of_user(store, user, None, at, 500).await?;
        for a in items {
            let hour = a.at.get(..13).unwrap_or_default().to_string();
            if hour < first {
                break 'pages;
            }
            let c = by_hour.entry(hour).or_default();
            *c.entry("attempts".into()).or_default() += 1;
            *c.entry(a.action.as_str().into()).or_default() += 1;
            read += 1;
            seen.push((a.measurement_id, a.action, a.at));
        }
        match next {
            Some(n) if read < USER_AUDITS_MAX => start = Some(n),
            Some(_) => {
                capped = true;
                break;
            }
            None => break,
        }
    }
    let found = by_hour.into_iter().collect();
    let of = if capped {
        format!("this user's newest {USER_AUDITS_MAX} attempts")
    } else {
        "this user".to_string()
    };
    let rates = rates_of(found, hours, alert_duplicate_max_pct, now, &of);
    Ok((rates, resolution(seen)))
}

/// Conflict resolution time (docs/measurements.md): from a measurement's first refused attempt
/// (409 conflict or 422 invalid) to the client's next accepted one of the same id (stored,
/// answered as a duplicate of what is stored, or an override), in words.
pub fn resolution(mut seen: Vec<(String, Action, String)>) -> String {
    seen.sort_by(|a, b| a.2.cmp(&b.2));
    let mut open: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut took: Vec<i64> = Vec::new();
    for (id, action, at) in seen {
        let Ok(at) = DateTime::parse_from_rfc3339(&at).map(|t| t.with_timezone(&Utc)) else {
            continue;
        };
        match action {
            Action::Conflict | Action::Invalid => {
                open.entry(id).or_insert(at);
            }
            Action::Accepted | Action::Duplicate | Action::Override => {
                if let Some(first) = open.remove(&id) {
                    took.push((at - first).num_seconds().max(0));
                }
            }
            _ => {}
        }
    }
    if took.is_empty() && open.is_empty() {
        return String::new();
    }
    took.sort_unstable();
    let words = |s: i64| match s {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    };
    let mut line = match took.len() {
        0 => "No conflict resolved yet".to_string(),
        n => format!(
            "{n} conflict(s) resolved: median {}, longest {}",
            words(took[n / 2]),
            words(took[n - 1])
        ),
    };
    if !open.is_empty() {
        line.push_str(&format!("; {} still open", open.len()));
    }
    line
}

fn window_hours(window: &str) -> i64 {
    match window {
        "7d" => 7 * 24,
        _ => 24,
    }
}

fn hour_of(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H").to_string()
}

/// The rates of hourly counts `found` (`hour → counter → n`) over `hours` up to `now`.
fn rates_of(
    found: Vec<(String, HashMap<String, i64>)>,
    hours: i64,
    alert_duplicate_max_pct: f64,
    now: DateTime<Utc>,
    of: &str,
) -> Rates {
    let hour = hour_of;
    let from = now - Duration::hours(hours - 1);
    let mut series = Vec::with_capacity(hours as usize);
    let mut totals = RateHour::default();
    for i in 0..hours {
        let h = hour(from + Duration::hours(i));
        let c = found
            .iter()
            .find(|(k, _)| *k == h)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        let get = |k: &str| c.get(k).copied().unwrap_or(0).max(0) as u64;
        let r = RateHour {
            hour: h,
            attempts: get("attempts"),
            accepted: get(Action::Accepted.as_str()),
            duplicate: get(Action::Duplicate.as_str()),
            conflict: get(Action::Conflict.as_str()),
            out_of_order: get(Action::OutOfOrder.as_str()),
            invalid: get(Action::Invalid.as_str()),
            overrides: get(Action::Override.as_str()),
            skipped: get(Action::Skipped.as_str()),
        };
        totals.attempts += r.attempts;
        totals.accepted += r.accepted;
        totals.duplicate += r.duplicate;
        totals.conflict += r.conflict;
        totals.out_of_order += r.out_of_order;
        totals.invalid += r.invalid;
        totals.overrides += r.overrides;
        totals.skipped += r.skipped;
        series.push(r);
    }
    let duplicate_pct = percent(totals.duplicate, totals.attempts);
    Rates {
        of: of.to_string(),
        window: if hours == 24 { "24h" } else { "7d" }.into(),
        duplicate_pct,
        out_of_order_pct: percent(totals.out_of_order, totals.attempts),
        override_pct: percent(totals.overrides, totals.attempts),
        alert_duplicate_max_pct,
        duplicate_breached: totals.attempts >= 20
            && duplicate_pct.is_some_and(|p| p > alert_duplicate_max_pct),
        totals,
        series,
    }
}

/// The measurement alert rules now, over every user (docs/measurements.md, "Alerts").
/// The measurement endpoints' idempotency health over `window`.
pub async fn endpoint_health(
    engine: &crate::server::services::idempotency::Engine,
    window: &str,
) -> Result<Vec<crate::model::idempotency::ScopeHealth>, AppError> {
    use crate::server::services::alerts::measurements::SCOPE;
    Ok(engine
        .health(window)
        .await?
        .scopes
        .into_iter()
        .filter(|s| s.scope.contains(SCOPE))
        .collect())
}

/// `all` are every user's rates over 24 hours, `scopes` the measurement endpoints'
/// idempotency health over the same window.
pub fn rule_lines(
    all: &Rates,
    scopes: &[crate::model::idempotency::ScopeHealth],
    m: &crate::server::config::MeasurementsSection,
) -> Vec<RuleLine> {
    crate::server::services::alerts::measurements::rules(all, scopes, m)
        .into_iter()
        .map(|j| RuleLine {
            summary: j.summary,
            breached: j.breached,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_is_resolved_by_the_next_accepted_attempt_of_its_id() {
        let at = |m: u32| format!("2026-11-26T10:{m:02}:00Z");
        let seen = vec![
            ("m-2".to_string(), Action::Accepted, at(9)),
            ("m-1".to_string(), Action::Conflict, at(0)),
            ("m-1".to_string(), Action::Conflict, at(1)),
            ("m-1".to_string(), Action::Duplicate, at(4)),
            ("m-3".to_string(), Action::Invalid, at(5)),
        ];
        assert_eq!(
            resolution(seen),
            "1 conflict(s) resolved: median 4 min, longest 4 min; 1 still open"
        );
        assert_eq!(resolution(Vec::new()), "");
    }
}
