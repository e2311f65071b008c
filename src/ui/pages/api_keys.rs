//! API keys (`/api-keys`, admins only): every key of the machine clients that has not
//! expired (name, scopes, who made it and when, its last use to the hour, its state),
//! revoking one (a reason and a confirmation, in red), and creating one with the key shown
//! once. Each change is audited.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::api_keys::{load_api_keys, CreateApiKey, RevokeApiKey};
use crate::model::api_keys::{ApiKeySummary, ApiKeysView};
use crate::model::users::OneTime;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::{field_error, invalid_attrs, FieldError, FormKey, SecretSubmit};
use crate::ui::components::moment::Moment;
use crate::ui::components::one_time::OneTimeResult;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

#[component]
pub fn ApiKeysPage() -> impl IntoView {
    let create = FormAction::new::<CreateApiKey>();
    let revoke = FormAction::new::<RevokeApiKey>();
    let data = page_data(
        move || (create.version().get(), revoke.version().get()),
        |_| load_api_keys(),
    );
    view! {
        <Title text="API keys" />
        <h1 class="text-2xl font-semibold">"API keys"</h1>
        <p class="mt-1 text-sm text-slate-600">"The keys machine clients call the console with, each with its scopes. Every change is in the audit. People sign in as "<a class="text-sky-800 underline" href="/users">"users"</a>"."</p>
        <div class="mt-4 space-y-2">
            <ActionResult value=move || revoke.value().get() success=|m: &String| m.clone() />
            <OneTimeResult value=Signal::derive(move || create.value().get()) what="API key" />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:view>
            {
                let ApiKeysView { keys, scopes, form_key } = view;
                view! { <ApiKeys keys scopes form_key create revoke /> }
            }
        </AsyncSection>
    }
}

#[component]
fn ApiKeys(
    keys: Vec<ApiKeySummary>,
    scopes: Vec<String>,
    form_key: String,
    create: FormAction<OneTime>,
    revoke: FormAction<String>,
) -> impl IntoView {
    let table = if keys.is_empty() {
        view! { <p class="mt-2 text-sm text-slate-500">"No API keys yet."</p> }.into_any()
    } else {
        // Keyed by the key and its state: an open revoke form stays with its key when
        // the list changes around it, and closes when its own key changed.
        let form_key = form_key.clone();
        view! {
            <DataTable
                label="API keys"
                columns=&["Name", "Scopes", "Created", "Last used", "Expires", "State"]
                padded=true
                spacing="mt-2"
            >
                <For
                    each=move || keys.clone()
                    key=|k| (k.key_hash.clone(), k.revoked_at.is_some())
                    children=move |k| view! { <KeyRow k revoke form_key=form_key.clone() /> }
                />
            </DataTable>
        }
        .into_any()
    };
    view! {
        <h2 id="api-keys" class="mt-10 text-lg font-semibold">"API keys"</h2>
        <p class="mt-1 text-sm text-slate-600">"A key is shown once; the console keeps only its hash."</p>
        {table}
        <CreateKeyForm scopes create form_key />
    }
}

/// One key, and (while it works) its revoke form.
#[component]
fn KeyRow(k: ApiKeySummary, revoke: FormAction<String>, form_key: String) -> impl IntoView {
    let revoked = k.revoked_at.is_some();
    let last_used = match k.last_used_at.clone() {
        Some(at) => view! { <Moment iso=at /> }.into_any(),
        None => view! { <span class="text-slate-500">"never"</span> }.into_any(),
    };
    let state = match (&k.revoked_at, &k.revoked_by) {
        (Some(at), by) => view! {
            <span class="rounded-full bg-red-100 px-2 py-0.5 text-xs font-semibold text-red-800">"revoked"</span>
            <span class="block text-xs">{format!("by {} ", by.clone().unwrap_or_default())}<Moment iso=at.clone() /></span>
        }
        .into_any(),
        (None, _) => view! {
            <span class="rounded-full bg-emerald-100 px-2 py-0.5 text-xs font-semibold text-emerald-800">"active"</span>
            <RevokeForm key_hash=k.key_hash.clone() name=k.name.clone() revoke form_key />
        }
        .into_any(),
    };
    let row_class = if revoked {
        "border-t border-slate-100 align-top bg-slate-50 text-slate-500"
    } else {
        "border-t border-slate-100 align-top"
    };
    view! {
        <tr class=row_class data-testid=format!("key-{}", k.name)>
            <td class="py-3 pr-4 font-medium" class:line-through=revoked>{k.name.clone()}</td>
            <td class="py-3 pr-4 font-mono text-xs">{k.scopes.join(", ")}</td>
            <td class="py-3 pr-4 text-xs">
                <Moment iso=k.created_at.clone() />
                <span class="block">{format!("by {}", k.created_by)}</span>
            </td>
            <td class="py-3 pr-4 text-xs" data-testid="last-used">{last_used}</td>
            <td class="py-3 pr-4 text-xs"><Moment iso=k.expires_at.clone() /></td>
            <td class="py-3 pr-4">{state}</td>
        </tr>
    }
}

