//! Measurements (docs/measurements.md): a user's weight over time with the rejected
//! attempts marked, every attempt with its outcome and reason (CSV too), and the duplicate,
//! out-of-order and override rates next to the endpoints' idempotency health.

mod chart;

use chart::Series;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::measurements::load_measurements;
use crate::model::idempotency::{operation, ScopeHealth};
use crate::model::measurements::{MeasurementsView, RateHour, Rates};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::attempts::AttemptsSection;
use crate::ui::components::form::Options;
use crate::ui::components::links::{enc, split_reference};
use crate::ui::components::scope_card::{anchor, pct};
use crate::ui::data::page_data;

const OUTCOMES: [(&str, &str); 8] = [
    ("", "any"),
    ("accepted", "accepted"),
    ("duplicate", "duplicate"),
    ("conflict", "conflict"),
    ("out_of_order", "out_of_order"),
    ("invalid", "invalid"),
    ("override", "override"),
    ("skipped", "skipped"),
];

const WINDOWS: [(&str, &str); 2] = [("24h", "24 hours"), ("7d", "7 days")];

#[component]
pub fn MeasurementsPage() -> impl IntoView {
    let query = use_query_map();
    let q = move |k: &'static str| query.read().get(k).unwrap_or_default();
    let data = page_data(
        move || {
            (
                q("user"),
                q("outcome"),
                query.read().get("cursor"),
                q("window"),
            )
        },
        |(u, o, c, w)| load_measurements(u, o, c, w),
    );
    // Anything but "7d" is the default window.
    let window = move || if q("window") == "7d" { "7d" } else { "24h" };
    let input = "mt-1 block rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        <Title text="Measurements" />
        <h1 class="text-2xl font-semibold">"Measurements"</h1>
        <p class="mt-1 text-sm text-slate-600">"Each measurement id is stored once and each user's timestamps only move forward; every attempt is audited."</p>
        // Posted to /find: a typed user id goes into the address as its reference only.
        <form method="post" action="/find" class="mt-4 flex flex-wrap items-end gap-3 text-sm">
            <input type="hidden" name="page" value="measurements" />
            {move || {
                let (reference, typed) = split_reference(q("user"));
                view! {
                    <input type="hidden" name="user_ref" value=reference />
                    <label>"User id"<input name="user" value=typed class=input /></label>
                }
            }}
            <label>"Outcome"
                <select name="outcome" class=input>
                    {move || view! { <Options current=q("outcome") choices=&OUTCOMES /> }}
                </select>
            </label>
            <label>"Window"
                <select name="window" class=input>
                    {move || view! { <Options current=window() choices=&WINDOWS /> }}
                </select>
            </label>
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Show"</button>
        </form>
        <AsyncSection load=move || data spacing="mt-4" let:v>
            <Body v outcome=q("outcome") />
        </AsyncSection>
    }
}

/// The rates, the endpoints' idempotency health, the chosen user's chart and the attempts.
#[component]
fn Body(v: MeasurementsView, outcome: String) -> impl IntoView {
    let MeasurementsView {
        user_ref,
        points,
        rejected,
        attempts,
        rates,
        idempotency,
        rules,
        resolution,
        ..
    } = v;
    let chart = (!user_ref.is_empty()).then(|| view! { <Series points rejected /> }.into_any());
    let base = format!(
        "/measurements?user={}&outcome={}&window={}",
        enc(&user_ref),
        enc(&outcome),
        enc(&rates.window)
    );
    // The user's chart first: it is what the page was opened for.
    view! {
        {chart}
        <RateTiles rates=rates.clone() />
        {(!resolution.is_empty()).then(|| view! {
            <p class="mt-2 text-sm" data-testid="conflict-resolution">"Conflict resolution time (409 or 422 to the accepted resubmission): "{resolution}</p>
        })}
        <h2 class="mt-6 text-lg font-semibold">"Alert rules (every user)"</h2>
        <ul class="mt-2 space-y-1 text-sm" data-testid="measurement-rules">
            {rules.into_iter().map(|r| view! {
                <li class=if r.breached { "font-medium text-red-800" } else { "text-slate-700" } data-breached=r.breached.to_string()>{r.summary}</li>
            }).collect_view()}
        </ul>
        <IdempotencyLines scopes=idempotency window=rates.window.clone() />
        <AttemptsSection page=attempts outcome base />
    }
}

