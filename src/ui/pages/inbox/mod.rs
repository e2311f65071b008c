//! Inbox (docs/inbox.md): tenants and inboxes, compose with a preview, and what was
//! published with its read counts.

mod forms;
pub mod settings;
pub mod user;

use forms::ComposeForm;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::inbox::{load_inbox_page, PublishMessage, SaveDraft};
use crate::model::inbox::{Draft, InboxView, PublicationRow, PublishForm, Receipt};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::FormKey;
use crate::ui::components::links::enc;
use crate::ui::components::moment::time_or_text;
use crate::ui::components::pager::Pager;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

const INPUT: &str = "mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm";
const BUTTON: &str = "rounded bg-slate-900 px-3 py-1.5 text-sm text-white";

#[component]
pub fn InboxPage() -> impl IntoView {
    let query = use_query_map();
    let q = move |k: &'static str| query.read().get(k).unwrap_or_default();
    let save_draft = FormAction::new::<SaveDraft>();
    let publish = FormAction::new::<PublishMessage>();
    // Reloaded after each save, not after a refusal: the form stays as typed, next to its error.
    let draft_saved = save_draft.saved();
    let data = page_data(
        move || {
            (
                q("tenant"),
                q("inbox"),
                query.read().get("cursor"),
                query.read().get("draft"),
                draft_saved.get() + publish.version().get(),
            )
        },
        |(t, i, c, d, _)| load_inbox_page(t, i, c, d),
    );
    view! {
        <Title text="Inbox" />
        <h1 class="text-2xl font-semibold">"Inbox"</h1>
        <p class="mt-1 text-sm text-slate-600">"Messages for apps' users: to a list of users or to everyone, with exact read counts."</p>
        <div class="mt-3 space-y-2">
            <ActionResult value=move || save_draft.value().get() success=|_: &()| "Preview updated.".to_string() />
            <ActionResult value=move || publish.value().get() success=|m: &String| m.clone() />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:page>
            <Rooms page save_draft publish />
        </AsyncSection>
    }
}

/// The tenants, the chosen tenant's inboxes, and the chosen inbox.
#[component]
fn Rooms(
    page: InboxView,
    save_draft: FormAction<()>,
    publish: FormAction<String>,
) -> impl IntoView {
    let inboxes = page
        .tenant
        .clone()
        .map(|tenant| view! { <Inboxes tenant page=page.clone() /> });
    let chosen = page.inbox.clone().zip(page.tenant.clone()).map(|(i, t)| {
        view! { <InboxRoom tenant=t inbox=i.key.clone() title=i.title.clone() page=page.clone() save_draft publish /> }
    });
    view! {
        <Tenants page />
        {inboxes}
        {chosen}
    }
}

/// The address of the settings of `tenant` (and `inbox`), for writers.
fn settings_href(tenant: &str, inbox: Option<&str>) -> String {
    match inbox {
        Some(i) => format!("/inbox/settings?tenant={}&inbox={}", enc(tenant), enc(i)),
        None => format!("/inbox/settings?tenant={}", enc(tenant)),
    }
}

/// The tenants as links, the chosen one in bold; for writers, the way to their settings.
#[component]
fn Tenants(page: InboxView) -> impl IntoView {
    let tenants = page
        .tenants
        .iter()
        .map(|t| {
            let chosen = Some(t) == page.tenant.as_ref();
            let class = if chosen { "font-semibold text-slate-900" } else { "text-sky-800 underline" };
            view! { <li><a class=class href=format!("/inbox?tenant={}", enc(t))>{t.clone()}</a></li> }
        })
        .collect_view();
    let form = page.can_write.then(|| {
        let href = settings_href(page.tenant.as_deref().unwrap_or_default(), None);
        view! { <a class="mt-2 inline-block text-sm text-sky-800 underline" href=href>"New tenant or edit settings…"</a> }
    });
    view! {
        <section class="mt-4">
            <h2 class="text-lg font-semibold">"Tenants"</h2>
            <ul class="mt-1 flex flex-wrap gap-4 text-sm" aria-label="Tenants">{tenants}</ul>
            {form}
        </section>
    }
}

