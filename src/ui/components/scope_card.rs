//! One idempotency scope's health: its alert tiles, its counts, and requests per hour, on
//! the Idempotency page (the Measurements page links to its endpoints' cards).

use leptos::prelude::*;

use crate::model::idempotency::{Alert, Counts, HourPoint, ScopeHealth};

/// The card's anchor in the page (`#scope-http-POST--api-v1-events`).
pub fn anchor(scope: &str) -> String {
    let slug: String = scope
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("scope-{slug}")
}

pub fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1} %")).unwrap_or_else(|| "–".into())
}

#[component]
pub fn ScopeCard(s: ScopeHealth) -> impl IntoView {
    let ScopeHealth {
        scope,
        totals,
        series,
        alerts,
        min_requests,
    } = s;
    let judged = totals.requests as i64 >= min_requests;
    let (name, via) = crate::model::idempotency::operation(&scope);
    let numbers = [
        ("Requests", totals.requests),
        ("Ran", totals.fresh),
        ("Replayed", totals.replayed),
        ("In-progress conflicts", totals.in_progress),
        ("Stale takeovers", totals.takeovers),
        ("Retries after failure", totals.retries),
        ("Failures", totals.failures),
        ("Client errors", totals.client_errors),
        ("Mismatches", totals.mismatches),
    ];
    view! {
        <section id=anchor(&scope) class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm" aria-label=scope.clone() data-testid=format!("scope-{scope}")>
            <h3 class="text-base font-semibold">{name}</h3>
            <p class="text-xs text-slate-500 break-all">{format!("From the {via} · scope ")}<code>{scope.clone()}</code></p>
            <div class="mt-3 grid grid-cols-1 gap-3 sm:grid-cols-3">
                {alerts.into_iter().map(|a| view! { <AlertTile a /> }).collect_view()}
            </div>
            {(!judged).then(|| view! {
                <p class="mt-2 text-xs text-slate-500">{format!("Alerts are judged from {min_requests} requests in the window.")}</p>
            })}
            <dl class="mt-4 grid grid-cols-2 gap-x-6 gap-y-1 text-sm sm:grid-cols-4">
                {numbers.into_iter().map(|(label, n)| view! {
                    <div class="flex justify-between border-b border-slate-100 py-1">
                        <dt class="text-slate-600">{label}</dt>
                        <dd class="font-mono" data-testid=format!("count-{}", label.to_ascii_lowercase().replace(' ', "-"))>{n}</dd>
                    </div>
                }).collect_view()}
            </dl>
            <p class="mt-1 text-xs text-slate-500">"Failures: it did not happen. Client errors: refused on purpose, not failures."</p>
            <Chart series />
        </section>
    }
}

#[component]
fn AlertTile(a: Alert) -> impl IntoView {
    let class = match a.standing() {
        "breached" => "rounded border border-red-300 bg-red-50 p-3 text-red-800",
        "near" => "rounded border border-amber-300 bg-amber-50 p-3 text-amber-800",
        "fine" => "rounded border border-emerald-200 bg-emerald-50 p-3 text-emerald-800",
        _ => "rounded border border-slate-200 bg-slate-50 p-3 text-slate-800",
    };
    let rule = if a.standing() == "off" {
        "no alert for this scope: few replays only mean its callers rarely retry".to_string()
    } else {
        format!(
            "alert when {} {:.0} %",
            if a.above { "above" } else { "below" },
            a.threshold
        )
    };
    view! {
        <div class=class data-testid=format!("alert-{}", a.name) data-breached=a.breached.to_string() data-standing=a.standing()>
            <div class="text-xs uppercase tracking-wide">{a.label.clone()}</div>
            <div class="text-2xl font-semibold">{pct(a.value)}</div>
            <div class="text-xs">{if a.breached { format!("Breached: {rule}") } else { rule }}</div>
        </div>
    }
}

/// Requests per hour (grey) with replays (blue) and failures (red), server-rendered SVG.
#[component]
fn Chart(series: Vec<HourPoint>) -> impl IntoView {
    let n = series.len().max(1) as f64;
    let max = series
        .iter()
        .map(|p| p.counts.requests)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (w, h) = (720.0, 120.0);
    let bw = w / n;
    let bar = |i: usize, v: u64, class: &'static str| {
        let bh = v as f64 / max * (h - 10.0);
        view! { <rect x=format!("{:.1}", i as f64 * bw) y=format!("{:.1}", h - bh) width=format!("{:.1}", (bw - 1.0).max(0.5)) height=format!("{bh:.1}") class=class /> }
    };
    let first = series.first().map(|p| p.hour.clone()).unwrap_or_default();
    let last = series.last().map(|p| p.hour.clone()).unwrap_or_default();
    let bars = series
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let Counts { requests, replayed, failures, .. } = p.counts;
            view! {
                <g>
                    <title>{format!("{} UTC: {requests} requests, {replayed} replays, {failures} failures", p.hour)}</title>
                    {bar(i, requests, "fill-slate-300")}
                    {bar(i, replayed, "fill-sky-500")}
                    {bar(i, failures, "fill-red-500")}
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="mt-4">
            <svg viewBox=format!("0 0 {w} {h}") class="h-32 w-full" role="img" aria-label="Requests per hour">
                {bars}
            </svg>
            <figcaption class="mt-1 flex justify-between text-xs text-slate-500">
                <span>{first}":00 UTC"</span>
                <span>"requests (grey), replays (blue), failures (red) per hour"</span>
                <span>{last}":00 UTC"</span>
            </figcaption>
        </figure>
    }
}
