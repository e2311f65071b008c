//! Conversations (docs/conversations.md): one search box for a conversation id, a
//! recipient's phone or email, or a company's id or name (suggested from the company
//! directory), with more filters (project, company number, status, channel, task, dates)
//! behind a click. Each search is one index's `Query`, paged with cursors both ways.

pub mod detail;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::conversations::{company_suggestions, search_conversations};
use crate::model::conversations::{CompanyChoice, ConversationRow, SearchPage, SearchQuery};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::badge::StatusPill;
use crate::ui::components::form::Options;
use crate::ui::components::links::{conversation_href, enc, is_reference};
use crate::ui::components::moment::Moment;
use crate::ui::components::pager::Pager;
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

/// The search's fields, in the order of the query string.
const FIELDS: [&str; 10] = [
    "conversation",
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

/// The filters behind "More filters": all but what the box holds.
const MORE: &[&str] = FIELDS.split_at(3).1;

const CHANNELS: [(&str, &str); 4] = [
    ("", "any"),
    ("whatsapp", "WhatsApp"),
    ("sms", "SMS"),
    ("email", "email"),
];

const TASK: [(&str, &str); 3] = [("", "any"), ("1", "done"), ("0", "open")];

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
    let page = page_data(
        move || {
            let q = query.read();
            let f = |name: &str| q.get(name).unwrap_or_default();
            SearchQuery {
                conversation: f("conversation"),
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
    let companies = page_data(|| (), |_| company_suggestions());
    // The search without its cursor, for the paging links and the way back from a
    // conversation.
    let base = move || {
        let q = query.read();
        FIELDS
            .iter()
            .filter_map(|f| {
                q.get(f)
                    .filter(|v| !v.is_empty())
                    .map(|v| format!("{f}={}", enc(&v)))
            })
            .collect::<Vec<_>>()
            .join("&")
    };
    view! {
        <Title text="Conversations" />
        <h1 class="text-2xl font-semibold">"Conversations"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Find a conversation by its id, the recipient's phone or email, or the company. Phones, emails and names are masked."
        </p>
        <SearchForm />
        <AsyncSection load=move || companies spacing="mt-1" let:list>
            <Suggestions list />
        </AsyncSection>
        <AsyncSection load=move || page loading="Searching…" spacing="mt-4" let:p>
            <Results page=p base=base() />
        </AsyncSection>
    }
}

/// The search box and the other filters, holding the search on screen. Posted, not a GET:
/// a recipient or a conversation id can carry a phone number or an email, which must not
/// end up in the URL or in the page's links (the server answers with a reference instead).
#[component]
fn SearchForm() -> impl IntoView {
    let query = use_query_map();
    let field = move |name: &'static str| move || query.read().get(name).unwrap_or_default();
    // What the box shows: a company as typed; a recipient or a conversation (references)
    // stay in hidden fields until something else is typed.
    let shown = move || {
        let company = field("company")();
        if is_reference(&company) {
            String::new()
        } else {
            company
        }
    };
    let input = "mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        <form method="post" action="/find" class="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-sm" role="search">
            <input type="hidden" name="page" value="conversations" />
            <input type="hidden" name="recipient_ref" value=field("recipient") />
            <input type="hidden" name="conversation_ref" value=field("conversation") />
            <div class="flex flex-wrap items-end gap-2">
                <label class="min-w-0 flex-1 basis-64">"Search"
                    <input
                        name="q"
                        type="search"
                        list="company-suggestions"
                        autocomplete="off"
                        value=shown
                        class=input
                        placeholder="Phone, email, conversation id, company id or name"
                    />
                </label>
                <button type="submit" class="rounded bg-slate-900 px-4 py-1.5 text-white">"Search"</button>
                <a href="/conversations" class="px-2 py-1.5 text-sky-800 underline">"Clear"</a>
            </div>
            <MoreFilters />
        </form>
    }
}

/// The filters besides the box, folded unless one of them is set.
#[component]
fn MoreFilters() -> impl IntoView {
    let query = use_query_map();
    let field = move |name: &'static str| move || query.read().get(name).unwrap_or_default();
    let more_open = move || MORE.iter().any(|f| !field(f)().is_empty());
    let input = "mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        <details class="mt-3" open=more_open>
            <summary class="cursor-pointer text-sky-800">"More filters"</summary>
            <div class="mt-2 grid grid-cols-2 gap-3 md:grid-cols-4">
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
                <label>"Task"
                    <select name="task" class=input>
                        {move || view! { <Options current=field("task")() choices=&TASK /> }}
                    </select>
                </label>
                <label>"Created from"<input type="date" name="from" value=field("from") class=input /></label>
                <label>"Created to"<input type="date" name="to" value=field("to") class=input /></label>
            </div>
        </details>
    }
}

/// The companies the box suggests as a person types (name, with the id beside it).
#[component]
fn Suggestions(list: Vec<CompanyChoice>) -> impl IntoView {
    let options = list
        .into_iter()
        .map(|c| {
            let value = if c.name.is_empty() {
                c.company_id.clone()
            } else {
                c.name.clone()
            };
            view! { <option value=value>{c.company_id}</option> }
        })
        .collect_view();
    view! { <datalist id="company-suggestions">{options}</datalist> }
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

/// One page of a search: what was searched and how many match, the rows, and the links to
/// the pages either side; or the companies to choose from; or what to do when nothing
/// matches.
#[component]
fn Results(page: SearchPage, base: String) -> impl IntoView {
    if !page.searched {
        return view! {
            <p class="mt-4 text-sm text-slate-500" data-testid="no-search">
                "Type a phone number, an email, a conversation id, or a company's id or name."
            </p>
        }
        .into_any();
    }
    if !page.companies.is_empty() {
        return view! { <ChooseCompany companies=page.companies /> }.into_any();
    }
    let meta = meta(&page);
    if page.rows.is_empty() {
        return view! {
            <p class="mt-4 text-xs text-slate-500" data-testid="search-meta">{meta}</p>
            <div class="mt-2 rounded-lg border border-dashed border-slate-300 bg-white p-6 text-center text-sm text-slate-600" data-testid="no-results">
                <p class="font-medium">"No conversations match this search."</p>
                <p class="mt-1">"Check the number or the spelling, or remove a filter."</p>
            </div>
        }
        .into_any();
    }
    let rows = page
        .rows
        .into_iter()
        .map(|r| view! { <Row r back=base.clone() /> })
        .collect_view();
    view! {
        <p class="mt-4 text-xs text-slate-500" data-testid="search-meta">{meta}</p>
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

/// "Recipient ***-***-6789 · 30 matching · newest first".
fn meta(page: &SearchPage) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &page.recipient {
        parts.push(format!("Recipient {r}"));
    }
    if let Some(c) = &page.company {
        parts.push(match c.name.as_str() {
            "" => format!("Company {}", c.company_id),
            name => format!("{name} ({})", c.company_id),
        });
    }
    if let Some(n) = page.count {
        let plus = if page.count_exact { "" } else { "+" };
        parts.push(format!("{n}{plus} matching"));
    }
    parts.push(
        if page.newest_first {
            "newest first"
        } else {
            "by project"
        }
        .to_string(),
    );
    parts.join(" · ")
}

/// Several companies' names contain what was typed.
#[component]
fn ChooseCompany(companies: Vec<CompanyChoice>) -> impl IntoView {
    let items = companies
        .into_iter()
        .map(|c| {
            let href = format!("/conversations?company={}", enc(&c.company_id));
            view! {
                <li>
                    <a class="text-sky-800 underline" href=href>{c.name}</a>
                    <span class="ml-2 font-mono text-xs text-slate-500">{c.company_id}</span>
                </li>
            }
        })
        .collect_view();
    view! {
        <div class="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-sm" data-testid="choose-company">
            <p class="font-medium">"Several companies match. Which one?"</p>
            <ul class="mt-2 space-y-1">{items}</ul>
        </div>
    }
}

/// A conversation; the whole row opens it (the link in the recipient cell covers the row).
#[component]
fn Row(r: ConversationRow, back: String) -> impl IntoView {
    let href = if back.is_empty() {
        conversation_href(&r.r)
    } else {
        format!("{}&back={}", conversation_href(&r.r), enc(&back))
    };
    view! {
        <tr class="relative border-t border-slate-100 hover:bg-sky-50 focus-within:bg-sky-50" data-testid="conversation-row">
            <td class="py-1.5 pr-3 text-xs"><Moment iso=r.created_at.clone() ago=r.created_ago.clone() /></td>
            <td class="py-1.5 pr-3 font-mono text-xs">
                <a class="text-sky-800 underline after:absolute after:inset-0 after:content-['']" href=href>{r.recipient.clone()}</a>
            </td>
            <td class="py-1.5 pr-3">{r.name.clone()}</td>
            <td class="py-1.5 pr-3">{format!("{} / {}", r.company, r.project)}</td>
            <td class="py-1.5 pr-3">{r.channel.clone()}</td>
            <td class="py-1.5 pr-3" data-testid="status"><StatusPill status=r.status.clone() /></td>
            <td class="py-1.5 pr-3">{if r.task_complete { "done" } else { "open" }}{r.hand_off.then_some(" · hand-off")}</td>
            <td class="py-1.5 text-right">{r.messages}</td>
        </tr>
    }
}
