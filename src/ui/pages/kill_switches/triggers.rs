//! The kill switches' trigger URLs (admins only): per switch, made or rotated (the URL
//! shown once) and revoked.

use leptos::prelude::*;

use crate::api::kill_switches::TriggerView;
use crate::model::users::OneTime;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::form::{FormKey, SecretSubmit};
use crate::ui::components::moment::Moment;
use crate::ui::components::one_time::OneTimeResult;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;

/// The trigger URLs (admins only): per switch, a secret URL an outside monitor calls to
/// move the switch to its safe position; made or rotated here (shown once), revoked here.
#[component]
pub fn Triggers(
    triggers: Vec<TriggerView>,
    form_key: String,
    rotate: FormAction<OneTime>,
    revoke: FormAction<String>,
) -> impl IntoView {
    if triggers.is_empty() {
        return ().into_any();
    }
    let rows = triggers
        .into_iter()
        .map(|t| view! { <TriggerRow t form_key=form_key.clone() rotate revoke /> })
        .collect_view();
    view! {
        <h2 class="mt-10 text-lg font-semibold">"Trigger URLs"</h2>
        <p class="mt-1 text-sm text-slate-600">
            "A monitor posts to a secret URL to move its switch to safety."
        </p>
        <div class="mt-3 space-y-2">
            <OneTimeResult value=Signal::derive(move || rotate.value().get()) what="trigger URL" />
            <ActionResult value=move || revoke.value().get() success=|m: &String| m.clone() />
        </div>
        <DataTable label="Trigger URLs" columns=&["Moves", "In use", ""] padded=true>
            {rows}
        </DataTable>
    }
    .into_any()
}

/// One switch's trigger URL: whether it has one (who made it, when), and its forms.
#[component]
fn TriggerRow(
    t: TriggerView,
    form_key: String,
    rotate: FormAction<OneTime>,
    revoke: FormAction<String>,
) -> impl IntoView {
    let key = t.switch.key();
    let to = if t.switch.safe() { "on" } else { "off" };
    let what = format!("{} → {to}", t.switch.label());
    let has = t.made.is_some();
    let (rotate_key, revoke_key) = (form_key.clone(), form_key.clone());
    let made = match t.made {
        Some((by, at)) => view! { "made by " {by} " at " <Moment iso=at /> }.into_any(),
        None => "none".into_any(),
    };
    let revoke_form = has.then(|| {
        view! {
            <PostForm action=revoke attr:class="inline">
                <input type="hidden" name="switch" value=key />
                <FormKey value=revoke_key />
                <button type="submit" class="rounded border border-red-300 px-3 py-1 text-sm text-red-800 hover:bg-red-50">
                    {format!("Revoke the {} trigger URL", t.switch.label().to_ascii_lowercase())}
                </button>
            </PostForm>
        }
    });
    view! {
        <tr class="border-t border-slate-100" data-testid=format!("trigger-{key}")>
            <td class="py-2 pr-4 font-medium">{what}</td>
            <td class="py-2 pr-4">{made}</td>
            <td class="py-2 pr-4"><div class="flex flex-wrap items-start gap-2">
                <PostForm action=rotate attr:class="inline">
                    <input type="hidden" name="switch" value=key />
                    <FormKey value=rotate_key />
                    <SecretSubmit label=format!(
                        "{} the {} trigger URL",
                        if has { "Rotate" } else { "Make" },
                        t.switch.label().to_ascii_lowercase()
                    ) />
                </PostForm>
                {revoke_form}
            </div></td>
        </tr>
    }
}
