//! The Receiver (`/outbox/receiver`): where side effects go and how it is doing, and for
//! admins the form to change it (its URL and limits), the secrets that sign each message
//! (add, retire) and a test message. Its own page, off the Outbox, so the Outbox carries
//! none of its forms.

use leptos::prelude::*;
use leptos_meta::Title;

use leptos_router::hooks::use_query_map;

use super::receivers::Receivers;
use super::resend::Resend;
use crate::api::outbox::{
    load_receiver, AddReceiverSecret, PauseReceiver, ReceiverBreaker, RetireReceiverSecret,
    SaveReceiver, SaveRoute, TestReceiver,
};
use crate::api::resend::StartResend;
use crate::model::outbox::{ReceiverLimits, ReceiverView, SecretView, WaitView};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::{field_error, invalid_attrs, FieldError, FormKey};
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::receiver::ReceiverStatus;
use crate::ui::data::page_data;

/// The page's actions.
#[derive(Clone, Copy)]
struct Actions {
    save: FormAction<Option<String>>,
    add: FormAction<Option<String>>,
    retire: FormAction<Option<String>>,
    test: FormAction<String>,
    pause: FormAction<String>,
    breaker: FormAction<String>,
    resend: FormAction<String>,
    route: FormAction<String>,
    /// Successful saves (a refused one leaves the form as typed).
    saved: Memo<usize>,
}

#[component]
pub fn ReceiverPage() -> impl IntoView {
    let save = FormAction::new::<SaveReceiver>();
    let actions = Actions {
        save,
        add: FormAction::new::<AddReceiverSecret>(),
        retire: FormAction::new::<RetireReceiverSecret>(),
        test: FormAction::new::<TestReceiver>(),
        pause: FormAction::new::<PauseReceiver>(),
        breaker: FormAction::new::<ReceiverBreaker>(),
        resend: FormAction::new::<StartResend>(),
        route: FormAction::new::<SaveRoute>(),
        saved: save.saved(),
    };
    // The receiver the address names (`?receiver=`; none: `default`).
    let query = use_query_map();
    let name = move || query.with(|q| q.get("receiver").unwrap_or_default());
    // Read again after each change (after the receiver's form, only once it is saved).
    let data = page_data(
        move || {
            let changes = actions.saved.get()
                + actions.add.version().get()
                + actions.retire.version().get()
                + actions.pause.version().get()
                + actions.breaker.version().get()
                + actions.route.version().get();
            (changes, name())
        },
        |(_, name)| load_receiver(Some(name)),
    );
    view! {
        <Title text="Receiver" />
        <a href="/outbox" class="text-sm text-sky-800 underline">"← Outbox"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Receiver"</h1>
        <p class="mt-1 text-sm text-slate-600">"Where side effects are delivered, signed with every secret below."</p>
        <div class="mt-4 space-y-2">
            <ActionResult value=move || actions.save.value().get() success=shown_once />
            <ActionResult value=move || actions.add.value().get() success=shown_once />
            <ActionResult value=move || actions.retire.value().get() success=|_| "Secret retired: it no longer signs.".into() />
            <ActionResult value=move || actions.test.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || actions.pause.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || actions.breaker.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || actions.resend.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || actions.route.value().get() success=|m: &String| m.clone() />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:detail>
            <Receiver name=detail.name.clone() receiver=detail.receiver.clone() limits=detail.limits actions />
            // A new receiver's first save is the receiver form's action: one answer shown.
            <Receivers detail route=actions.route add=actions.save />
        </AsyncSection>
        <Resend action=actions.resend />
    }
}

/// A change of the deliveries with a reason (operators): pausing or resuming them
/// (docs/events.md, "Pause"), opening or closing the breaker ("Breaker"). One form each,
/// which names the pause or the opening it ends (`ends`; empty: it starts one).
#[component]
fn ReasonForm(
    action: FormAction<String>,
    /// The receiver it acts on.
    receiver: String,
    /// The hidden field that names what it ends: `pause_id`, `breaker_id`.
    field: &'static str,
    ends: Option<String>,
    /// The label to start one, and the one to end it.
    labels: (&'static str, &'static str),
    form_key: String,
) -> impl IntoView {
    let label = if ends.is_some() { labels.1 } else { labels.0 };
    let name = field.trim_end_matches("_id");
    let reason_id = format!("{name}-reason");
    view! {
        <details class="mt-3" data-testid=format!("{name}-form")>
            <summary class="cursor-pointer text-sm font-medium text-sky-800">{format!("{label}…")}</summary>
            <PostForm action attr:class="mt-2 flex flex-wrap items-end gap-2">
                <input type="hidden" name=field value=ends.unwrap_or_default() />
                <input type="hidden" name="receiver" value=receiver />
                <FormKey value=form_key name="form_key" />
                <label for=reason_id.clone() class="text-sm">"Reason"</label>
                <input id=reason_id name="reason" required maxlength="500" class="rounded border border-slate-300 px-2 py-1 text-sm" />
                <button type="submit" class="rounded bg-slate-900 px-3 py-1 text-sm text-white">{label}</button>
            </PostForm>
        </details>
    }
}

/// The pause's form and the breaker's, each naming what it ends.
#[component]
fn WaitForms(
    name: String,
    waits: Option<WaitView>,
    form_key: String,
    actions: Actions,
) -> impl IntoView {
    let w = waits.unwrap_or_default();
    view! {
        <ReasonForm
            action=actions.pause
            receiver=name.clone()
            field="pause_id"
            ends=w.pause_id
            labels=("Pause deliveries", "Resume deliveries")
            form_key=form_key.clone()
        />
        <ReasonForm
            action=actions.breaker
            receiver=name
            field="breaker_id"
            ends=w.breaker_id
            labels=("Open the breaker", "Close the breaker")
            form_key
        />
    }
}

