//! Kill switches: state as badges, who changed each last and why, a guarded change form,
//! and the change history; a link to their automation ([`automation`]: trips and trigger
//! URLs), which has its own page.

pub mod approvals;
pub mod automation;
pub mod schedule;
mod triggers;
mod trips;

use leptos::either::Either;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::kill_switches::{
    kill_switch_history, load_kill_switches, ChangeKillSwitch, KillSwitchesView,
};
use crate::api::shell::ShellInfo;
use crate::model::kill_switches::{ChangeAnswer, HistoryPage, Switch, SwitchState, TIMED_CHOICES};
use crate::model::AppError;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::badge::OnOff;
use crate::ui::components::form::{field_error, invalid_attrs, FieldError, FormKey};
use crate::ui::components::moment::Moment;
use crate::ui::components::pager::Pager;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;
use crate::ui::data::{page_data, PageData};
use crate::ui::layout::ShellData;

#[component]
pub fn KillSwitchesPage() -> impl IntoView {
    let change = FormAction::new::<ChangeKillSwitch>();
    let query = use_query_map();
    let shell = use_context::<ShellData>();
    let data = page_data(move || change.version().get(), |_| load_kill_switches());
    follow_switches(data);
    let history = page_data(
        move || (change.version().get(), query.read().get("before")),
        |(_, before)| kill_switch_history(before),
    );
    // The banner above every page shows a change at once, not at its next read.
    if let Some(shell) = shell {
        Effect::new(move |_| {
            if change.version().get() > 0 {
                shell.0.refetch();
            }
        });
    }
    view! {
        <Title text="Kill switches" />
        <h1 class="text-2xl font-semibold">"Kill switches"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Safe mode stops every side effect; automation off means route only, no automatic replies."
        </p>
        <div class="mt-4">
            <ActionResult value=move || change.value().get() success=|a: &ChangeAnswer| a.requested.clone().unwrap_or_else(|| format!("Saved: {}.", a.switches.summary())) />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:view>
            <SwitchCards view change />
        </AsyncSection>
        <a class="mt-6 inline-block text-sm text-sky-800 underline" href="/kill-switches/automation">
            "Automation: trips, trigger URLs, scheduled changes →"
        </a>
        <h2 class="mt-10 text-lg font-semibold">"History"</h2>
        <AsyncSection load=move || history let:page>
            <History page older=query.read_untracked().get("before").is_some_and(|b| !b.is_empty()) />
        </AsyncSection>
    }
}

/// Reads the switches of a page again when the frame's read of them (every 5 s) found a
/// newer version than the page shows: someone else changed them, and the page's cards
/// follow the stored state as the banner does. Only in the browser, and only on a change.
pub fn follow_switches(data: PageData<Result<KillSwitchesView, AppError>>) {
    let Some(shell) = use_context::<ShellData>() else {
        return;
    };
    Effect::new(move |_| {
        let seen = ShellInfo::version_of(shell.0.get());
        let shown = data
            .get_untracked()
            .and_then(|r| r.ok())
            .map(|v| v.switches.version);
        if let (Some(seen), Some(shown)) = (seen, shown) {
            if seen > shown {
                data.refetch();
            }
        }
    });
}

/// One card per switch, and for viewers the note that only admins change them.
#[component]
fn SwitchCards(view: KillSwitchesView, change: FormAction<ChangeAnswer>) -> impl IntoView {
    let KillSwitchesView {
        switches,
        can_change,
        form_key,
        pending,
        can_skip,
        scheduled,
    } = view;
    // The two cards, always in this order: read again after every answer, each stays in
    // place. The form that was sent is emptied and closed after a success (`PostForm`),
    // and stays open as typed after a refusal.
    let cards = Switch::ALL
        .into_iter()
        .map(|switch| {
            let state = switches.get(switch).clone();
            let form_key = can_change.then(|| form_key.clone());
            let version = switches.version;
            view! { <SwitchCard switch state version form_key can_skip change /> }
        })
        .collect_view();
    view! {
        <Pending pending />
        <div class="mt-4 grid gap-4 md:grid-cols-2">{cards}</div>
        <Upcoming scheduled />
        {(!can_change)
            .then(|| {
                view! {
                    <p class="mt-3 text-sm text-slate-500">
                        "Only admins can change the kill switches."
                    </p>
                }
            })}
    }
}

/// The changes waiting for a second admin, as a link to them (nothing when none): on the
/// Kill switches page and the Overview.
#[component]
pub fn Pending(pending: usize) -> impl IntoView {
    (pending > 0).then(|| view! {
        <a class="mt-4 block rounded bg-amber-50 p-3 text-sm font-medium text-amber-900 underline" href="/kill-switches/approvals" data-testid="pending-approvals">
            {format!("Awaiting approval: {pending} →")}
        </a>
    })
}

/// The changes set for later, as a link to the schedule (nothing when none).
#[component]
pub fn Upcoming(scheduled: usize) -> impl IntoView {
    (scheduled > 0).then(|| view! {
        <a class="mt-4 block text-sm text-sky-800 underline" href="/kill-switches/automation#scheduled" data-testid="scheduled-changes">
            {format!("Scheduled: {scheduled} →")}
        </a>
    })
}