/// A tenant's inboxes as links with their lifetimes; for writers, the way to their settings.
#[component]
fn Inboxes(tenant: String, page: InboxView) -> impl IntoView {
    // Unknown: no settings, no inbox (a tenant is made by either).
    if page.tenant_title.is_none() && page.inboxes.is_empty() && !page.tenants.contains(&tenant) {
        return view! {
            <p class="mt-6 text-sm" role="status" data-testid="unknown-tenant">
                {format!("There is no tenant named \u{201c}{tenant}\u{201d}. Pick one above, or create it in the settings.")}
            </p>
        }
        .into_any();
    }
    let empty = page
        .inboxes
        .is_empty()
        .then(|| view! { <li class="text-slate-500">"No inbox yet."</li> });
    let list = page
        .inboxes
        .iter()
        .map(|i| {
            let href = format!("/inbox?tenant={}&inbox={}", enc(&tenant), enc(&i.key));
            view! {
                <li class="py-1">
                    <a class="text-sky-800 underline" href=href>{i.title.clone()}</a>
                    <span class="ml-2 font-mono text-xs text-slate-500">{format!("{} · {}", i.key, i.ttl)}</span>
                </li>
            }
        })
        .collect_view();
    let form = page.can_write.then(|| {
        let href = settings_href(&tenant, page.inbox.as_ref().map(|i| i.key.as_str()));
        view! { <a class="mt-2 inline-block text-sm text-sky-800 underline" href=href>"New inbox or edit this one…"</a> }
    });
    view! {
        <section class="mt-6">
            <h2 class="text-lg font-semibold">{format!("Inboxes of {tenant}")}</h2>
            <ul class="mt-1 text-sm">{empty}{list}</ul>
            {form}
        </section>
    }
    .into_any()
}

/// The chosen inbox: compose (or the last receipt), view as a user, and what was published.
#[component]
fn InboxRoom(
    tenant: String,
    inbox: String,
    title: String,
    page: InboxView,
    save_draft: FormAction<()>,
    publish: FormAction<String>,
) -> impl IntoView {
    let new_message = format!("/inbox?tenant={}&inbox={}", enc(&tenant), enc(&inbox));
    // The lifetime a message gets when the form leaves it empty (the server's own figure).
    let lifetime = page
        .inbox
        .as_ref()
        .and_then(|i| i.ttl.split(", ").find_map(|p| p.strip_prefix("default=")))
        .unwrap_or_default()
        .to_string();
    let compose = page.can_write.then(|| match &page.draft {
        Some(Draft { form, receipt: Some(r) }) => {
            view! { <PublishReceipt form=form.clone() receipt=r.clone() new_message=new_message.clone() /> }.into_any()
        }
        Some(Draft { form, receipt: None }) => view! {
            <ComposeForm form=form.clone() lifetime=lifetime.clone() save_draft />
            <Preview form=form.clone() publish new_message=new_message.clone() />
        }
        .into_any(),
        None => {
            let fresh = PublishForm {
                tenant: tenant.clone(),
                inbox: inbox.clone(),
                audience: "everyone".into(),
                idempotency_key: page.form_key.clone(),
                ..PublishForm::default()
            };
            view! { <ComposeForm form=fresh lifetime=lifetime.clone() save_draft /> }.into_any()
        }
    });
    // Posted to /find: the user id goes into the address as its reference only.
    let user_form = view! {
        <form method="post" action="/find" class="mt-2 flex items-end gap-2 text-sm">
            <input type="hidden" name="page" value="inbox-user" />
            <input type="hidden" name="tenant" value=tenant.clone() />
            <input type="hidden" name="inbox" value=inbox.clone() />
            <label>"User id"<input name="user" class=INPUT /></label>
            <button type="submit" class=BUTTON>"View as user"</button>
        </form>
    }
    .into_any();
    view! {
        <section class="mt-8">
            <h2 class="text-lg font-semibold">{format!("Inbox {title}")}</h2>
            <h3 class="mt-4 font-medium">"Compose"</h3>
            {compose}
            <h3 class="mt-6 font-medium">"View as a user"</h3>
            {user_form}
            <h3 class="mt-6 font-medium">"Published"</h3>
            <Publications rows=page.publications />
            <Pager base=new_message next=page.publications_next label="Pages of published messages" />
        </section>
    }
}

/// Who a message goes to, in words.
fn audience_label(form: &PublishForm) -> String {
    if form.audience == "users" {
        let uids: Vec<&str> = form
            .uids
            .split([',', '\n'])
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let who = if uids.len() == 1 { "user" } else { "users" };
        format!("to {} {who}: {}", uids.len(), uids.join(", "))
    } else {
        "to everyone".into()
    }
}

