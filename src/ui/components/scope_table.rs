//! Every idempotency scope in one compact table: its requests and three rates over the
//! window, each with a sparkline by hour. The sparklines share their axes: requests on one
//! scale for every scope (the busiest hour of any scope is the top), rates on 0–100 %,
//! with the scope's alert threshold drawn as a dashed line. The cards below give the detail.

use leptos::prelude::*;

use super::scope_card::{anchor, pct};
use super::table::DataTable;
use crate::model::idempotency::{operation, Alert, Counts, HourPoint, ScopeHealth};

const W: f64 = 96.0;
const H: f64 = 24.0;

#[component]
pub fn ScopeTable(scopes: Vec<ScopeHealth>) -> impl IntoView {
    if scopes.is_empty() {
        return view! { <p class="mt-4 text-sm text-slate-500">"No requests in this window."</p> }
            .into_any();
    }
    // The shared scale of the request sparklines: the busiest hour of any scope.
    let busiest = scopes
        .iter()
        .flat_map(|s| s.series.iter().map(|p| p.counts.requests))
        .max()
        .unwrap_or(0)
        .max(1);
    let rows = scopes
        .into_iter()
        .map(|s| view! { <ScopeRow s busiest /> })
        .collect_view();
    view! {
        <DataTable
            label="Scopes"
            columns=&["Scope", "Requests", "Cache hit", "Stale takeover", "Failure"]
            align_right=&["Requests"]
            spacing="mt-4"
        >
            {rows}
        </DataTable>
        <p class="mt-1 text-xs text-slate-500">
            "Requests per hour on one scale; the dashed line is the alert threshold."
        </p>
    }
    .into_any()
}

#[component]
fn ScopeRow(s: ScopeHealth, busiest: u64) -> impl IntoView {
    let href = format!("#{}", anchor(&s.scope));
    let (name, via) = operation(&s.scope);
    let series = s.series;
    let rate_cell = |name: &str, rate: fn(&Counts) -> Option<f64>| {
        s.alerts
            .iter()
            .find(|a| a.name == name)
            .cloned()
            .map(|a| view! { <RateCell a series=series.clone() rate /> })
    };
    let cache = rate_cell("cache_hit", Counts::cache_hit_pct);
    let stale = rate_cell("stale_takeover", Counts::stale_takeover_pct);
    let failure = rate_cell("failure", Counts::failure_pct);
    let requests: Vec<f64> = series.iter().map(|p| p.counts.requests as f64).collect();
    view! {
        <tr class="border-t border-slate-100 align-middle" data-testid=format!("scope-row-{}", s.scope)>
            <td class="py-1.5 text-sm"><a class="text-sky-800 underline" href=href title=s.scope.clone()>{name}</a><span class="block text-xs text-slate-500">{via}</span></td>
            <td class="py-1.5 text-right">
                <span class="mr-2 font-mono">{s.totals.requests}</span>
                <Spark values=requests top=busiest as f64 threshold=None breached=false label=format!("{} requests by hour", s.scope) />
            </td>
            <td class="py-1.5">{cache}</td>
            <td class="py-1.5">{stale}</td>
            <td class="py-1.5">{failure}</td>
        </tr>
    }
}

/// A rate over the window, and its sparkline by hour against its threshold.
#[component]
fn RateCell(a: Alert, series: Vec<HourPoint>, rate: fn(&Counts) -> Option<f64>) -> impl IntoView {
    let values: Vec<f64> = series
        .iter()
        .map(|p| rate(&p.counts).unwrap_or(0.0))
        .collect();
    // A "below" threshold of 0 is no alert: nothing to draw.
    let threshold = (a.above || a.threshold > 0.0).then_some(a.threshold);
    let class = format!("font-mono font-semibold {}", a.colour());
    view! {
        <span class=class data-testid=format!("rate-{}", a.name) data-breached=a.breached.to_string() data-standing=a.standing()>{pct(a.value)}</span>
        " "
        <Spark values top=100.0 threshold breached=a.breached label=format!("{} by hour", a.label) />
    }
}

/// A sparkline of `values` on a scale from 0 to `top`, with an optional threshold line.
#[component]
fn Spark(
    values: Vec<f64>,
    top: f64,
    threshold: Option<f64>,
    breached: bool,
    label: String,
) -> impl IntoView {
    let n = values.len().max(2) as f64;
    let y = move |v: f64| H - 1.0 - (v / top).clamp(0.0, 1.0) * (H - 2.0);
    let points = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", i as f64 / (n - 1.0) * W, y(*v)))
        .collect::<Vec<_>>()
        .join(" ");
    let line = threshold.map(|t| {
        let ty = format!("{:.1}", y(t));
        let class = if breached { "stroke-red-500" } else { "stroke-slate-400" };
        view! { <line x1="0" x2=format!("{W}") y1=ty.clone() y2=ty class=class stroke-width="1" stroke-dasharray="3 2" data-testid="threshold" /> }
    });
    view! {
        <svg viewBox=format!("0 0 {W} {H}") class="inline-block h-6 w-24 align-middle" role="img" aria-label=label>
            {line}
            <polyline points=points fill="none" class="stroke-sky-600" stroke-width="1.5" />
        </svg>
    }
}
