//! The Inbox page's forms: a tenant's settings, an inbox's settings (as stored, so saving
//! another change keeps them) and the message being written. Each shows a refused value's
//! error next to its field.

use leptos::prelude::*;

use super::BUTTON;
use crate::model::inbox::{InboxSummary, PublishForm};
use crate::ui::components::form::{
    field_error, field_error_where, invalid_attrs, FieldError, FormKey, TextField,
};
use crate::ui::components::post_form::{FormAction, PostForm};

/// A new tenant, or the chosen one's settings.
#[component]
pub(super) fn TenantForm(
    tenant: String,
    title: String,
    ttl: String,
    save_tenant: FormAction<String>,
) -> impl IntoView {
    let error = move |field: &'static str| {
        Signal::derive(move || save_tenant.value().with(|v| field_error(v, field)))
    };
    // Open while it shows a refusal (also after a post without JavaScript); closed once saved.
    let refused = move || save_tenant.value().with(|v| matches!(v, Some(Err(_))));
    view! {
        <details class="mt-3 rounded border border-slate-200 bg-slate-50 p-3 text-sm" open=refused>
            <summary class="cursor-pointer font-medium text-sky-800">"New tenant or edit settings…"</summary>
            <PostForm action=save_tenant attr:class="mt-2 grid grid-cols-1 gap-2 sm:grid-cols-3">
                <TextField label="Tenant key" name="tenant" id="tenant-key" value=tenant error=error("tenant") />
                <TextField label="Title" name="title" id="tenant-title" value=title error=error("title") />
                <TextField label="Message lifetime" name="ttl" id="tenant-ttl" value=ttl error=error("ttl") />
                <div><button type="submit" class=BUTTON>"Save tenant"</button></div>
            </PostForm>
        </details>
    }
}

/// A new inbox, or the chosen one's settings as stored, so saving another change keeps them.
#[component]
pub(super) fn InboxForm(
    tenant: String,
    current: Option<InboxSummary>,
    save_inbox: FormAction<String>,
) -> impl IntoView {
    let stored = |part: fn(&InboxSummary) -> &String| {
        current.as_ref().map(part).cloned().unwrap_or_default()
    };
    let (key, title, description) = (
        stored(|c| &c.key),
        stored(|c| &c.title),
        stored(|c| &c.description),
    );
    let (default_ttl, type_ttls) = (stored(|c| &c.default_ttl), stored(|c| &c.type_ttls));
    // The two lifetime inputs are read as `ttl.default` and `ttl.<type>`.
    let error = move |matches: fn(&str) -> bool| {
        Signal::derive(move || save_inbox.value().with(|v| field_error_where(v, matches)))
    };
    let refused = move || save_inbox.value().with(|v| matches!(v, Some(Err(_))));
    view! {
        <details class="mt-3 rounded border border-slate-200 bg-slate-50 p-3 text-sm" open=refused>
            <summary class="cursor-pointer font-medium text-sky-800">"New inbox or edit this one…"</summary>
            <PostForm action=save_inbox attr:class="mt-2 grid grid-cols-1 gap-2 sm:grid-cols-2">
                <input type="hidden" name="tenant" value=tenant />
                <TextField label="Inbox key" name="inbox" id="inbox-key" value=key error=error(|f| f == "inbox") />
                <TextField label="Title" name="title" id="inbox-title" value=title error=error(|f| f == "title") />
                <TextField label="Description" name="description" id="inbox-description" value=description class="sm:col-span-2" error=error(|f| f == "description") />
                <TextField label="Default lifetime" name="ttl" id="inbox-ttl" value=default_ttl placeholder="the tenant's" error=error(|f| f == "ttl.default") />
                <TextField
                    label="Lifetimes per type"
                    name="ttl_types"
                    id="inbox-ttl-types"
                    value=type_ttls
                    placeholder="billing=7d, promo=2d"
                    error=error(|f| f == "ttl_types" || (f.starts_with("ttl.") && f != "ttl.default"))
                />
                <div><button type="submit" class=BUTTON>"Save inbox"</button></div>
            </PostForm>
        </details>
    }
}

/// The message being written. Posted (never a GET: a message and its recipients do not
/// belong in a URL) and kept as a draft under the form's key; the page then previews it.
#[component]
pub(super) fn ComposeForm(
    form: PublishForm,
    lifetime: String,
    save_draft: FormAction<()>,
) -> impl IntoView {
    let everyone = form.audience != "users";
    let started = !form.body.is_empty() || !form.title.is_empty();
    let field = |name: &'static str, value: String| {
        view! { <input type="hidden" name=format!("p[{name}]") value=value /> }
    };
    let error = move |matches: fn(&str) -> bool| {
        Signal::derive(move || save_draft.value().with(|v| field_error_where(v, matches)))
    };
    let audience_error = error(|f| f == "audience");
    let (_, audience_described) = invalid_attrs(audience_error, "compose-audience-error".into());
    view! {
        <PostForm action=save_draft attr:class="mt-2 grid grid-cols-2 gap-2 rounded-lg border border-slate-200 bg-white p-4 text-sm" attr:aria-label="Compose">
            {field("tenant", form.tenant.clone())}
            {field("inbox", form.inbox.clone())}
            <FormKey name="p[idempotency_key]" value=form.idempotency_key.clone() />
            <fieldset class="col-span-2 flex flex-wrap gap-4" aria-describedby=audience_described>
                <legend class="sr-only">"Audience"</legend>
                <label><input type="radio" name="p[audience]" value="everyone" checked=everyone />" Everyone"</label>
                <label><input type="radio" name="p[audience]" value="users" checked=!everyone />" These users"</label>
                <FieldError id="compose-audience-error" message=audience_error />
            </fieldset>
            <TextField
                label="User ids (one per line or comma-separated)"
                name="p[uids]"
                id="compose-uids"
                value=form.uids.clone()
                rows=2
                class="col-span-2"
                error=error(|f| f == "uids" || f.starts_with("audience."))
            />
            <TextField label="Category" name="p[category]" id="compose-category" value=form.category.clone() error=error(|f| f == "category") />
            <TextField label=format!("Lifetime (empty: the inbox's, {lifetime})") name="p[ttl]" id="compose-ttl" value=form.ttl.clone() placeholder=lifetime.clone() error=error(|f| f == "ttl") />
            <TextField label="Title" name="p[title]" id="compose-title" value=form.title.clone() class="col-span-2" error=error(|f| f == "title") />
            <TextField label="Message" name="p[body]" id="compose-body" value=form.body.clone() rows=3 class="col-span-2" error=error(|f| f == "body") />
            <TextField
                label="Link (optional, http or https)"
                name="p[cta_uri]"
                id="compose-link"
                value=form.cta_uri.clone()
                class="col-span-2"
                error=error(|f| f == "cta_uri")
            />
            <div><button type="submit" class=BUTTON>{if started { "Update preview" } else { "Preview" }}</button></div>
        </PostForm>
    }
}
