//! The Receiver page's resend of a time window (docs/events.md, "Resend a time window"):
//! a GET form that counts (the address holds only a group, a kind and two times: nothing
//! personal), then, under the count, the form that starts the resend with a reason.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::resend::count_resend;
use crate::model::outbox::ResendCount;
use crate::model::AppError;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::FormKey;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::data::page_data;

// Class strings the Receiver page has already: page text is in the shell, once each.
const INPUT: &str = "rounded border border-slate-300 px-2 py-1 text-sm";

/// What the address asks to count: group, kind, since, until, receiver.
type Asked = (String, String, String, String, String);

#[component]
pub(super) fn Resend(action: FormAction<String>) -> impl IntoView {
    let query = use_query_map();
    let field = move |name: &'static str| query.read().get(name).unwrap_or_default();
    let asked = move || -> Asked {
        (
            field("group"),
            field("action_type"),
            field("since"),
            field("until"),
            // The page's receiver: a resend here sends its side effects only.
            field("receiver"),
        )
    };
    let count = page_data(asked, |(g, t, s, u, r): Asked| async move {
        if s.is_empty() && u.is_empty() {
            return Ok::<_, AppError>(None);
        }
        count_resend(g, t, s, u, Some(r)).await.map(Some)
    });
    view! {
        <section aria-label="Resend" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <form method="get" action="/outbox/receiver" class="mt-3 flex flex-wrap items-end gap-3">
                <input type="hidden" name="receiver" value=move || field("receiver") />
                <div>
                    <label for="resend-group">"Status"</label>
                    <select id="resend-group" name="group" class=INPUT>
                        <option value="delivered">"delivered"</option>
                        <option value="dead" selected=move || field("group") == "dead">"dead"</option>
                        <option value="discarded" selected=move || field("group") == "discarded">"discarded"</option>
                    </select>
                </div>
                <div>
                    <label for="resend-since">"From (UTC)"</label>
                    <input id="resend-since" type="datetime-local" step="1" name="since" required value=move || field("since") class=INPUT />
                </div>
                <div>
                    <label for="resend-until">"To (UTC)"</label>
                    <input id="resend-until" type="datetime-local" step="1" name="until" required value=move || field("until") class=INPUT />
                </div>
                <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Count"</button>
            </form>
            <AsyncSection load=move || count spacing="mt-3" let:found>
                {found.map(|c| view! { <Start count=c asked=asked() action /> })}
            </AsyncSection>
        </section>
    }
}

/// The count, and when there is something to send, the form that sends it.
#[component]
fn Start(count: ResendCount, asked: Asked, action: FormAction<String>) -> impl IntoView {
    let (group, kind, since, until, receiver) = asked;
    let form = (count.n > 0).then(|| {
        view! {
            <PostForm action attr:class="mt-2 flex flex-wrap items-end gap-2">
                <input type="hidden" name="group" value=group />
                <input type="hidden" name="action_type" value=kind />
                <input type="hidden" name="since" value=since />
                <input type="hidden" name="until" value=until />
                <input type="hidden" name="receiver" value=receiver />
                <FormKey value=count.form_key name="form_key" />
                <label for="resend-reason" class="text-sm">"Reason"</label>
                <input id="resend-reason" name="reason" required maxlength="500" class="rounded border border-slate-300 px-2 py-1 text-sm" />
                <button type="submit" class="rounded bg-slate-900 px-3 py-1 text-sm text-white">{format!("Resend {}", count.n)}</button>
            </PostForm>
        }
    });
    view! {
        <p class="text-sm" data-testid="resend-count">{format!("{}.", count.words)}</p>
        {form}
    }
}