/// The draft as its recipients will see it, with the button that publishes it.
#[component]
fn Preview(form: PublishForm, publish: FormAction<String>, new_message: String) -> impl IntoView {
    let audience = audience_label(&form);
    let category = (!form.category.is_empty()).then(|| format!(" · {}", form.category));
    view! {
        <div class="mt-3 rounded-lg border-2 border-sky-300 bg-sky-50 p-4" data-testid="preview">
            <p class="text-xs uppercase text-sky-700">{format!("Preview · {audience}")}{category}</p>
            <h3 class="mt-1 font-semibold">{form.title.clone()}</h3>
            <p class="mt-1 whitespace-pre-wrap text-sm">{form.body.clone()}</p>
            {(!form.cta_uri.is_empty()).then(|| view! { <p class="mt-1 text-sm text-sky-800 underline">{form.cta_uri.clone()}</p> })}
            <PostForm action=publish attr:class="mt-3 flex items-center gap-3">
                <input type="hidden" name="tenant" value=form.tenant.clone() />
                <input type="hidden" name="inbox" value=form.inbox.clone() />
                // The draft's key is the publish's idempotency key: a message is published once.
                <FormKey name="draft" value=form.idempotency_key.clone() />
                <button type="submit" class=BUTTON>"Publish"</button>
                <a class="text-sm text-sky-800 underline" href=new_message>"Discard and start a new message"</a>
            </PostForm>
        </div>
    }
}

/// What was sent, to whom and when, in place of the form: publishing again takes a new
/// message.
#[component]
fn PublishReceipt(form: PublishForm, receipt: Receipt, new_message: String) -> impl IntoView {
    let view_as = (form.audience == "users")
        .then(|| {
            form.uids
                .split([',', '\n', ' '])
                .map(str::trim)
                .find(|u| !u.is_empty())
                .map(str::to_string)
        })
        .flatten();
    view! {
        <div class="mt-2 rounded-lg border-2 border-emerald-300 bg-emerald-50 p-4 text-sm" role="status" data-testid="receipt">
            <p class="font-semibold text-emerald-900">"Published"</p>
            <p class="mt-1">{format!("\u{201c}{}\u{201d} {}", form.title, audience_label(&form))}</p>
            <p class="mt-1 text-xs text-emerald-800">"At " {time_or_text(receipt.published_at)} {format!(" · message {}", receipt.message_id)}</p>
            // A form may not sit in a paragraph (the browser would close the paragraph first).
            <div class="mt-3 flex gap-4">
                <a class="rounded bg-slate-900 px-3 py-1.5 text-white" href=new_message>"New message"</a>
                // A post, not a link: the user id stays out of the address.
                {view_as.map(|uid| view! {
                    <form method="post" action="/find" class="self-center">
                        <input type="hidden" name="page" value="inbox-user" />
                        <input type="hidden" name="tenant" value=form.tenant.clone() />
                        <input type="hidden" name="inbox" value=form.inbox.clone() />
                        <input type="hidden" name="user" value=uid />
                        <button type="submit" class="text-sky-800 underline">"See it as its first recipient"</button>
                    </form>
                })}
            </div>
        </div>
    }
}

/// What was published in the inbox, newest first, with its read counts.
#[component]
fn Publications(rows: Vec<PublicationRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="text-sm text-slate-500">"Nothing published here yet."</p> }
            .into_any();
    }
    let rows = rows
        .into_iter()
        .map(|r| {
            view! {
                <tr class="border-t border-slate-100" data-testid="publication">
                    <td class="py-1 text-xs">{time_or_text(r.created_at)}</td>
                    <td class="py-1">{r.title}</td>
                    <td class="py-1">{r.audience}</td>
                    <td class="py-1">{r.category.unwrap_or_default()}</td>
                    <td class="py-1 text-right">{r.recipients}</td>
                    <td class="py-1 text-right" data-testid="reads">{r.read}</td>
                    <td class="py-1">{r.status}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable
            label="Published messages"
            columns=&["Published", "Title", "Audience", "Category", "Recipients", "Reads", "Status"]
            align_right=&["Recipients", "Reads"]
        >
            {rows}
        </DataTable>
    }
    .into_any()
}
