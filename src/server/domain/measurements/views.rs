//! What the console reads of measurements: a user's series and attempts, attempts by
//! outcome, and the hourly rates with their alert.

use chrono::{DateTime, Duration, Utc};

use crate::model::measurements::{AttemptPage, AttemptRow, Point, RateHour, Rates, Rejected};
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
pub fn for_role(mut page: AttemptPage, role: crate::model::accounts::Role) -> AttemptPage {
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
    let start = cursor
        .filter(|c| !c.is_empty())
        .map_or(Start::First, Start::After);
    let (items, next, _) = match outcome {
        _ if !user.is_empty() => store::audits_of_user(store, user, outcome, start, 25).await?,
        Some(o) => store::audits_by_outcome(store, o, start, 25).await?,
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
    let hours = match window {
        "7d" => 7 * 24,
        _ => 24,
    };
    let hour = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H").to_string();
    let from = now - Duration::hours(hours - 1);
    let found = store::stats(store, &hour(from), &hour(now)).await?;
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
    Ok(Rates {
        window: if hours == 24 { "24h" } else { "7d" }.into(),
        duplicate_pct,
        out_of_order_pct: percent(totals.out_of_order, totals.attempts),
        override_pct: percent(totals.overrides, totals.attempts),
        alert_duplicate_max_pct,
        duplicate_breached: totals.attempts >= 20
            && duplicate_pct.is_some_and(|p| p > alert_duplicate_max_pct),
        totals,
        series,
    })
}
