use leptos::prelude::*;

/// An on/off state. `alarming` is the position that should catch the eye (red).
#[component]
pub fn OnOff(on: bool, #[prop(default = false)] alarming_when_on: bool) -> impl IntoView {
    let alarming = on == alarming_when_on;
    let class = match (on, alarming) {
        (_, true) => "inline-flex items-center rounded-full bg-red-100 px-3 py-1 text-sm font-bold text-red-800 ring-1 ring-red-300",
        (true, false) => "inline-flex items-center rounded-full bg-emerald-100 px-3 py-1 text-sm font-bold text-emerald-800 ring-1 ring-emerald-300",
        (false, false) => "inline-flex items-center rounded-full bg-slate-200 px-3 py-1 text-sm font-bold text-slate-700 ring-1 ring-slate-300",
    };
    view! { <span class=class>{if on { "ON" } else { "OFF" }}</span> }
}

/// The environment, prod in red.
#[component]
pub fn EnvBadge(env: String) -> impl IntoView {
    let class = match env.as_str() {
        "prod" => "rounded bg-red-600 px-2 py-0.5 text-xs font-bold uppercase tracking-wide text-white",
        "staging" => "rounded bg-amber-400 px-2 py-0.5 text-xs font-bold uppercase tracking-wide text-slate-900",
        _ => "rounded bg-sky-200 px-2 py-0.5 text-xs font-bold uppercase tracking-wide text-sky-900",
    };
    view! {
        <span class=class title="Environment" data-testid="env-badge">
            {env}
        </span>
    }
}

/// A conversation's status as a coloured pill, in words ("initial message sent").
#[component]
pub fn StatusPill(#[prop(into)] status: String) -> impl IntoView {
    let colour = match status.as_str() {
        "processing" => "bg-sky-100 text-sky-900 ring-sky-300",
        "initial_message_sent" => "bg-indigo-100 text-indigo-900 ring-indigo-300",
        "reply_received" => "bg-amber-100 text-amber-900 ring-amber-300",
        "response_sent" => "bg-violet-100 text-violet-900 ring-violet-300",
        "completed" => "bg-emerald-100 text-emerald-900 ring-emerald-300",
        "failed" => "bg-red-100 text-red-900 ring-red-300",
        _ => "bg-slate-100 text-slate-800 ring-slate-300",
    };
    view! {
        <span class=format!("inline-flex whitespace-nowrap rounded-full px-2 py-0.5 text-xs font-semibold ring-1 {colour}")>
            {status.replace('_', " ")}
        </span>
    }
}
