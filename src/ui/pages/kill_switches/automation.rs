//! Kill switch automation (`/kill-switches/automation`): what moves a switch to its safe
//! position without a person, the trips on alert rules ([`super::trips`]) and the trigger
//! URLs ([`super::triggers`]). Its own page, off the Kill switches, so that page carries
//! none of its forms (docs/page-weight.md).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::kill_switches::{
    load_kill_switch_automation, CancelKillSwitchChange, ChangeKillSwitchTrip,
    RevokeKillSwitchTrigger, RotateKillSwitchTrigger,
};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::post_form::FormAction;
use crate::ui::data::page_data;

use super::schedule::Schedule;
use super::triggers::Triggers;
use super::trips::Trips;

#[component]
pub fn KillSwitchAutomationPage() -> impl IntoView {
    let rotate = FormAction::new::<RotateKillSwitchTrigger>();
    let revoke = FormAction::new::<RevokeKillSwitchTrigger>();
    let trip = FormAction::new::<ChangeKillSwitchTrip>();
    let cancel = FormAction::new::<CancelKillSwitchChange>();
    let automation = page_data(
        move || {
            (
                rotate.version().get(),
                revoke.version().get(),
                trip.version().get(),
                cancel.version().get(),
            )
        },
        |_| load_kill_switch_automation(),
    );
    view! {
        <Title text="Kill switch automation" />
        <a href="/kill-switches" class="text-sm text-sky-800 underline">"← Kill switches"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Kill switch automation"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Trips, trigger URLs (towards safety only) and scheduled changes."
        </p>
        <AsyncSection load=move || automation spacing="mt-4" let:a>
            <Trips trips=a.trips form_key=a.can_change.then(|| a.form_key.clone()) change=trip />
            <Triggers triggers=a.triggers form_key=a.form_key.clone() rotate revoke />
            <Schedule schedule=a.schedule form_key=a.can_change.then_some(a.form_key) cancel />
        </AsyncSection>
    }
}
