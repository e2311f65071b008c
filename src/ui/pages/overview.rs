//! Overview: the kill switches, the last hour of events and the breached idempotency
//! alerts, each linking to its page.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::alerts::load_firing_alerts;
use crate::api::events::load_event_stats;
use crate::api::idempotency::idempotency_alerts;
use crate::api::kill_switches::{load_kill_switches, KillSwitchesView};
use crate::model::alerts::FiringAlert;
use crate::model::events::EventStats;
use crate::model::idempotency::Alert;
use crate::model::kill_switches::Switch;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::badge::OnOff;
use crate::ui::components::moment::Moment;
use crate::ui::components::receiver::ReceiverStatus;
use crate::ui::components::scope_card::pct;
use crate::ui::data::page_data;
use crate::ui::pages::kill_switches::{follow_switches, Pending, Upcoming};

#[component]
pub fn OverviewPage() -> impl IntoView {
    let switches = page_data(|| (), |_| load_kill_switches());
    follow_switches(switches);
    let alerts = page_data(|| (), |_| idempotency_alerts());
    let events = page_data(|| (), |_| load_event_stats());
    let firing = page_data(|| (), |_| load_firing_alerts());
    view! {
        <Title text="Overview" />
        <h1 class="text-2xl font-semibold">"Overview"</h1>
        <AsyncSection load=move || firing spacing="mt-4" let:list>
            <FiringAlerts list />
        </AsyncSection>
        <AsyncSection load=move || switches spacing="mt-4" let:v>
            <SwitchStates v />
        </AsyncSection>
        <h2 class="mt-8 text-lg font-semibold">"Events (last hour)"</h2>
        <AsyncSection load=move || events let:s>
            <EventTiles s />
        </AsyncSection>
        <h2 class="mt-8 text-lg font-semibold">"Idempotency alerts (24 h)"</h2>
        <AsyncSection load=move || alerts let:list>
            <BreachedAlerts list />
        </AsyncSection>
    }
}

/// Each kill switch's state as a badge.
#[component]
fn SwitchStates(v: KillSwitchesView) -> impl IntoView {
    let items = Switch::ALL
        .into_iter()
        .map(|s| {
            let on = v.switches.get(s).enabled;
            view! {
                <div
                    class="flex items-center justify-between rounded-lg border border-slate-200 bg-white p-4"
                    data-testid=format!("overview-switch-{}", s.key())
                >
                    <span class="font-medium">{s.label()}</span>
                    <OnOff on alarming_when_on=s == Switch::AutomationEnabled />
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="mt-4" aria-label="Kill switches">
            <div class="grid gap-4 md:grid-cols-2">{items}</div>
            <Pending pending=v.pending />
            <Upcoming scheduled=v.scheduled />
            <a class="mt-2 inline-block text-sm text-sky-700 underline" href="/kill-switches">
                "Manage kill switches"
            </a>
        </section>
    }
}

/// The last hour's event rates as tiles, and where side effects go.
#[component]
fn EventTiles(s: EventStats) -> impl IntoView {
    // A busy hour is estimated from its newest events, a busy day's suppressed count
    // stops at a bound: each says so.
    let about = if s.events_estimated { "≈ " } else { "" };
    let tiles = [
        (
            "Events / min",
            format!("{about}{:.1}", s.per_minute),
            "events-per-minute",
        ),
        (
            "Duplicate rate",
            pct(s.duplicate_rate_pct),
            "duplicate-rate",
        ),
        (
            "Suppressed by safe mode today",
            format!(
                "{}{}",
                s.suppressed_today,
                if s.suppressed_exact { "" } else { "+" }
            ),
            "suppressed-today",
        ),
        ("Outbox", s.outbox_pending.to_string(), "outbox-pending"),
    ];
    let summary = format!(
        "{about}{} events in the last hour, from {} webhook calls ({} of them duplicates){}.",
        s.events_last_hour,
        s.received_last_hour,
        s.duplicates_last_hour,
        if s.events_estimated {
            ", estimated from the newest events"
        } else {
            ""
        }
    );
    view! {
        <div class="mt-2 grid gap-4 md:grid-cols-4">
            {tiles.into_iter().map(|(label, value, id)| view! {
                <div class="rounded-lg border border-slate-200 bg-white p-4">
                    <div class="text-sm text-slate-600">{label}</div>
                    <div class="mt-1 font-mono text-xl" data-testid=id>{value}</div>
                </div>
            }).collect_view()}
        </div>
        <p class="mt-2 text-xs text-slate-500">{summary}</p>
        <a class="mt-1 inline-block text-sm text-sky-700 underline" href="/events">"Open Events"</a>
        <section aria-label="Receiver" class="mt-6">
            <h2 class="text-lg font-semibold">"Receiver"</h2>
            <ReceiverStatus receiver=s.receiver />
            <a class="mt-1 inline-block text-sm text-sky-700 underline" href="/outbox">"Open Outbox"</a>
        </section>
    }
}

/// The idempotency alerts breached in the last 24 hours, by scope.
#[component]
fn BreachedAlerts(list: Vec<(String, Alert)>) -> impl IntoView {
    if list.is_empty() {
        return view! {
            <p class="mt-2 text-sm text-slate-600" data-testid="idempotency-alerts">"No alert breached."</p>
        }
        .into_any();
    }
    view! {
        <ul class="mt-2 space-y-1" data-testid="idempotency-alerts">
            {list.into_iter().map(|(scope, a)| view! {
                <li class="rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800">
                    <span class="font-mono">{scope}</span>": "{a.label.clone()}" "
                    {a.value.map(|v| format!("{v:.1} %")).unwrap_or_default()}
                    {format!(" (alert when {} {:.0} %)", if a.above { "above" } else { "below" }, a.threshold)}
                </li>
            }).collect_view()}
        </ul>
        <a class="mt-2 inline-block text-sm text-sky-700 underline" href="/idempotency">"Open Idempotency"</a>
    }
    .into_any()
}

/// The alerts the consoles announced and that still hold (every rule, every page).
#[component]
fn FiringAlerts(list: Vec<FiringAlert>) -> impl IntoView {
    if list.is_empty() {
        return view! {
            <p class="text-sm text-slate-600" data-testid="firing-alerts">"No alert is firing."</p>
        }
        .into_any();
    }
    view! {
        <section aria-label="Firing alerts" data-testid="firing-alerts">
            <h2 class="text-lg font-semibold text-red-800">"Firing alerts"</h2>
            <ul class="mt-2 space-y-1">
                {list.into_iter().map(|a| view! {
                    <li class="rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800">
                        {a.summary}
                        <span class="ml-2 text-xs text-red-700">"since " <Moment iso=a.since /></span>
                    </li>
                }).collect_view()}
            </ul>
        </section>
    }
    .into_any()
}