/// The measurement endpoints' idempotency health, a line each (requests, replays,
/// failures, the alerts firing), leading to the scope's card on the Idempotency page, where
/// its chart and alert tiles are (their code stays there, docs/page-weight.md).
#[component]
fn IdempotencyLines(scopes: Vec<ScopeHealth>, window: String) -> impl IntoView {
    let lines = scopes
        .into_iter()
        .map(|s| {
            let (name, _) = operation(&s.scope);
            let firing: Vec<&str> = s
                .alerts
                .iter()
                .filter(|a| a.breached)
                .map(|a| a.label.as_str())
                .collect();
            let verdict = if firing.is_empty() {
                "no alert firing".to_string()
            } else {
                format!("alert firing: {}", firing.join(", "))
            };
            let c = &s.totals;
            let text = format!(
                "{name}: {} requests, {} replayed, {} failures; {verdict}",
                c.requests, c.replayed, c.failures
            );
            let href = format!("/idempotency?window={}#{}", enc(&window), anchor(&s.scope));
            let class = if firing.is_empty() {
                "text-slate-700"
            } else {
                "font-medium text-red-800"
            };
            view! {
                <li class=class data-testid=format!("scope-{}", s.scope)>
                    {text} " " <a class="text-sky-800 underline" href=href>"Details →"</a>
                </li>
            }
        })
        .collect_view();
    view! {
        <h2 class="mt-6 text-lg font-semibold">"Idempotency of the measurement endpoints"</h2>
        <ul class="mt-2 space-y-1 text-sm" data-testid="measurement-idempotency">{lines}</ul>
    }
}

/// A rate in percent, red when it breaches its alert.
fn rate_tile(
    label: &'static str,
    value: Option<f64>,
    breached: bool,
    testid: &'static str,
) -> impl IntoView {
    let class = if breached {
        "rounded border border-red-300 bg-red-50 p-3 text-red-800"
    } else {
        "rounded border border-slate-200 bg-white p-3"
    };
    view! {
        <div class=class data-testid=testid data-breached=breached.to_string()>
            <div class="text-xs uppercase tracking-wide">{label}</div>
            <div class="text-2xl font-semibold">{pct(value)}</div>
        </div>
    }
}

/// The window's attempts and its duplicate, out-of-order and override rates, with the
/// duplicate alert's rule and the attempts per hour.
#[component]
fn RateTiles(rates: Rates) -> impl IntoView {
    let rule = format!(
        "Alert when duplicates exceed {:.0} % of at least 20 attempts.",
        rates.alert_duplicate_max_pct
    );
    view! {
        <section class="mt-6" aria-label="Rates">
            <h2 class="text-lg font-semibold">{format!("Rates of {}, last {}", rates.of, rates.window)}</h2>
            <div class="mt-2 grid grid-cols-1 gap-3 sm:grid-cols-4">
                <div class="rounded border border-slate-200 bg-white p-3">
                    <div class="text-xs uppercase tracking-wide">"Attempts"</div>
                    <div class="text-2xl font-semibold" data-testid="attempts">{rates.totals.attempts}</div>
                </div>
                {rate_tile("Duplicates", rates.duplicate_pct, rates.duplicate_breached, "rate-duplicate")}
                {rate_tile("Out of order", rates.out_of_order_pct, false, "rate-out-of-order")}
                {rate_tile("Overrides", rates.override_pct, false, "rate-override")}
            </div>
            <p class="mt-1 text-xs text-slate-500">{rule}</p>
            <HourlyAttempts series=rates.series />
        </section>
    }
}

/// Attempts per hour (grey) with duplicates (amber), out-of-order (red) and overrides
/// (violet), server-rendered SVG.
#[component]
fn HourlyAttempts(series: Vec<RateHour>) -> impl IntoView {
    let max = series.iter().map(|h| h.attempts).max().unwrap_or(0).max(1) as f64;
    let n = series.len().max(1) as f64;
    let (w, h) = (720.0, 100.0);
    let bw = w / n;
    let bars = series
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let bar = |v: u64, class: &'static str| {
                let bh = v as f64 / max * (h - 8.0);
                view! { <rect x=format!("{:.1}", i as f64 * bw) y=format!("{:.1}", h - bh) width=format!("{:.1}", (bw - 1.0).max(0.5)) height=format!("{bh:.1}") class=class /> }
            };
            view! {
                <g>
                    <title>{format!("{} UTC: {} attempts, {} duplicates, {} out of order, {} overrides", r.hour, r.attempts, r.duplicate, r.out_of_order, r.overrides)}</title>
                    {bar(r.attempts, "fill-slate-300")}
                    {bar(r.duplicate, "fill-amber-500")}
                    {bar(r.out_of_order, "fill-red-500")}
                    {bar(r.overrides, "fill-violet-500")}
                </g>
            }
        })
        .collect_view();
    view! {
        <svg viewBox=format!("0 0 {w} {h}") class="mt-2 h-24 w-full" role="img" aria-label="Attempts per hour">{bars}</svg>
        <p class="text-xs text-slate-500">"attempts (grey), duplicates (amber), out of order (red), overrides (violet) per hour"</p>
    }
}
