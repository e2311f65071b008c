//! The receivers on the Receiver page (docs/events.md, "Receivers"): every one, to open its
//! page, and where each action type goes, and for admins the form that routes a type and the
//! form that adds a receiver.

use leptos::prelude::*;

use crate::model::outbox::ReceiverDetail;
use crate::ui::components::post_form::{FormAction, PostForm};

/// Every receiver, the routes, and the admins' forms.
#[component]
pub fn Receivers(
    detail: ReceiverDetail,
    route: FormAction<String>,
    add: FormAction<Option<String>>,
) -> impl IntoView {
    // The routes in words, made here once: no list to keep in step.
    let routes = detail
        .route_types
        .iter()
        .zip(&detail.routes)
        .map(|(kind, to)| format!("{kind} → {to}"))
        .collect::<Vec<_>>()
        .join(", ");
    let option = |n: &String| view! { <option value=n.clone()>{n.clone()}</option> };
    let kinds = detail.route_types.iter().map(option).collect_view();
    let names = detail.names.iter().map(option).collect_view();
    let open = detail.names.iter().map(option).collect_view();
    view! {
        <section aria-label="Receivers" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <h2 class="text-lg font-semibold">"Receivers"</h2>
            // One GET form that opens a receiver's page: the address holds only its name.
            <form method="get" action="/outbox/receiver" class="mt-2 flex items-end gap-2 text-sm">
                <label>"Open receiver" <select name="receiver" class="ml-1 rounded border border-slate-300 px-1 py-0.5">{open}</select></label>
                <button type="submit" class="rounded border border-slate-300 px-3 py-1">"Open"</button>
            </form>
            <p class="mt-2 text-sm" data-testid="routes">{routes}</p>
            <details class="mt-3">
                <summary class="cursor-pointer text-sm font-medium text-sky-800">"Routes and a new receiver (admins)…"</summary>
                <p class="mt-2 text-xs text-slate-500">"A route applies to side effects queued after it."</p>
                <PostForm action=route attr:class="mt-2 flex flex-wrap items-end gap-2 text-sm">
                    <input type="hidden" name="version" value=detail.routes_version.to_string() />
                    <label>"Kind" <select name="action_type" class="ml-1 rounded border border-slate-300 px-1 py-0.5">{kinds}</select></label>
                    <label>"Goes to" <select name="receiver" class="ml-1 rounded border border-slate-300 px-1 py-0.5">{names}</select></label>
                    <button type="submit" class="rounded border border-slate-300 px-3 py-1">"Save route"</button>
                </PostForm>
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
