//! Where side effects go and how that goes, the same on the Overview and the Outbox: the
//! receiver's URL (as the reader's role may see it), whether delivery is on, the limits
//! every console keeps to, its queue depth, and its health — the last hour's attempts
//! against deliveries, the last success, and while it fails, since when and the last error
//! in words.

use leptos::prelude::*;

use crate::model::outbox::{ReceiverHealth, ReceiverView};
use crate::ui::components::moment::Moment;

#[component]
pub fn ReceiverStatus(receiver: ReceiverView) -> impl IntoView {
    let status = match (receiver.source.as_str(), receiver.enabled) {
        ("none", _) => "No receiver: side effects wait in the outbox.".to_string(),
        (_, true) => format!("Delivering to {}", receiver.url),
        (_, false) => format!(
            "Delivery to {} is off. {}",
            receiver.url,
            receiver.disabled_reason.clone().unwrap_or_default()
        ),
    };
    view! {
        <p class="mt-1 text-sm" data-testid="receiver-status">{status}</p>
        {receiver.waits.map(|w| view! {
            <p class="mt-1 text-sm font-medium text-amber-900" data-testid="receiver-waits">{w.words}</p>
        })}
        {(!receiver.limits.is_empty()).then(|| view! {
            <p class="mt-1 text-sm" data-testid="receiver-limits">{receiver.limits}</p>
        })}
        {(!receiver.queue.is_empty()).then(|| view! {
            <p class="mt-1 text-sm" data-testid="receiver-queue">{receiver.queue}</p>
        })}
        {receiver.health.map(|h| view! { <Health h /> })}
    }
}

#[component]
fn Health(h: ReceiverHealth) -> impl IntoView {
    let failing = h.failing_since.is_some();
    // Counted by plain additions: one sent again after its answer was lost counts twice
    // (docs/dynamodb.md, "Counters a resend could inflate").
    let tally = format!(
        "Last hour: about {} of {} delivery attempts delivered.",
        h.delivered_last_hour, h.attempts_last_hour
    );
    let success = match h.last_success {
        Some(at) => view! { " Last success " <Moment iso=at /> "." }.into_any(),
        None => view! { " No delivery has succeeded yet." }.into_any(),
    };
    let trouble = h.failing_since.map(|since| {
        view! {
            <span class="block font-medium">"Failing since " <Moment iso=since /> "."</span>
            <span class="block">"Last error: " {h.last_error.unwrap_or_default()}</span>
        }
    });
    let class = if failing {
        "mt-2 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-900"
    } else {
        "mt-2 text-sm text-slate-700"
    };
    view! {
        <div class=class data-testid="receiver-health" data-failing=failing.to_string()>
            {trouble}
            <span title="Approximate: an attempt whose count was sent again after a lost answer counts twice">
                {tally}
            </span>
            {success}
        </div>
    }
}
