//! The Outbox page's receiver section: where side effects go, the secrets that sign them,
//! a test message.

use leptos::prelude::*;

use super::Actions;
use crate::model::outbox::{ReceiverView, SecretView};
use crate::ui::components::form::{field_error, invalid_attrs, FieldError};
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::PostForm;
use crate::ui::components::receiver::ReceiverStatus;

/// What saving the receiver or adding a secret answers: the new secret, once.
pub(super) fn shown_once(secret: &Option<String>) -> String {
    match secret {
        Some(s) => {
            format!("Saved. New signing secret (shown once; give it to the receiver now): {s}")
        }
        None => "Saved.".into(),
    }
}

#[component]
pub(super) fn Receiver(receiver: ReceiverView, actions: Actions) -> impl IntoView {
    let version = receiver.version.to_string();
    // Nothing to test before there is a receiver.
    let has_receiver = receiver.source != "none";
    let (version_add, version_list) = (version.clone(), version.clone());
    let secrets = receiver.secrets.clone();
    let url_error = Signal::derive(move || actions.save.value().with(|v| field_error(v, "url")));
    let (invalid, described) = invalid_attrs(url_error, "receiver-url-error".into());
    view! {
        <section aria-label="Receiver" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <h2 class="text-lg font-semibold">"Receiver"</h2>
            <ReceiverStatus receiver=receiver.clone() />
            // Open while it shows a refusal (also after a post without JavaScript).
            <details class="mt-3" open=move || actions.save.value().with(|v| matches!(v, Some(Err(_))))>
                <summary class="cursor-pointer text-sm font-medium text-sky-800">"Change the receiver (admins)…"</summary>
                <PostForm action=actions.save attr:class="mt-3 flex flex-wrap items-end gap-3">
                    <input type="hidden" name="version" value=version />
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
                    <label class="flex items-center gap-1 text-sm">
                        <input type="checkbox" name="enabled" value="on" checked=receiver.enabled || receiver.source == "none" />
                        "Deliver"
                    </label>
                    <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-sm text-white">"Save receiver"</button>
                </PostForm>
                <h3 class="mt-4 text-sm font-semibold">"Signing secrets"</h3>
                <p class="text-xs text-slate-500">"Every secret signs each message; add the new one, give it to the receiver, then retire the old one."</p>
                <SecretList secrets version=version_list actions />
                <div class="mt-3 flex gap-3">
                    <PostForm action=actions.add>
                        <input type="hidden" name="version" value=version_add />
                        <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Add a secret"</button>
                    </PostForm>
                    <PostForm action=actions.test attr:hidden=!has_receiver>
                        <button type="submit" class="rounded border border-slate-300 px-3 py-1 text-sm">"Send a test event"</button>
                    </PostForm>
                </div>
            </details>
        </section>
    }
}

/// The signing secrets, each with its Retire button.
#[component]
fn SecretList(secrets: Vec<SecretView>, version: String, actions: Actions) -> impl IntoView {
    let items = secrets
        .iter()
        .map(|s| {
            let (id, v) = (s.id.clone(), version.clone());
            view! {
                <li class="flex items-center gap-3 text-sm">
                    <span class="font-mono">{s.id.clone()}</span>
                    <span class="text-slate-500">"made " <Moment iso=s.created_at.clone() /> {format!(" by {}", s.created_by)}</span>
                    <PostForm action=actions.retire attr:class="inline">
                        <input type="hidden" name="id" value=id />
                        <input type="hidden" name="version" value=v />
                        <button type="submit" class="text-xs text-red-700 underline">"Retire"</button>
                    </PostForm>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="mt-1 space-y-1">{items}</ul> }
}
