//! One user's inbox as they see it: counts, and the feed (their messages and the public
//! ones, newest first) with mark-read.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::inbox::{load_user_view, MarkRead};
use crate::model::inbox::{Counts, FeedItem, UserView};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::links::enc;
use crate::ui::components::moment::{iso_of_ms, Moment};
use crate::ui::components::pager::Pager;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::data::page_data;

#[component]
pub fn InboxUserPage() -> impl IntoView {
    let query = use_query_map();
    let q = move |k: &'static str| query.read().get(k).unwrap_or_default();
    let mark = FormAction::new::<MarkRead>();
    let data = page_data(
        move || {
            (
                q("tenant"),
                q("inbox"),
                q("uid"),
                query.read().get("cursor"),
                mark.version().get(),
            )
        },
        |(t, i, u, c, _)| load_user_view(t, i, u, c),
    );
    view! {
        <Title text="Inbox · user" />
        <a class="text-sm text-sky-800 underline" href=move || format!("/inbox?tenant={}&inbox={}", enc(&q("tenant")), enc(&q("inbox")))>"← Inbox"</a>
        <div class="mt-3"><ActionResult value=move || mark.value().get() success=|m: &String| m.clone() /></div>
        <AsyncSection load=move || data spacing="mt-4" let:v>
            <h1 class="mt-2 text-2xl font-semibold">"Inbox of "<span class="font-mono">{v.uid.clone()}</span></h1>
            <Feed v mark tenant=q("tenant") inbox=q("inbox") />
        </AsyncSection>
    }
}

/// One of the user's counts as a tile.
fn stat(label: &'static str, value: i64, testid: &'static str) -> impl IntoView {
    view! {
        <div class="rounded-lg border border-slate-200 bg-white px-4 py-2">
            <div class="text-xs uppercase text-slate-500">{label}</div>
            <div class="text-xl font-semibold" data-testid=testid>{value}</div>
        </div>
    }
}

/// The user's counts, and what is unread by category.
#[component]
fn CountTiles(c: Counts) -> impl IntoView {
    let categories = c
        .unread_by_category
        .iter()
        .map(|(k, n)| view! { <span class="rounded bg-slate-100 px-2 py-0.5 text-xs">{format!("{k}: {n} unread")}</span> })
        .collect_view();
    view! {
        <div class="mt-4 flex flex-wrap gap-3">
            {stat("Messages", c.total, "count-total")}
            {stat("Unread", c.unread, "count-unread")}
            {stat("Read", c.read, "count-read")}
            {stat("Published to everyone", c.public_published, "count-public")}
        </div>
        <div class="mt-2 flex flex-wrap gap-2">{categories}</div>
    }
}

/// The user's counts and feed, newest first, with mark-read for writers.
#[component]
fn Feed(v: UserView, mark: FormAction<String>, tenant: String, inbox: String) -> impl IntoView {
    // The user by their reference: forms and links carry no user id.
    let uid = v.uid_ref.clone();
    // Which user's inbox a mark-read form is for.
    let hidden = {
        let (t, i, u) = (tenant.clone(), inbox.clone(), uid.clone());
        move || {
            view! {
                <input type="hidden" name="tenant" value=t.clone() />
                <input type="hidden" name="inbox" value=i.clone() />
                <input type="hidden" name="uid" value=u.clone() />
            }
        }
    };
    let mark_all = (v.can_write && v.counts.unread > 0).then(|| {
        let hidden = hidden.clone();
        view! {
            <PostForm action=mark attr:class="mt-3">
                {hidden()}
                <input type="hidden" name="message_id" value="" />
                <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Mark all read for this user"</button>
            </PostForm>
        }
    });
    let items = v
        .feed
        .items
        .into_iter()
        .map(|m| view! { <Item m mark can_write=v.can_write hidden=hidden.clone() /> })
        .collect_view();
    let base = format!(
        "/inbox/user?tenant={}&inbox={}&uid={}",
        enc(&tenant),
        enc(&inbox),
        enc(&uid)
    );
    let warning = v.can_write.then(|| view! {
        <p class="mt-3 rounded border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900" data-testid="view-as-warning">
            "This user's own inbox: marking read here marks it for them."
        </p>
    });
    view! {
        <CountTiles c=v.counts />
        {warning}
        {mark_all}
        <ol class="mt-4 space-y-2" aria-label="Feed">{items}</ol>
        <Pager base next=v.feed.next label="Pages of the feed" />
    }
}

#[component]
fn Item<H, V>(m: FeedItem, mark: FormAction<String>, can_write: bool, hidden: H) -> impl IntoView
where
    H: Fn() -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let tone = if m.read {
        "border-slate-200 bg-white"
    } else {
        "border-sky-300 bg-sky-50"
    };
    let button = (!m.read && can_write).then(|| {
        view! {
            <PostForm action=mark>
                {hidden()}
                <input type="hidden" name="message_id" value=m.id.clone() />
                <button type="submit" class="rounded bg-slate-900 px-2 py-1 text-xs text-white">"Mark read for this user"</button>
            </PostForm>
        }
    });
    view! {
        <li class=format!("rounded-lg border p-3 text-sm {tone}") data-testid="feed-item">
            <div class="flex justify-between text-xs text-slate-500">
                <span>{if m.public { "everyone" } else { "personal" }}{m.category.clone().map(|c| format!(" · {c}"))}</span>
                <span data-testid="read-state">{if m.read { "read" } else { "unread" }}</span>
            </div>
            <div class="text-xs text-slate-500" data-testid="feed-date">"Received " <Moment iso=iso_of_ms(m.received_ms) /></div>
            <h3 class="mt-1 font-semibold">{m.title.clone()}</h3>
            <p class="whitespace-pre-wrap">{m.body.clone()}</p>
            {m.cta_uri.clone().map(|u| view! { <a class="text-sky-800 underline" href=u.clone() rel="noopener noreferrer">{u.clone()}</a> })}
            <div class="mt-2">{button}</div>
        </li>
    }
}
