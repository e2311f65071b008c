//! The receivers on the Receiver page (docs/events.md, "Receivers"): a link to each one's
//! page, and for admins the route of each action type and the form that adds a receiver.

use leptos::prelude::*;

use crate::model::outbox::ReceiverDetail;
use crate::ui::components::post_form::{FormAction, PostForm};

/// Every receiver, the routes, and the form that adds one.
#[component]
pub fn Receivers(
    detail: ReceiverDetail,
    route: FormAction<()>,
    add: FormAction<Option<String>>,
) -> impl IntoView {
    let links = detail
        .names
        .iter()
        .map(|n| {
            let current = *n == detail.name;
            view! {
                <a
                    href=format!("/outbox/receiver?receiver={n}")
                    aria-current=current.then_some("page")
                    class="rounded border border-slate-300 px-2 py-0.5 text-sm aria-[current=page]:bg-slate-900 aria-[current=page]:text-white"
                >
                    {n.clone()}
                </a>
            }
        })
        .collect_view();
    view! {
        <section aria-label="Receivers" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <h2 class="text-lg font-semibold">"Receivers"</h2>
            <nav aria-label="Every receiver" class="mt-2 flex flex-wrap gap-2">{links}</nav>
            <details class="mt-3">
                <summary class="cursor-pointer text-sm font-medium text-sky-800">"Routes and a new receiver (admins)…"</summary>
                <p class="mt-2 text-xs text-slate-500">"Each action type goes to one receiver; a change applies to side effects queued after it."</p>
                <Routes names=detail.names routes=detail.routes version=detail.routes_version route />
                <PostForm action=add attr:class="mt-3 flex flex-wrap items-end gap-2 text-sm">
                    <input type="hidden" name="version" value="0" />
                    <input type="hidden" name="enabled" value="on" />
                    <label>"Name" <input name="receiver" required class="ml-1 w-32 rounded border border-slate-300 px-2 py-1" /></label>
                    <label>"Address" <input name="url" required class="ml-1 w-72 rounded border border-slate-300 px-2 py-1 font-mono" /></label>
                    <button type="submit" class="rounded bg-slate-900 px-3 py-1 text-white">"Add receiver"</button>
                </PostForm>
            </details>
        </section>
    }
}

/// Each action type and the receiver it goes to, each with its form (admins).
#[component]
fn Routes(
    names: Vec<String>,
    routes: Vec<(String, String)>,
    version: i64,
    route: FormAction<()>,
) -> impl IntoView {
    let version = version.to_string();
    let routes = routes
        .into_iter()
        .map(|(kind, to)| {
            let version = version.clone();
            let options = names
                .iter()
                .map(|n| view! { <option value=n.clone() selected=*n == to>{n.clone()}</option> })
                .collect_view();
            view! {
                <PostForm action=route attr:class="flex items-center gap-2 text-sm">
                    <input type="hidden" name="action_type" value=kind.clone() />
                    <input type="hidden" name="version" value=version />
                    <span class="w-24 font-mono">{kind.clone()}</span>
                    <select name="receiver" aria-label=format!("Receiver of {kind}") class="rounded border border-slate-300 px-1 py-0.5">{options}</select>
                    <button type="submit" class="text-sky-800 underline">"Route"</button>
                </PostForm>
            }
        })
        .collect_view();
    view! { <div class="mt-2 space-y-1">{routes}</div> }
}
