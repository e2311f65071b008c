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
