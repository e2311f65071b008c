//! Kill switch approvals (`/kill-switches/approvals`): the changes that turn safety off,
//! waiting for a second admin, who approves or rejects each with a reason. Its own page,
//! off the Kill switches, so that page carries none of its forms (docs/page-weight.md).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::kill_switches::{
    load_kill_switch_approvals, DecideKillSwitchApproval, KillSwitchApprovals,
};
use crate::model::kill_switches::Approval;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::{field_error, FormKey};
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::data::page_data;

use super::ReasonField;

#[component]
pub fn KillSwitchApprovalsPage() -> impl IntoView {
    let decide = FormAction::new::<DecideKillSwitchApproval>();
    let data = page_data(
        move || decide.version().get(),
        |_| load_kill_switch_approvals(),
    );
    view! {
        <Title text="Kill switch approvals" />
        <a href="/kill-switches" class="text-sm text-sky-800 underline">"← Kill switches"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Kill switch approvals"</h1>
        <div class="mt-4">
            <ActionResult value=move || decide.value().get() success=|m: &String| m.clone() />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:view>
            <Requests view decide />
        </AsyncSection>
    }
}

#[component]
fn Requests(view: KillSwitchApprovals, decide: FormAction<String>) -> impl IntoView {
    let KillSwitchApprovals {
        requests,
        decider,
        form_key,
    } = view;
    if requests.is_empty() {
        return view! { <p class="text-sm text-slate-500">"Nothing waits."</p> }.into_any();
    }
    requests
        .into_iter()
        .map(|a| {
            let form = decider.clone().map(|me| {
                let own = me == a.requested_by || a.on_behalf_of.as_ref() == Some(&me);
                view! { <DecideForm id=a.id.clone() own form_key=form_key.clone() decide /> }
                    .into_any()
            });
            view! { <RequestCard a form /> }
        })
        .collect_view()
        .into_any()
}

/// One request: who asks what, why, for how long, and until when it may be approved.
#[component]
fn RequestCard(a: Approval, form: Option<AnyView>) -> impl IntoView {
    let what = format!(
        "{} {}",
        a.switch.label(),
        if a.enable { "on" } else { "off" }
    );
    let lasts = match (a.for_minutes, a.ends_at) {
        (Some(m), _) => Some(view! { {format!(", for {m} min")} }.into_any()),
        (None, Some(end)) => Some(view! { ", until " <Moment iso=end /> }.into_any()),
        (None, None) => None,
    };
    view! {
        <section class="mt-4 rounded-lg border border-slate-200 bg-white p-5 shadow-sm" data-testid="approval">
            <h2 class="text-lg font-semibold">{what}{lasts}</h2>
            <p class="mt-1 text-sm">{format!("{}: “{}”", a.requested_by, a.reason)}</p>
            <p class="mt-1 text-xs text-slate-500">
                <Moment iso=a.requested_at /> " · open until " <Moment iso=a.expires_at />
            </p>
            {form}
        </section>
    }
}

/// Approve or reject, with a reason; one's own request can only be withdrawn.
#[component]
fn DecideForm(
    id: String,
    own: bool,
    form_key: String,
    decide: FormAction<String>,
) -> impl IntoView {
    let ours = {
        let id = id.clone();
        move || decide.submitted("id").is_none_or(|s| s == id)
    };
    let reason_error = Signal::derive(move || {
        ours()
            .then(|| decide.value().with(|v| field_error(v, "reason")))
            .flatten()
    });
    let choices = if own {
        view! { <option value="reject">"Withdraw"</option> }.into_any()
    } else {
        view! {
            <option value="approve">"Approve"</option>
            <option value="reject">"Reject"</option>
        }
        .into_any()
    };
    view! {
        <PostForm action=decide attr:class="mt-3 space-y-3">
            <input type="hidden" name="id" value=id.clone() />
            <FormKey value=form_key />
            <ReasonField id=format!("reason-{id}") label="Reason".to_string() error=reason_error />
            <select name="decision" aria-label="Decision" class="rounded border border-slate-300 px-2 py-1 text-sm">
                {choices}
            </select>
            <button type="submit" class="ml-3 rounded bg-slate-900 px-4 py-2 text-sm font-medium text-white hover:bg-slate-700">
                "Decide"
            </button>
        </PostForm>
    }
}