/// Who changed a switch last, when and why (and when a timed change ends); or that it
/// still has its safe default.
fn last_change(state: &SwitchState) -> AnyView {
    match (&state.changed_by, &state.changed_at) {
        (Some(by), Some(at)) => view! {
            {format!("Last changed by {by} at ")}
            <Moment iso=at.clone() />
            {format!(": “{}”", state.reason.clone().unwrap_or_default())}
            {state.ends_at.clone().map(|end| view! {
                <span class="block font-medium text-amber-800" data-testid="ends-at">
                    "Goes back by itself at " <Moment iso=end />
                </span>
            })}
        }
        .into_any(),
        _ => "Never changed: this is the safe default.".into_any(),
    }
}

/// A switch's state as a badge, what that state means, its last change, and (with a form
/// key, which admins get) the form that flips it.
#[component]
fn SwitchCard(
    switch: Switch,
    state: SwitchState,
    version: u64,
    form_key: Option<String>,
    can_skip: bool,
    change: FormAction<ChangeAnswer>,
) -> impl IntoView {
    let alarming_when_on = switch == Switch::AutomationEnabled;
    let target = !state.enabled;
    let form = form_key.map(|form_key| {
        let form = view! { <ChangeForm switch target version form_key can_skip change /> };
        // Each direction its own branch: read again after someone else's change, the card's
        // form for the other direction is a new one, empty and closed, never the one typed
        // for this direction (a refusal keeps what was typed for the same direction only).
        if target {
            Either::Left(form)
        } else {
            Either::Right(form)
        }
    });
    view! {
        <section
            class="rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
            aria-label=switch.label()
            data-testid=format!("switch-{}", switch.key())
        >
            <div class="flex items-center justify-between">
                <h2 class="text-lg font-semibold">{switch.label()}</h2>
                <OnOff on=state.enabled alarming_when_on />
            </div>
            <p class="mt-2 text-sm text-slate-700">{switch.describe(state.enabled)}</p>
            <p class="mt-1 text-xs text-slate-500" data-testid="last-change">{last_change(&state)}</p>
            {form}
        </section>
    }
}

/// A change's reason, with its error next to it.
#[component]
pub(super) fn ReasonField(
    id: String,
    label: String,
    error: Signal<Option<String>>,
) -> impl IntoView {
    let error_id = format!("{id}-error");
    let (invalid, described) = invalid_attrs(error, error_id.clone());
    view! {
        <div>
            <label for=id.clone() class="block text-sm font-medium">{label}</label>
            <textarea
                id=id
                name="reason"
                rows="2"
                maxlength="500"
                aria-invalid=invalid
                aria-describedby=described
                class="mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm aria-invalid:border-red-500"
                placeholder="Why, in a sentence (no customer details)"
            ></textarea>
            <FieldError id=error_id message=error />
        </div>
    }
}

/// How long a change in a risky direction lasts: until someone changes it back, or a
/// while, after which the switch goes back towards safety by itself.
#[component]
fn EndField(id: String, error: Signal<Option<String>>) -> impl IntoView {
    let error_id = format!("{id}-error");
    let (invalid, described) = invalid_attrs(error, error_id.clone());
    let choices = TIMED_CHOICES
        .iter()
        .map(|(minutes, words)| view! { <option value=minutes.to_string()>{*words}</option> })
        .collect_view();
    view! {
        <div>
            <label for=id.clone() class="block text-sm font-medium">"How long"</label>
            <select
                id=id
                name="for_minutes"
                aria-invalid=invalid
                aria-describedby=described
                class="mt-1 rounded border border-slate-300 px-2 py-1 text-sm"
            >
                <option value="">"until someone changes it back"</option>
                {choices}
            </select>
            <FieldError id=error_id message=error />
        </div>
    }
}

/// When a change is made: now, or at a time it is set for (docs/switches.md, "Scheduled
/// changes"), in UTC (a page without JavaScript cannot know the reader's zone).
#[component]
fn WhenField(id: String, error: Signal<Option<String>>) -> impl IntoView {
    let error_id = format!("{id}-error");
    let (invalid, described) = invalid_attrs(error, error_id.clone());
    view! {
        <div>
            <label for=id.clone() class="block text-sm font-medium">"At (UTC; empty: now)"</label>
            <input
                id=id
                type="datetime-local"
                name="at"
                aria-invalid=invalid
                aria-describedby=described
                class="mt-1 rounded border border-slate-300 px-2 py-1 text-sm"
            />
            <FieldError id=error_id message=error />
        </div>
    }
}

/// An emergency admin's box that skips the second admin's approval.
#[component]
fn SkipField(id: String) -> impl IntoView {
    view! {
        <div class="flex items-start gap-2 text-sm">
            <input id=id.clone() type="checkbox" name="emergency" value="yes" class="mt-1" />
            <label for=id>"Emergency: skip approval (alerts)"</label>
        </div>
    }
}