/// Revoking is destructive (every client with the key stops working), so it is folded,
/// needs a reason and a ticked confirmation, and its button is red.
#[component]
fn RevokeForm(
    key_hash: String,
    name: String,
    revoke: FormAction<String>,
    form_key: String,
) -> impl IntoView {
    let reason_label = format!("Reason to revoke {name}");
    let confirm_id = format!("confirm-revoke-{name}");
    view! {
        <details class="mt-2 text-sm">
            <summary class="cursor-pointer text-red-800">"Revoke…"</summary>
            <PostForm action=revoke attr:class="mt-2 space-y-2">
                <FormKey value=form_key />
                <input type="hidden" name="key_hash" value=key_hash />
                <input name="reason" aria-label=reason_label placeholder="Reason" required class="block rounded border border-slate-300 px-2 py-1" />
                <div class="flex items-start gap-2">
                    <input id=confirm_id.clone() type="checkbox" required class="mt-1" />
                    <label for=confirm_id>{format!("Clients using {name} stop working now")}</label>
                </div>
                <button type="submit" class="rounded bg-red-700 px-3 py-1 text-white hover:bg-red-800">"Revoke key"</button>
            </PostForm>
        </details>
    }
}

/// A new key: its name, the scopes it carries (none ticked: say which), and how long it
/// lives.
#[component]
fn CreateKeyForm(
    scopes: Vec<String>,
    create: FormAction<OneTime>,
    form_key: String,
) -> impl IntoView {
    let boxes = scopes
        .into_iter()
        .map(|s| {
            view! {
                <label class="flex items-center gap-1 font-mono text-xs">
                    <input type="checkbox" name=format!("scopes[{s}]") value="on" />
                    {s.clone()}
                </label>
            }
        })
        .collect_view();
    let name_error = Signal::derive(move || create.value().with(|v| field_error(v, "name")));
    let scopes_error = Signal::derive(move || create.value().with(|v| field_error(v, "scopes")));
    let (invalid, described) = invalid_attrs(name_error, "new-key-name-error".into());
    view! {
        <details class="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-sm">
            <summary class="cursor-pointer font-medium text-sky-800">"Create an API key…"</summary>
            <PostForm action=create attr:class="mt-3 space-y-3">
                <FormKey value=form_key />
                <div>
                    <label for="new-key-name" class="block">"Name (the client it is for)"</label>
                    <input id="new-key-name" name="name" aria-invalid=invalid aria-describedby=described placeholder="e.g. helpdesk-webhook" class="mt-1 block rounded border border-slate-300 px-2 py-1 aria-invalid:border-red-500" />
                    <FieldError id="new-key-name-error" message=name_error />
                </div>
                <fieldset aria-describedby="new-key-scopes-error">
                    <legend>"Scopes (what it may do)"</legend>
                    <div class="mt-1 grid grid-cols-1 gap-1 sm:grid-cols-2 md:grid-cols-3">{boxes}</div>
                    <FieldError id="new-key-scopes-error" message=scopes_error />
                </fieldset>
                <div>
                    <label for="new-key-days" class="block">"Lifetime in days"</label>
                    <input id="new-key-days" name="days" inputmode="numeric" placeholder="365" class="mt-1 block w-24 rounded border border-slate-300 px-2 py-1" />
                </div>
                <SecretSubmit label="Create key" />
            </PostForm>
        </details>
    }
}
