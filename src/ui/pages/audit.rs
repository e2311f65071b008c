//! Audit: what the console and the middleware did, by conversation, by action type, or by
//! day and time range. Payloads are redacted before they are stored.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::audit::list_audit;
use crate::api::measurements::list_measurement_attempts;
use crate::model::audit::{AuditRows, ACTION_TYPES};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::attempts::AttemptsSection;
use crate::ui::components::audit_table::AuditTable;
use crate::ui::components::form::Options;
use crate::ui::components::links::{enc, split_reference};
use crate::ui::components::pager::Pager;
use crate::ui::data::page_data;

#[component]
pub fn AuditPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let rows = page_data(
        move || {
            (
                get("conversation"),
                get("action_type"),
                get("day"),
                get("from"),
                get("to"),
                get("tz"),
                query.read().get("cursor"),
            )
        },
        |(c, t, d, f, to, tz, cursor)| list_audit(c, t, d, f, to, tz, cursor),
    );
    // The filters without their cursor, for the paging links; the conversation by the
    // reference the server answered with.
    let base = move |conversation_ref: &str| {
        format!(
            "/audit?conversation={}&action_type={}&day={}&from={}&to={}&tz={}",
            enc(conversation_ref),
            enc(&get("action_type")),
            enc(&get("day")),
            enc(&get("from")),
            enc(&get("to")),
            enc(&get("tz"))
        )
    };
    view! {
        <Title text="Audit" />
        <h1 class="text-2xl font-semibold">"Audit"</h1>
        <p class="mt-1 text-sm text-slate-600">"Newest first."</p>
        <AuditFilters />
        <AsyncSection load=move || rows spacing="mt-4" let:page>
            {
                let base = base(&page.conversation_ref);
                view! { <AuditResults page base /> }
            }
        </AsyncSection>
        <MeasurementAttempts />
    }
}

/// The filter form, holding the filters on screen.
#[component]
fn AuditFilters() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let field = move |name: &'static str, label: &'static str, placeholder: &'static str| {
        view! {
            <label class="text-sm">
                <span class="block text-slate-600">{label}</span>
                <input name=name placeholder=placeholder value=move || get(name) class="w-40 rounded border border-slate-300 px-2 py-1 text-sm" />
            </label>
        }
    };
    let conversation = move || split_reference(get("conversation"));
    view! {
        // Posted, not a GET: a conversation id can carry a phone number or an email.
        <form method="post" action="/find" class="mt-4 flex flex-wrap items-end gap-2">
            <input type="hidden" name="page" value="audit" />
            // The conversation on screen stays the filter's until another one is typed.
            <input type="hidden" name="conversation_ref" value=move || conversation().0 />
            <label class="text-sm">
                <span class="block text-slate-600">"Conversation"</span>
                <input name="conversation" placeholder="id" value=move || conversation().1 class="w-40 rounded border border-slate-300 px-2 py-1 text-sm" />
            </label>
            <label class="text-sm">
                <span class="block text-slate-600">"Action type"</span>
                <select name="action_type" class="rounded border border-slate-300 px-2 py-1 text-sm">
                    <option value="">"any"</option>
                    {move || view! { <Options current=get("action_type") choices=ACTION_TYPES /> }}
                </select>
            </label>
            {field("day", "Day", "YYYY-MM-DD")}
            {field("from", "From", "HH:MM")}
            {field("to", "To", "HH:MM")}
            // Filled as the form is sent (public/local-time.js): the reader's offset from
            // UTC on that day, in minutes.
            <input type="hidden" name="tz" data-zone-offset="" value=move || get("tz") />
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-sm text-white">"Show"</button>
            <a href="/audit" class="px-2 py-1.5 text-sm text-sky-800 underline">"Clear"</a>
        </form>
    }
}

/// One page of audit records, with the (masked) conversation they are filtered by.
#[component]
fn AuditResults(page: AuditRows, base: String) -> impl IntoView {
    let filtered = page.conversation.map(|c| view! {
        <p class="mt-3 text-sm text-slate-600" data-testid="audit-conversation">"Conversation "<span class="font-mono">{c}</span></p>
    });
    let window = page.window.map(|w| view! {
        <p class="mt-3 text-sm text-slate-600" data-testid="audit-window">{format!("Records of {w}.")}</p>
    });
    view! {
        {filtered}
        {window}
        <AuditTable rows=page.rows />
        <Pager base next=page.next_cursor label="Pages of audit records" />
    }
}

/// Measurement attempts (docs/measurements.md) by user or by outcome, with their CSV export.
#[component]
fn MeasurementAttempts() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let page = page_data(
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
        // Posted to /find: a typed user id goes into the address as its reference only.
        <form method="post" action="/find" class="mt-2 flex flex-wrap items-end gap-2 text-sm">
            <input type="hidden" name="page" value="attempts" />
            {move || {
                let (reference, typed) = split_reference(get("m_user"));
                view! {
                    <input type="hidden" name="user_ref" value=reference />
                    <label><span class="block text-slate-600">"User id"</span><input name="user" value=typed class="w-40 rounded border border-slate-300 px-2 py-1" /></label>
                }
            }}
            <label><span class="block text-slate-600">"Outcome"</span><input name="outcome" value=move || get("m_outcome") placeholder="out_of_order, conflict…" class="w-40 rounded border border-slate-300 px-2 py-1" /></label>
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Show attempts"</button>
        </form>
        <AsyncSection load=move || page spacing="mt-2" let:p>
            {
                let outcome = get("m_outcome");
                let base = format!("/audit?m_user={}&m_outcome={}", enc(&p.user_ref), enc(&outcome));
                view! { <AttemptsSection page=p outcome base cursor_param="m_cursor" /> }
            }
        </AsyncSection>
    }
}