/// The ticked confirmation a dangerous change asks for, with its error next to it.
#[component]
fn Confirmation(
    switch: Switch,
    target: bool,
    id: String,
    error: Signal<Option<String>>,
) -> impl IntoView {
    let error_id = format!("{id}-error");
    let (invalid, described) = invalid_attrs(error, error_id.clone());
    view! {
        <div class="flex items-start gap-2 rounded bg-amber-50 p-2 text-sm text-amber-900">
            <input id=id.clone() type="checkbox" name="confirm" value="yes" class="mt-1" aria-invalid=invalid aria-describedby=described />
            <label for=id>
                {format!("I confirm: {}", switch.describe(target).to_ascii_lowercase())}
            </label>
        </div>
        <FieldError id=error_id message=error />
    }
}

/// The folded form that turns `switch` to `target`: a reason always, a confirmation where
/// the switch asks for one, the version it was read at (a concurrent change fails) and the
/// form's idempotency key.
#[component]
fn ChangeForm(
    switch: Switch,
    target: bool,
    version: u64,
    form_key: String,
    can_skip: bool,
    change: FormAction<ChangeAnswer>,
) -> impl IntoView {
    let on_off = if target { "on" } else { "off" };
    let verb = format!("Turn {} {on_off}", switch.label().to_ascii_lowercase());
    let reason_id = format!("reason-{}", switch.key());
    let confirm_id = format!("confirm-{}", switch.key());
    // A refusal names its field; it is shown on this form when this form was the one sent
    // (after a form post without JavaScript, the page only knows the refusal).
    let ours = move || change.submitted("switch").is_none_or(|s| s == switch.key());
    let error_of = move |field: &'static str| {
        Signal::derive(move || {
            ours()
                .then(|| change.value().with(|v| field_error(v, field)))
                .flatten()
        })
    };
    let (reason_error, confirm_error) = (error_of("reason"), error_of("confirm"));
    let risky = switch.needs_confirmation(target);
    let confirm =
        risky.then(|| view! { <Confirmation switch target id=confirm_id error=confirm_error /> });
    let ends = risky.then(|| {
        let id = format!("for-{}", switch.key());
        view! { <EndField id error=error_of("for_minutes") /> }
    });
    // An emergency admin may skip the second admin's approval; the history marks it and an
    // alert says so.
    let skip =
        (risky && can_skip).then(|| view! { <SkipField id=format!("skip-{}", switch.key()) /> });
    view! {
        <details class="mt-4 rounded border border-slate-200 bg-slate-50 p-3">
            <summary class="cursor-pointer text-sm font-medium text-sky-800">{format!("{verb}…")}</summary>
            <PostForm action=change attr:class="mt-3 space-y-3">
                <input type="hidden" name="switch" value=switch.key() />
                <input type="hidden" name="enable" value=target.to_string() />
                <input type="hidden" name="expected_version" value=version.to_string() />
                <FormKey value=form_key />
                <ReasonField id=reason_id label=format!("Reason for turning {} {on_off}", switch.label().to_ascii_lowercase()) error=reason_error />
                {ends}
                <WhenField id=format!("at-{}", switch.key()) error=error_of("at") />
                {confirm}
                {skip}
                <button
                    type="submit"
                    class="rounded bg-slate-900 px-4 py-2 text-sm font-medium text-white hover:bg-slate-700"
                >
                    {verb}
                </button>
            </PostForm>
        </details>
    }
}

/// The change history, newest first, a page at a time.
#[component]
fn History(page: HistoryPage, older: bool) -> impl IntoView {
    if page.entries.is_empty() {
        return view! { <p class="text-sm text-slate-500">"No changes yet."</p> }.into_any();
    }
    let on_off = |b: bool| if b { "on" } else { "off" };
    let rows = page
        .entries
        .into_iter()
        .map(|e| {
            view! {
                <tr class="border-t border-slate-100">
                    <td class="py-2 pr-4 whitespace-nowrap"><Moment iso=e.at.clone() /></td>
                    <td class="py-2 pr-4">{e.actor}</td>
                    <td class="py-2 pr-4">{e.switch.label()}</td>
                    <td class="py-2 pr-4 whitespace-nowrap">{match e.moved {
                        Some((from, to)) => format!("{} → {}", on_off(from), on_off(to)),
                        None => "no move".to_string(),
                    }}</td>
                    <td class="py-2 pr-4">
                        {e.reason}
                        {e.ends_at.map(|end| view! { " (until " <Moment iso=end /> ")" })}
                        {e.note.map(|n| view! { <span class="block text-xs text-slate-500">{n}</span> })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable label="Change history" columns=&["When", "Who", "Switch", "Change", "Reason"] padded=true>
            {rows}
        </DataTable>
        <Pager
            base="/kill-switches"
            // Back to the newest: only from an older page (on the first it led to itself).
            first=older.then_some("Newest")
            next=page.next_cursor
            next_param="before"
            next_label="Older →"
            label="Pages of the change history"
        />
    }
    .into_any()
}