/// What saving the receiver or adding a secret answers: the new secret, once.
fn shown_once(secret: &Option<String>) -> String {
    match secret {
        Some(s) => {
            format!("Saved. New signing secret (shown once; give it to the receiver now): {s}")
        }
        None => "Saved.".into(),
    }
}

#[component]
fn Receiver(
    name: String,
    receiver: ReceiverView,
    limits: ReceiverLimits,
    actions: Actions,
) -> impl IntoView {
    let version = receiver.version.to_string();
    // Nothing to test before there is a receiver.
    let has_receiver = receiver.source != "none";
    let version_list = version.clone();
    let secrets = receiver.secrets.clone();
    let (for_waits, for_form, for_secrets) = (name.clone(), name.clone(), name.clone());
    let url_error = Signal::derive(move || actions.save.value().with(|v| field_error(v, "url")));
    let (invalid, described) = invalid_attrs(url_error, "receiver-url-error".into());
    view! {
        <section aria-label="Receiver" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <h2 class="text-lg font-semibold">{name}</h2>
            <ReceiverStatus receiver=receiver.clone() />
            <WaitForms name=for_waits waits=receiver.waits.clone() form_key=receiver.form_key.clone() actions />
            // Open while it shows a refusal (also after a post without JavaScript).
            <details class="mt-3" open=move || actions.save.value().with(|v| matches!(v, Some(Err(_))))>
                <summary class="cursor-pointer text-sm font-medium text-sky-800">"Change the receiver (admins)…"</summary>
                <PostForm action=actions.save attr:class="mt-3 flex flex-wrap items-end gap-3">
                    <input type="hidden" name="version" value=version />
                    <input type="hidden" name="receiver" value=for_form />
                    <div class="text-sm">
                        <label for="receiver-url" class="block text-slate-600">"URL"</label>
                        <input
                            id="receiver-url"
                            name="url"
                            value=receiver.url.clone()
                            aria-invalid=invalid
                            aria-describedby=described
                            class="w-96 max-w-full rounded border border-slate-300 px-2 py-1 font-mono text-sm aria-invalid:border-red-500"
                        />
                        <FieldError id="receiver-url-error" message=url_error />
                    </div>
                    <Limit name="rate" label="Requests a second" value=limits.rate />
                    <Limit name="burst" label="Burst" value=limits.burst />
                    <Limit name="concurrency" label="At once" value=limits.concurrency />
                    <label class="flex items-center gap-1 text-sm">
                        <input type="checkbox" name="enabled" value="on" checked=receiver.enabled || receiver.source == "none" />
                        "Deliver"
                    </label>
                    <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-sm text-white">"Save receiver"</button>
                </PostForm>
                <Secrets secrets version=version_list name=for_secrets has_receiver actions />
            </details>
        </section>
    }
}

/// The signing secrets of the receiver `name` (admins): each with its Retire button, the
/// button that adds one, and the test message.
#[component]
fn Secrets(
    secrets: Vec<SecretView>,
    version: String,
    name: String,
    has_receiver: bool,
    actions: Actions,
) -> impl IntoView {
    let (for_list, for_add) = (name.clone(), name.clone());
    view! {
        <h3 class="mt-4 text-sm font-semibold">"Signing secrets"</h3>
        <p class="text-xs text-slate-500">"Add the new secret, give it to the receiver, then retire the old one."</p>
        <SecretList secrets version=version.clone() receiver=for_list actions />
        <div class="mt-3 flex gap-3">
            <PostForm action=actions.add>
                <input type="hidden" name="version" value=version />
                <input type="hidden" name="receiver" value=for_add />
                <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Add a secret"</button>
            </PostForm>
            <PostForm action=actions.test attr:hidden=!has_receiver>
                <input type="hidden" name="receiver" value=name />
                <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Send a test event"</button>
            </PostForm>
        </div>
    }
}

/// One of the limits every console keeps to, in the receiver's form (0: none).
#[component]
fn Limit(name: &'static str, label: &'static str, value: i64) -> impl IntoView {
    view! {
        <label class="text-sm">
            <span class="block text-slate-600">{label}</span>
            <input type="number" name=name min="0" value=value.to_string() class="w-24 rounded border border-slate-300 px-2 py-1 text-sm" />
        </label>
    }
}

/// The signing secrets, each with its Retire button.
#[component]
fn SecretList(
    secrets: Vec<SecretView>,
    version: String,
    receiver: String,
    actions: Actions,
) -> impl IntoView {
    let items = secrets
        .iter()
        .map(|s| {
            let (id, v, r) = (s.id.clone(), version.clone(), receiver.clone());
            view! {
                <li class="flex items-center gap-3 text-sm">
                    <span class="font-mono">{s.id.clone()}</span>
                    <span class="text-slate-500">"made " <Moment iso=s.created_at.clone() /> {format!(" by {}", s.created_by)}</span>
                    <PostForm action=actions.retire attr:class="inline">
                        <input type="hidden" name="id" value=id />
                        <input type="hidden" name="version" value=v />
                        <input type="hidden" name="receiver" value=r />
                        <button type="submit" class="text-xs text-red-700 underline">"Retire"</button>
                    </PostForm>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="mt-1 space-y-1">{items}</ul> }
}
