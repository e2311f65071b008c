//! Audit: what the console and the middleware did, by conversation, by action type, or by
//! day and time range. Payloads are redacted before they are stored.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::events::list_audit;
use crate::api::measurements::list_measurement_attempts;
use crate::model::events::ACTION_TYPES;
use crate::ui::components::alert::ErrorBox;
use crate::ui::components::attempts::AttemptsSection;
use crate::ui::components::audit_table::AuditTable;
use crate::ui::components::links::{enc, is_reference};

#[component]
pub fn AuditPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let rows = Resource::new(
        move || {
            (
                get("conversation"),
                get("action_type"),
                get("day"),
                get("from"),
                get("to"),
                query.read().get("cursor"),
            )
        },
        |(c, t, d, f, to, cursor)| list_audit(c, t, d, f, to, cursor),
    );
    let field = move |name: &'static str, label: &'static str, placeholder: &'static str| {
        view! {
            <label class="text-sm">
                <span class="block text-slate-600">{label}</span>
                <input name=name placeholder=placeholder value=move || get(name) class="w-40 rounded border border-slate-300 px-2 py-1 text-sm" />
            </label>
        }
    };
    let conversation_value = move || {
        let c = get("conversation");
        if is_reference(&c) {
            String::new()
        } else {
            c
        }
    };
    let types = move || {
        let current = get("action_type");
        ACTION_TYPES
            .iter()
            .map(|(value, label)| view! { <option value=*value selected=current == *value>{*label}</option> })
            .collect_view()
    };
    view! {
        <Title text="Audit" />
        <h1 class="text-2xl font-semibold">"Audit"</h1>
        <p class="mt-1 text-sm text-slate-600">"By conversation, action type, day (UTC) and time range, in any combination; newest first."</p>
        // Posted, not a GET: a conversation id can carry a phone number or an email.
        <form method="post" action="/find" class="mt-4 flex flex-wrap items-end gap-2">
            <input type="hidden" name="page" value="audit" />
            // The conversation on screen stays the filter's until another one is typed.
            <input type="hidden" name="conversation_ref" value=move || { let c = get("conversation"); if is_reference(&c) { c } else { String::new() } } />
            <label class="text-sm">
                <span class="block text-slate-600">"Conversation"</span>
                <input name="conversation" placeholder="id" value=conversation_value class="w-40 rounded border border-slate-300 px-2 py-1 text-sm" />
            </label>
            <label class="text-sm">
                <span class="block text-slate-600">"Action type"</span>
                <select name="action_type" class="rounded border border-slate-300 px-2 py-1 text-sm">
                    <option value="">"any"</option>
                    {types}
                </select>
            </label>
            {field("day", "Day", "YYYY-MM-DD")}
            {field("from", "From", "HH:MM")}
            {field("to", "To", "HH:MM")}
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-sm text-white">"Show"</button>
            <a href="/audit" class="px-2 py-1.5 text-sm text-sky-800 underline">"Clear"</a>
        </form>
        <Transition fallback=|| view! { <p class="mt-4 text-slate-500">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match rows.await {
                    Ok(page) => {
                        let more = page.next_cursor.clone().map(|c| {
                            let href = format!(
                                "/audit?conversation={}&action_type={}&day={}&from={}&to={}&cursor={}",
                                enc(&get("conversation")), enc(&get("action_type")), enc(&get("day")),
                                enc(&get("from")), enc(&get("to")), enc(&c)
                            );
                            view! { <a class="mt-2 inline-block text-sm text-sky-800 underline" href=href>"Older"</a> }
                        });
                        let filtered = page.conversation.clone().map(|c| view! {
                            <p class="mt-3 text-sm text-slate-600" data-testid="audit-conversation">"Conversation "<span class="font-mono">{c}</span></p>
                        });
                        view! { {filtered} <AuditTable rows=page.rows /> {more} }.into_any()
                    }
                    Err(error) => view! { <div class="mt-4"><ErrorBox error /></div> }.into_any(),
                }
            })}
        </Transition>
        <MeasurementAttempts />
    }
}

/// Measurement attempts (design doc 5) by user or by outcome, with their CSV export.
#[component]
fn MeasurementAttempts() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let page = Resource::new(
        move || {
            (
                get("m_user"),
                get("m_outcome"),
                query.read().get("m_cursor"),
            )
        },
        |(u, o, c)| list_measurement_attempts(u, o, c),
    );
    view! {
        <h2 class="mt-10 text-lg font-semibold">"Measurement attempts"</h2>
        <form method="get" action="/audit" class="mt-2 flex flex-wrap items-end gap-2 text-sm">
            <label><span class="block text-slate-600">"User id"</span><input name="m_user" value=move || get("m_user") class="w-40 rounded border border-slate-300 px-2 py-1" /></label>
            <label><span class="block text-slate-600">"Outcome"</span><input name="m_outcome" value=move || get("m_outcome") placeholder="out_of_order, conflict…" class="w-40 rounded border border-slate-300 px-2 py-1" /></label>
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Show attempts"</button>
        </form>
        <Transition fallback=|| view! { <p class="mt-2 text-slate-500">"Loading…"</p> }>
            {move || Suspend::new(async move {
                let (user, outcome) = (get("m_user"), get("m_outcome"));
                let base = format!("/audit?m_user={}&m_outcome={}", enc(&user), enc(&outcome));
                match page.await {
                    Ok(p) => view! { <AttemptsSection page=p user outcome base cursor_param="m_cursor" /> }.into_any(),
                    Err(error) => view! { <div class="mt-2"><ErrorBox error /></div> }.into_any(),
                }
            })}
        </Transition>
    }
}
