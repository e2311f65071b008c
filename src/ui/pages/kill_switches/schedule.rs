//! Kill switch schedule (`/kill-switches/schedule`): the changes set for later, each with
//! its time, author and reason, and for admins a form that cancels it with a reason. Its own
//! page, off the Kill switches, so that page carries none of it (docs/page-weight.md).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::kill_switches::{load_kill_switch_schedule, CancelKillSwitchChange};
use crate::model::kill_switches::Scheduled;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::FormKey;
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::data::page_data;

#[component]
pub fn KillSwitchSchedulePage() -> impl IntoView {
    let cancel = FormAction::new::<CancelKillSwitchChange>();
    let data = page_data(
        move || cancel.version().get(),
        |_| load_kill_switch_schedule(),
    );
    view! {
        <Title text="Kill switch schedule" />
        <a href="/kill-switches" class="text-sm text-sky-800 underline">"← Kill switches"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Kill switch schedule"</h1>
        <div class="mt-4">
            <ActionResult value=move || cancel.value().get() success=|m: &String| m.clone() />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:view>
            <Schedule schedule=view.schedule form_key=view.can_change.then_some(view.form_key) cancel />
        </AsyncSection>
    }
}

/// The changes set for later, and for admins (with a form key) a form that cancels each.
#[component]
fn Schedule(
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
    view! { <ul class="divide-y divide-slate-100 text-sm">{rows}</ul> }
}
