//! The kill switch schedule: the changes set for later, each with its time, author and
//! reason, and for admins a form that cancels it with a reason. On the automation page
//! (what moves a switch without a person at the time), off the Kill switches page, which
//! carries none of it (docs/page-weight.md).

use leptos::prelude::*;

use crate::model::kill_switches::Scheduled;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::form::FormKey;
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::{FormAction, PostForm};

/// The changes set for later, and for admins (with a form key) a form that cancels each.
#[component]
pub fn Schedule(
    schedule: Vec<Scheduled>,
    form_key: Option<String>,
    cancel: FormAction<String>,
) -> impl IntoView {
    let rows = schedule
        .into_iter()
        .map(|s| {
            let form = form_key.clone().map(|key| {
                let id = format!("cancel-{}", s.id);
                view! {
                    <PostForm action=cancel attr:class="mt-2 flex flex-wrap items-end gap-2">
                        <input type="hidden" name="id" value=s.id.clone() />
                        <FormKey value=key />
                        <label for=id.clone() class="sr-only">"Reason"</label>
                        <input id=id name="reason" required maxlength="500" placeholder="Reason" class="rounded border border-slate-300 px-2 py-1 text-sm" />
                        <button type="submit" class="rounded border border-red-300 px-3 py-1 text-sm text-red-800">"Cancel"</button>
                    </PostForm>
                }
            });
            view! {
                <li class="py-2" data-testid="scheduled">
                    {format!("{} {} at ", s.switch.label(), if s.enable { "on" } else { "off" })}
                    <Moment iso=s.at />
                    {format!(", by {}: “{}”", s.scheduled_by, s.reason)}
                    {form}
                </li>
            }
        })
        .collect_view();
    view! {
        <h2 id="scheduled" class="mt-6 text-lg font-semibold">"Scheduled changes"</h2>
        <div class="mt-3">
            <ActionResult value=move || cancel.value().get() success=|m: &String| m.clone() />
        </div>
        <ul class="divide-y divide-slate-100 text-sm">{rows}</ul>
    }
}
