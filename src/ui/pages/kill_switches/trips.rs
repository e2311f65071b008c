//! The trips: which alert rule moves which switch to its safe position when it fires.
//! Everyone sees them; admins attach and remove them.

use leptos::prelude::*;

use crate::api::kill_switches::TripView;
use crate::model::kill_switches::{Switch, TRIP_RULES};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::form::FormKey;
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;

/// The trips, and for admins (with a form key) the forms that attach and remove them.
#[component]
pub fn Trips(
    trips: Vec<TripView>,
    form_key: Option<String>,
    change: FormAction<String>,
) -> impl IntoView {
    let rows = trips
        .into_iter()
        .map(|t| {
            let rule = t.rule.clone();
            let remove = form_key.clone().map(|key| {
                view! {
                    <PostForm action=change attr:class="inline">
                        <input type="hidden" name="op" value="remove" />
                        <input type="hidden" name="rule" value=rule />
                        <input type="hidden" name="switch" value=t.switch.key() />
                        <FormKey value=key />
                        <button type="submit" class="rounded border border-red-300 px-3 py-1 text-sm text-red-800 hover:bg-red-50">
                            "Remove"
                        </button>
                    </PostForm>
                }
            });
            view! {
                <tr class="border-t border-slate-100" data-testid="trip">
                    <td class="py-2 pr-4 font-mono text-xs">{t.rule}</td>
                    <td class="py-2 pr-4">{t.switch.trip_effect()}</td>
                    <td class="py-2 pr-4">{t.made_by} ", " <Moment iso=t.made_at /></td>
                    <td class="py-2 pr-4">{remove}</td>
                </tr>
            }
        })
        .collect_view();
    let attach = form_key.map(|key| view! { <AttachForm form_key=key change /> });
    view! {
        <h2 class="mt-6 text-lg font-semibold">"Trips"</h2>
        <p class="mt-1 text-sm text-slate-600">
            "When a rule with a trip fires, its switch goes to its safe position, once; the alert says so."
        </p>
        <div class="mt-3">
            <ActionResult value=move || change.value().get() success=|m: &String| m.clone() />
        </div>
        <DataTable label="Trips" columns=&["Alert rule", "Then", "Attached", ""] padded=true>
            {rows}
        </DataTable>
        {attach}
    }
}

/// An alert rule and a switch, attached as a trip.
#[component]
fn AttachForm(form_key: String, change: FormAction<String>) -> impl IntoView {
    let rules = TRIP_RULES
        .iter()
        .map(|r| view! { <option value=r.rule>{r.words} ", fired by " {r.driven_by}</option> })
        .collect_view();
    let switches = Switch::ALL
        .into_iter()
        .map(|s| view! { <option value=s.key()>{s.trip_effect()}</option> })
        .collect_view();
    let select = "mt-1 max-w-full rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        <PostForm action=change attr:class="mt-3 flex flex-wrap items-end gap-3">
            <input type="hidden" name="op" value="attach" />
            <FormKey value=form_key />
            <div class="min-w-0 max-w-full">
                <label for="trip-rule" class="block text-sm font-medium">"When this rule fires"</label>
                <select id="trip-rule" name="rule" class=select>{rules}</select>
            </div>
            <div class="min-w-0 max-w-full">
                <label for="trip-scope" class="block text-sm font-medium">"Only for the scope (idempotency rules)"</label>
                <input id="trip-scope" name="scope" maxlength="200" placeholder="every scope" class=select />
            </div>
            <div class="min-w-0 max-w-full">
                <label for="trip-switch" class="block text-sm font-medium">"Then"</label>
                <select id="trip-switch" name="switch" class=select>{switches}</select>
            </div>
            <button type="submit" class="rounded bg-slate-900 px-4 py-2 text-sm font-medium text-white hover:bg-slate-700">
                "Attach the trip"
            </button>
            <p class="w-full text-sm text-amber-800" data-testid="trip-warning">
                "A trip hands its switch to whoever fires its rule: any device key fires the measurement rules, any client of a scope its idempotency rules. Name one scope to trust only its clients."
            </p>
        </PostForm>
    }
}
