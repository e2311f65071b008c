//! Events: what the helpdesk sent and what was decided (never the text), and one
//! conversation's state with its audit timeline. Side effects are on the Outbox page.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::audit::list_audit;
use crate::api::events::{conversation_state, conversation_timeline, list_events};
use crate::model::audit::AuditRows;
use crate::model::events::{EventPage, StateView};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::audit_table::AuditTable;
use crate::ui::components::links::{enc, split_reference, state_href};
use crate::ui::components::moment::{time_or_text, Moment};
use crate::ui::components::pager::Pager;
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

mod timeline;
use timeline::ConversationTimeline;

#[component]
pub fn EventsPage() -> impl IntoView {
    let query = use_query_map();
    let conversation = move || query.read().get("conversation").unwrap_or_default();
    let events = page_data(
        move || (conversation(), query.read().get("cursor")),
        |(c, cursor)| list_events(c, cursor),
    );
    view! {
        <Title text="Events" />
        <h1 class="text-2xl font-semibold">"Events"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Every message the helpdesk delivered, newest first, with the decision taken. Message text is never stored."
        </p>
        // Posted, not a GET: what a person types here can be a phone number.
        <form method="post" action="/find" class="mt-4 flex items-end gap-2">
            <input type="hidden" name="page" value="events" />
            <input type="hidden" name="conversation_ref" value=move || split_reference(conversation()).0 />
            <label class="text-sm">
                <span class="block text-slate-600">"Conversation"</span>
                <input name="conversation" value=move || split_reference(conversation()).1 class="rounded border border-slate-300 px-2 py-1 font-mono text-sm" />
            </label>
            <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-sm text-white">"Filter"</button>
            <a href="/events" class="px-2 py-1.5 text-sm text-sky-800 underline">"All"</a>
        </form>
        <AsyncSection load=move || events spacing="mt-4" let:page>
            <EventTable page />
        </AsyncSection>
        <p class="mt-6 text-sm text-slate-600">
            "Side effects of these events are delivered from the "
            <a href="/outbox" class="text-sky-800 underline">"Outbox"</a>"."
        </p>
    }
}

/// A decision's mode as people say it.
fn mode_words(mode: &str) -> &'static str {
    match mode {
        "automation_candidate" => "automation on",
        "route_only" => "routing only (automation off)",
        _ => "other",
    }
}

