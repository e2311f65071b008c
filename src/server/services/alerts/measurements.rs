//! The measurement rules of docs/measurements.md ("Alerts"), judged over the 24-hour
//! hourly counts the Measurements page shows: the duplicate rate, an out-of-order spike
//! (the last hour against the 23 before it), a cache-hit drop on the measurement
//! endpoints (likewise), and audit storage growth (attempt records, each audited, per
//! hour). Pure: the alerter and the page judge the same figures the same way.

use crate::model::idempotency::{Counts, ScopeHealth};
use crate::model::measurements::{RateHour, Rates};
use crate::model::percent;
use crate::server::config::MeasurementsSection;

use super::Judged;

/// What the measurement endpoints' idempotency scopes contain (`http:POST /api/v1/measurements…`).
pub const SCOPE: &str = "/api/v1/measurements";

/// A rate judged over one hour needs this many attempts (or requests) in it.
pub const MIN_PER_HOUR: u64 = 20;
/// An out-of-order spike: the last hour's rate is at least this many times its baseline.
pub const SPIKE_FACTOR: f64 = 3.0;
/// A cache-hit drop: the last hour's rate is below this share of a baseline of at least
/// [`CACHE_HIT_BASELINE_MIN_PCT`].
pub const DROP_TO: f64 = 0.5;
pub const CACHE_HIT_BASELINE_MIN_PCT: f64 = 10.0;

fn shown(v: Option<f64>) -> String {
    v.map_or("no data".into(), |v| format!("{v:.1}%"))
}

/// Every measurement rule's verdict; `scopes` are the measurement endpoints' idempotency
/// scopes over the same 24 hours.
pub fn rules(r: &Rates, scopes: &[ScopeHealth], m: &MeasurementsSection) -> Vec<Judged> {
    let mut out = vec![
        duplicates(r, m.alert_duplicate_max_pct),
        out_of_order_spike(r, m),
    ];
    out.extend(scopes.iter().map(cache_hit_drop));
    out.push(audit_growth(r, m.alert_audit_per_hour_max));
    out
}

fn duplicates(r: &Rates, max: f64) -> Judged {
    Judged {
        id: "measurements.duplicates".into(),
        breached: r.duplicate_breached,
        summary: format!(
            "Measurement duplicate rate is {}, above {max:.1}%, over 24 h ({} attempts)",
            shown(r.duplicate_pct),
            r.totals.attempts
        ),
        value: r.duplicate_pct,
        threshold: max,
        window: "24h",
        sample: r.totals.attempts,
        page: "/measurements",
    }
}

/// The last hour of `series` and the sum of the hours before it.
fn last_and_before(series: &[RateHour]) -> (RateHour, RateHour) {
    let mut before = RateHour::default();
    let (last, earlier) = series
        .split_last()
        .map_or((RateHour::default(), &[][..]), |(l, e)| (l.clone(), e));
    for h in earlier {
        before.attempts += h.attempts;
        before.out_of_order += h.out_of_order;
    }
    (last, before)
}

fn out_of_order_spike(r: &Rates, m: &MeasurementsSection) -> Judged {
    let (last, before) = last_and_before(&r.series);
    let now = percent(last.out_of_order, last.attempts);
    let baseline = percent(before.out_of_order, before.attempts).unwrap_or(0.0);
    let max = m.alert_out_of_order_max_pct;
    let breached = last.attempts >= MIN_PER_HOUR
        && now.is_some_and(|v| v > max && v >= SPIKE_FACTOR * baseline);
    Judged {
        id: "measurements.out_of_order_spike".into(),
        breached,
        summary: format!(
            "Out-of-order measurements are {} of the last hour's {} attempts, against {baseline:.1}% over the 23 hours before (alert above {max:.1}% and {SPIKE_FACTOR:.0}× the baseline)",
            shown(now),
            last.attempts
        ),
        value: now,
        threshold: max,
        window: "1h",
        sample: last.attempts,
        page: "/measurements",
    }
}

fn cache_hit_drop(s: &ScopeHealth) -> Judged {
    let mut before = Counts::default();
    let last = s.series.split_last().map(|(l, e)| {
        e.iter().for_each(|h| before.add(&h.counts));
        l.counts.clone()
    });
    let last = last.unwrap_or_default();
    let now = last.cache_hit_pct();
    let baseline = before.cache_hit_pct();
    let breached = last.requests >= MIN_PER_HOUR
        && before.requests >= MIN_PER_HOUR
        && baseline.is_some_and(|b| b >= CACHE_HIT_BASELINE_MIN_PCT)
        && now.zip(baseline).is_some_and(|(n, b)| n < b * DROP_TO);
    Judged {
        id: format!("measurements.cache_hit_drop:{}", s.scope),
        breached,
        summary: format!(
            "Cache hits of {} fell to {} in the last hour ({} requests) from {} over the 23 hours before (alert below half a baseline of at least {CACHE_HIT_BASELINE_MIN_PCT:.0}%)",
            s.scope,
            shown(now),
            last.requests,
            shown(baseline)
        ),
        value: now,
        threshold: baseline.unwrap_or(0.0) * DROP_TO,
        window: "1h",
        sample: last.requests,
        page: "/measurements",
    }
}

fn audit_growth(r: &Rates, max: i64) -> Judged {
    let last = r.series.last().map_or(0, |h| h.attempts);
    Judged {
        id: "measurements.audit_growth".into(),
        breached: last > max.max(0) as u64,
        summary: format!(
            "{last} measurement attempt records were written in the last hour (alert above {max} an hour)"
        ),
        value: Some(last as f64),
        threshold: max as f64,
        window: "1h",
        sample: last,
        page: "/measurements",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(attempts: u64, out_of_order: u64) -> RateHour {
        RateHour {
            attempts,
            out_of_order,
            ..RateHour::default()
        }
    }

    fn rates(series: Vec<RateHour>) -> Rates {
        Rates {
            series,
            ..Rates::default()
        }
    }

    #[test]
    fn an_out_of_order_spike_is_against_its_baseline() {
        let m = MeasurementsSection::default();
        // 2 % all day, then 12 % in the last hour: a spike.
        let mut series = vec![hour(100, 2); 23];
        series.push(hour(50, 6));
        assert!(out_of_order_spike(&rates(series.clone()), &m).breached);
        // 12 % all day: high, but no spike.
        let steady = vec![hour(50, 6); 24];
        assert!(!out_of_order_spike(&rates(steady), &m).breached);
        // Too few attempts in the last hour to judge.
        *series.last_mut().unwrap() = hour(10, 5);
        assert!(!out_of_order_spike(&rates(series), &m).breached);
    }

    #[test]
    fn audit_growth_counts_the_last_hour() {
        let mut series = vec![hour(50_000, 0); 23];
        series.push(hour(10, 0));
        assert!(!audit_growth(&rates(series.clone()), 10_000).breached);
        series.push(hour(10_001, 0));
        assert!(audit_growth(&rates(series), 10_000).breached);
    }
}
