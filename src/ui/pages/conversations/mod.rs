//! Conversations (docs/conversations.md): search by recipient, company and project, or company
//! number and recipient; filter by status, channel, task and date. Each search is one
//! index's `Query`, paged with cursors both ways.

pub mod detail;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::conversations::search_conversations;
use crate::model::conversations::{ConversationRow, SearchPage, SearchQuery};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::Options;
use crate::ui::components::links::{conversation_href, enc, split_reference};
use crate::ui::components::pager::Pager;
use crate::ui::components::table::DataTable;

/// The search form's fields, in the order of the query string.
const FIELDS: [&str; 9] = [
    "recipient",
    "company",
    "project",
    "company_number",
    "channel",
    "status",
    "task",
    "from",
    "to",
];

const CHANNELS: [(&str, &str); 4] = [
    ("", "any"),
    ("whatsapp", "whatsapp"),
    ("sms", "sms"),
    ("email", "email"),
];

const TASK: [(&str, &str); 3] = [("", "any"), ("1", "yes"), ("0", "no")];

const STATUSES: [(&str, &str); 7] = [
    ("", "any"),
    ("processing", "processing"),
    ("initial_message_sent", "initial message sent"),
    ("reply_received", "reply received"),
    ("response_sent", "response sent"),
    ("completed", "completed"),
    ("failed", "failed"),
];

#[component]
pub fn ConversationsPage() -> impl IntoView {
    let query = use_query_map();
    let page = Resource::new(
        move || {
            let q = query.read();
            let f = |name: &str| q.get(name).unwrap_or_default();
            SearchQuery {
                recipient: f("recipient"),
                company: f("company"),
                project: f("project"),
                company_number: f("company_number"),
                channel: f("channel"),
                status: f("status"),
                task: f("task"),
                from: f("from"),
                to: f("to"),
                after: q.get("after"),
                before: q.get("before"),
            }
        },
        search_conversations,
    );
    // The search without its cursor, for the paging links.
    let base = move || {
        let q = query.read();
        FIELDS
            .iter()
            .map(|f| format!("{f}={}", enc(&q.get(f).unwrap_or_default())))
            .collect::<Vec<_>>()
            .join("&")
    };
    view! {
        <Title text="Conversations" />
        <h1 class="text-2xl font-semibold">"Conversations"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Find conversations by recipient, by company and project, or by the company's sending number. Phones, emails and names are masked."
        </p>
        <SearchForm />
        <AsyncSection load=move || page loading="Searching…" spacing="mt-4" let:p>
            <Results page=p base=base() />
        </AsyncSection>
    }
}

/// The search form, holding the search on screen.
#[component]
fn SearchForm() -> impl IntoView {
    let query = use_query_map();
    let field = move |name: &'static str| move || query.read().get(name).unwrap_or_default();
    let recipient = move || split_reference(field("recipient")());
    let input = "mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        // Posted, not a GET: a recipient is a phone number or an email, which must not end up
        // in the URL or in the page's links (the server answers with a reference instead).
        <form method="post" action="/find" class="mt-4 grid grid-cols-2 gap-3 rounded-lg border border-slate-200 bg-white p-4 text-sm md:grid-cols-4">
            <input type="hidden" name="page" value="conversations" />
            // The recipient on screen stays the search's until another one is typed.
            <input type="hidden" name="recipient_ref" value=move || recipient().0 />
            <label class="col-span-2">"Recipient phone or email"
                <input name="recipient" value=move || recipient().1 class=input placeholder="+447123456789 or jane@example.com" />
            </label>
            <label>"Company"<input name="company" value=field("company") class=input placeholder="ci-aaa-001" /></label>
            <label>"Project"<input name="project" value=field("project") class=input placeholder="pi-aaa-001" /></label>
            <label class="col-span-2">"Company sending number or address"
                <input name="company_number" value=field("company_number") class=input placeholder="+447700900444 (choose its channel)" />
            </label>
            <label>"Channel"
                <select name="channel" class=input>
                    {move || view! { <Options current=field("channel")() choices=&CHANNELS /> }}
                </select>
            </label>
            <label>"Status"
                <select name="status" class=input>
                    {move || view! { <Options current=field("status")() choices=&STATUSES /> }}
                </select>
            </label>
            <label>"Task complete"
                <select name="task" class=input>
                    {move || view! { <Options current=field("task")() choices=&TASK /> }}
                </select>
            </label>
            <label>"Created from"<input type="date" name="from" value=field("from") class=input /></label>
            <label>"Created to"<input type="date" name="to" value=field("to") class=input /></label>
            <div class="flex items-end gap-2">
                <button type="submit" class="rounded bg-slate-900 px-4 py-1.5 text-white">"Search"</button>
                <a href="/conversations" class="px-2 py-1.5 text-sky-800 underline">"Clear"</a>
            </div>
        </form>
    }
}

const COLUMNS: [&str; 8] = [
    "Created",
    "Recipient",
    "Name",
    "Company / project",
    "Channel",
    "Status",
    "Task",
    "Messages",
];

/// One page of a search: how many match and which index answered, the rows, and the
/// links to the pages either side.
#[component]
fn Results(page: SearchPage, base: String) -> impl IntoView {
    if !page.searched {
        return view! {
            <p class="mt-4 text-sm text-slate-500" data-testid="no-search">
                "Enter a recipient, a company, or a company number with its channel."
            </p>
        }
        .into_any();
    }
    let count = page.count.map(|n| {
        let plus = if page.count_exact { "" } else { "+" };
        format!("{n}{plus} matching")
    });
    let rows = page
        .rows
        .into_iter()
        .map(|r| view! { <Row r /> })
        .collect_view();
    view! {
        <p class="mt-4 text-xs text-slate-500" data-testid="search-meta">
            {page.recipient.clone().map(|r| format!("Recipient {r} · "))}
            {count.unwrap_or_default()}" · answered by "<span class="font-mono">{page.index}</span>
        </p>
        <DataTable label="Conversations" columns=&COLUMNS align_right=&["Messages"]>
            {rows}
        </DataTable>
        <Pager
            base=format!("/conversations?{base}")
            prev=page.prev
            next=page.next
            next_param="after"
            next_label="Next page →"
        />
    }
    .into_any()
}

#[component]
fn Row(r: ConversationRow) -> impl IntoView {
    view! {
        <tr class="border-t border-slate-100" data-testid="conversation-row">
            <td class="py-1 text-xs whitespace-nowrap">{r.created_at.clone()}</td>
            <td class="py-1 font-mono text-xs">
                <a class="text-sky-800 underline" href=conversation_href(&r.r)>{r.recipient.clone()}</a>
            </td>
            <td class="py-1">{r.name.clone()}</td>
            <td class="py-1">{format!("{} / {}", r.company, r.project)}</td>
            <td class="py-1">{r.channel.clone()}</td>
            <td class="py-1" data-testid="status">{r.status.clone()}</td>
            <td class="py-1">{if r.task_complete { "done" } else { "open" }}{r.hand_off.then_some(" · hand-off")}</td>
            <td class="py-1 text-right">{r.messages}</td>
        </tr>
    }
}