/// One page of events, newest first.
#[component]
fn EventTable(page: EventPage) -> impl IntoView {
    if page.events.is_empty() {
        return view! { <p class="mt-4 text-sm text-slate-500" data-testid="no-events">"No events."</p> }.into_any();
    }
    let rows = page
        .events
        .into_iter()
        .map(|e| {
            let decision = match (&e.intent, &e.team) {
                (Some(i), Some(t)) => format!("{i} → {t}"),
                (Some(i), None) => i.clone(),
                _ => "–".into(),
            };
            view! {
                <tr class="border-t border-slate-100" data-testid="event-row">
                    <td class="py-1 text-xs"><Moment iso=e.created_at.clone() /></td>
                    <td class="py-1 font-mono text-xs"><a class="text-sky-800 underline" href=state_href(&e.conversation_ref)>{e.conversation_id.clone()}</a></td>
                    <td class="py-1 font-mono text-xs">{e.message_id.clone().unwrap_or_else(|| "(hash)".into())}</td>
                    <td class="py-1">{e.channel.clone()}</td>
                    <td class="py-1">{mode_words(&e.mode)}{e.safe_mode.then_some(" · safe mode")}</td>
                    <td class="py-1">{decision}</td>
                    <td class="py-1 text-right" data-testid="duplicates">{e.duplicates}</td>
                    <td class="py-1">{e.status.replace('_', " ")}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable
            label="Events"
            columns=&["Received", "Conversation", "Message", "Channel", "Mode", "Decision", "Duplicates", "Status"]
            align_right=&["Duplicates"]
            spacing="mt-4"
        >
            {rows}
        </DataTable>
        <Pager
            base=format!("/events?conversation={}", enc(&page.conversation_ref))
            next=page.next_cursor
            label="Pages of events"
        />
    }
    .into_any()
}

#[component]
pub fn ConversationStatePage() -> impl IntoView {
    let query = use_query_map();
    let id = move || query.read().get("id").unwrap_or_default();
    let state = page_data(id, conversation_state);
    let story = page_data(id, conversation_timeline);
    let audit = page_data(
        move || (id(), query.read().get("cursor")),
        |(id, cursor)| {
            list_audit(
                id,
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                cursor,
            )
        },
    );
    view! {
        <Title text="Conversation state" />
        <a href="/events" class="text-sm text-sky-800 underline">"← Events"</a>
        <AsyncSection load=move || state spacing="mt-4" let:s>
            <h1 class="mt-2 text-2xl font-semibold">"Conversation state "<span class="font-mono" data-testid="conversation-id">{s.conversation_id.clone()}</span></h1>
            <StateCard s />
        </AsyncSection>
        <h2 class="mt-8 text-lg font-semibold">"Timeline"</h2>
        <AsyncSection load=move || story let:t>
            <ConversationTimeline t />
        </AsyncSection>
        <h2 class="mt-8 text-lg font-semibold">"Audit records"</h2>
        <AsyncSection load=move || audit let:rows>
            <AuditRecords rows />
        </AsyncSection>
    }
}

/// One page of a conversation's audit records, and the way to its events. Links carry the
/// conversation's reference from the server, never what the address held.
#[component]
fn AuditRecords(rows: AuditRows) -> impl IntoView {
    let reference = rows.conversation_ref.clone();
    view! {
        <AuditTable rows=rows.rows />
        <Pager
            base=format!("/events/conversation?id={}", enc(&reference))
            next=rows.next_cursor
            label="Pages of the audit records"
        />
        <p class="mt-4 flex flex-wrap gap-4 text-sm">
            <a class="text-sky-800 underline" href=format!("/events?conversation={}", enc(&reference))>"This conversation's events"</a>
            <a class="text-sky-800 underline" href=format!("/outbox?group=delivered&conversation={}", enc(&reference))>"Its side effects on the Outbox"</a>
        </p>
    }
}

/// What the middleware keeps about a conversation.
#[component]
fn StateCard(s: StateView) -> impl IntoView {
    if !s.exists {
        return view! { <p class="mt-4 text-slate-600" data-testid="no-state">"No state recorded for this conversation."</p> }.into_any();
    }
    let fields: Vec<(&str, String)> = vec![
        ("Last intent", s.last_intent.unwrap_or_default()),
        ("Routed to", s.last_routed_team.unwrap_or_default()),
        (
            "Confidence",
            s.last_routing_confidence
                .map(|c| format!("{c:.2}"))
                .unwrap_or_default(),
        ),
        ("Risk flags", s.risk_flags.join(", ")),
        (
            "Pending flow",
            s.pending_flow.unwrap_or_else(|| "none".into()),
        ),
        (
            "Last auto-reply",
            s.last_auto_reply.unwrap_or_else(|| "none".into()),
        ),
        // Decided, not delivered: the timeline says where each one is.
        ("Auto-replies decided", s.auto_replies_sent.join(", ")),
        ("Order number", s.order_ref_last4.unwrap_or_default()),
        (
            "Last message",
            s.last_processed_message_id.unwrap_or_default(),
        ),
        ("Events", s.events_seen.to_string()),
        ("Version", s.version.to_string()),
        ("Updated", s.updated_at),
    ];
    view! {
        <dl class="mt-4 grid grid-cols-1 gap-x-8 gap-y-1 rounded-lg border border-slate-200 bg-white p-5 text-sm sm:grid-cols-2" data-testid="conversation-state">
            {fields.into_iter().map(|(label, value)| view! {
                <div class="flex justify-between border-b border-slate-100 py-1">
                    <dt class="text-slate-600">{label}</dt>
                    <dd class="font-mono text-xs">{time_or_text(value)}</dd>
                </div>
            }).collect_view()}
        </dl>
    }
    .into_any()
}
