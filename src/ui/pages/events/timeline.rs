//! A conversation's timeline on its page: each event to the second, oldest first, with its
//! message id and duplicate deliveries, the decision, and each side effect's state.

use leptos::prelude::*;

use crate::model::events::{Timeline, TimelineEffect, TimelineEntry};
use crate::ui::components::moment::Moment;

#[component]
pub(super) fn ConversationTimeline(t: Timeline) -> impl IntoView {
    if t.entries.is_empty() {
        return view! { <p class="mt-2 text-sm text-slate-500">"No event of this conversation is kept."</p> }.into_any();
    }
    let older = t.older.then(|| {
        view! { <p class="mt-2 text-xs text-slate-500">"Older events are not shown: the 50 newest are."</p> }
    });
    view! {
        {older}
        <ol class="mt-2 space-y-3" aria-label="Timeline">
            {t.entries.into_iter().map(|e| view! { <Entry e /> }).collect_view()}
        </ol>
    }
    .into_any()
}

#[component]
fn Entry(e: TimelineEntry) -> impl IntoView {
    let duplicates = match e.duplicates {
        0 => "delivered once".to_string(),
        1 => "delivered twice: 1 duplicate, answered without a second effect".to_string(),
        n => format!(
            "delivered {} times: {n} duplicates, answered without a second effect",
            n + 1
        ),
    };
    view! {
        <li class="rounded-lg border border-slate-200 bg-white p-3 text-sm" data-testid="timeline-event">
            <div class="flex flex-wrap items-baseline gap-x-3">
                <Moment iso=e.at />
                <span class="font-medium">"Message "<span class="font-mono" data-testid="timeline-message">{e.message_id.unwrap_or_else(|| "(no id)".into())}</span></span>
                <span class="text-xs text-slate-600" data-testid="timeline-duplicates">{duplicates}</span>
            </div>
            <p class="mt-1" data-testid="timeline-decision">{e.decision}</p>
            <ul class="mt-1 space-y-1">
                {e.effects.into_iter().map(|f| view! { <Effect f /> }).collect_view()}
            </ul>
        </li>
    }
}

#[component]
fn Effect(f: TimelineEffect) -> impl IntoView {
    let tone = match f.state.as_str() {
        "delivered" => "bg-emerald-100 text-emerald-900",
        "failed" | "dead" => "bg-red-100 text-red-900",
        "held" | "sent" | "sending" => "bg-amber-100 text-amber-900",
        _ => "bg-slate-100 text-slate-800",
    };
    let state = f.state.clone();
    view! {
        <li class="flex flex-wrap items-baseline gap-x-2" data-testid="timeline-effect" data-state=state>
            <span>{f.what}</span>
            <span class=format!("rounded px-2 py-0.5 text-xs font-semibold {tone}")>{f.state}</span>
            <span class="text-xs text-slate-600">{f.words}" "<Moment iso=f.at /></span>
        </li>
    }
}
