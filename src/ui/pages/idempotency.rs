//! Idempotency: the engine's health per scope (rates, alerts, hourly chart), the keys that
//! need watching, and a key's detail with the admin's "expire now".

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::idempotency::{
    api_client_names, find_idempotency_by_correlation, find_idempotency_key, list_idempotency_keys,
    load_idempotency_health, load_idempotency_key, ExpireIdempotencyKey,
};
use crate::api::shell::load_shell_info;
use crate::model::idempotency::{operation, KeyPage, KeySummary, ScopeHealth};
use crate::model::users::Role;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::links::enc;
use crate::ui::components::moment::{time_or_text, Moment};
use crate::ui::components::pager::Pager;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::scope_card::ScopeCard;
use crate::ui::components::scope_table::ScopeTable;
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

#[component]
pub fn IdempotencyPage() -> impl IntoView {
    let query = use_query_map();
    let window = move || query.read().get("window").unwrap_or_else(|| "24h".into());
    let health = page_data(window, load_idempotency_health);
    let stuck = page_data(
        move || query.read().get("stuck"),
        |cursor| list_idempotency_keys("stuck".into(), cursor),
    );
    let failed = page_data(
        move || query.read().get("failed"),
        |cursor| list_idempotency_keys("failed".into(), cursor),
    );
    view! {
        <Title text="Idempotency" />
        <h1 class="text-2xl font-semibold">"Idempotency"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "How the exactly-once engine is doing, per scope."
        </p>
        <KeyLookup />
        <CorrelationLookup />
        <WindowTabs />
        <AsyncSection load=move || health spacing="mt-4" let:h>
            <ScopeCards scopes=h.scopes />
        </AsyncSection>
        <h2 class="mt-10 text-lg font-semibold">"Stuck keys"</h2>
        <p class="text-sm text-slate-600">"Older than their stale threshold: the next request takes them over."</p>
        <AsyncSection load=move || stuck let:page>
            <KeyTable page label="Stuck keys" param="stuck" />
        </AsyncSection>
        <h2 class="mt-10 text-lg font-semibold">"Failed keys"</h2>
        <p class="text-sm text-slate-600">"The operation failed; the next request with the key retries it."</p>
        <AsyncSection load=move || failed let:page>
            <KeyTable page label="Failed keys" param="failed" />
        </AsyncSection>
    }
}

/// Looks a machine client's request up by the `Idempotency-Key` it sent: the raw key is
/// hashed on the server with the client's API key and each route, never stored.
#[component]
fn KeyLookup() -> impl IntoView {
    let query = use_query_map();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let clients = page_data(|| (), |_| api_client_names());
    let found = page_data(
        move || (get("raw"), get("client")),
        |(raw, client)| find_idempotency_key(raw, client),
    );
    let input = "mt-1 block w-full rounded border border-slate-300 px-2 py-1 text-sm";
    view! {
        <section class="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-sm" aria-labelledby="lookup-title">
            <h2 id="lookup-title" class="font-semibold">"Look up a request by its Idempotency-Key"</h2>
            <form method="get" action="/idempotency" class="mt-2 flex flex-wrap items-end gap-2" role="search">
                <div class="min-w-0 flex-1 basis-64">
                    <label for="lookup-raw">"Idempotency-Key, as the client sent it"</label>
                    <input id="lookup-raw" name="raw" value=move || get("raw") class=input placeholder="e.g. 7f3c9a0e-…" />
                </div>
                <div>
                    <label for="lookup-client">"Client (API key)"</label>
                    <AsyncSection load=move || clients let:names>
                        <select id="lookup-client" name="client" class=input required>
                            // No client is assumed: the person picks the one that sent the key.
                            <option value="" selected=get("client").is_empty()>"Choose the client…"</option>
                            {names.into_iter().map(|n| {
                                let selected = n == get("client");
                                view! { <option value=n.clone() selected=selected>{n.clone()}</option> }
                            }).collect_view()}
                        </select>
                    </AsyncSection>
                </div>
                <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Look up"</button>
            </form>
            <AsyncSection load=move || found spacing="mt-2" let:keys>
                <FoundKeys
                    keys
                    asked=!get("raw").trim().is_empty()
                    label="Keys found"
                    none="No request with this key in the last day."
                    none_id="lookup-none"
                />
            </AsyncSection>
        </section>
    }
}

/// Looks requests up by the `X-Correlation-Id` their client logged (REST requests that
/// carried one keep it with their key).
#[component]
fn CorrelationLookup() -> impl IntoView {
    let query = use_query_map();
    let asked = move || query.read().get("correlation").unwrap_or_default();
    let found = page_data(asked, find_idempotency_by_correlation);
    view! {
        <section class="mt-3 rounded-lg border border-slate-200 bg-white p-4 text-sm" aria-labelledby="correlation-title">
            <h2 id="correlation-title" class="font-semibold">"…or by its correlation id"</h2>
            <form method="get" action="/idempotency" class="mt-2 flex flex-wrap items-end gap-2" role="search">
                <div class="min-w-0 flex-1 basis-64">
                    <label for="lookup-correlation">"X-Correlation-Id, as the client logged it"</label>
                    <input id="lookup-correlation" name="correlation" value=asked class="mt-1 block w-full rounded border border-slate-300 px-2 py-1 text-sm" />
                </div>
                <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Find"</button>
            </form>
            <AsyncSection load=move || found spacing="mt-2" let:keys>
                <FoundKeys
                    keys
                    asked=!asked().trim().is_empty()
                    label="Keys with this correlation id"
                    none="No key was stored with this correlation id."
                    none_id="correlation-none"
                />
            </AsyncSection>
        </section>
    }
}

/// What a lookup found: its keys, or `none` when something was asked and nothing matched.
#[component]
fn FoundKeys(
    keys: Vec<KeySummary>,
    asked: bool,
    label: &'static str,
    none: &'static str,
    none_id: &'static str,
) -> impl IntoView {
    if !keys.is_empty() {
        view! { <KeyTable page=KeyPage { keys, next_cursor: None } label param="lookup" /> }
            .into_any()
    } else if asked {
        view! { <p class="mt-2 text-slate-600" data-testid=none_id>{none}</p> }.into_any()
    } else {
        ().into_any()
    }
}

/// The window the health is measured over, as tabs (links, so they work without JavaScript).
#[component]
fn WindowTabs() -> impl IntoView {
    let query = use_query_map();
    let window = move || query.read().get("window").unwrap_or_else(|| "24h".into());
    let tab = move |w: &'static str, label: &'static str| {
        view! {
            <a
                href=format!("/idempotency?window={w}")
                aria-current=move || (window() == w).then_some("page")
                class=move || {
                    if window() == w {
                        "rounded bg-slate-900 px-3 py-1 text-sm text-white"
                    } else {
                        "rounded px-3 py-1 text-sm text-sky-800 hover:bg-slate-100"
                    }
                }
            >
                {label}
            </a>
        }
    };
    view! { <nav class="mt-4 flex gap-2" aria-label="Window">{tab("24h", "Last 24 hours")} {tab("7d", "Last 7 days")}</nav> }
}

/// Each scope's health, or that the window saw no idempotent request.
#[component]
fn ScopeCards(scopes: Vec<ScopeHealth>) -> impl IntoView {
    if scopes.is_empty() {
        return view! { <p class="mt-6 text-slate-600">"No idempotent requests in this window yet."</p> }
            .into_any();
    }
    let cards = scopes
        .clone()
        .into_iter()
        .map(|s| view! { <ScopeCard s /> })
        .collect_view();
    view! {
        <ScopeTable scopes />
        {cards}
    }
    .into_any()
}

/// Keys to watch (stuck or failed), a page at a time; `param` carries this list's cursor.
#[component]
fn KeyTable(page: KeyPage, label: &'static str, param: &'static str) -> impl IntoView {
    if page.keys.is_empty() {
        return view! { <p class="mt-2 text-sm text-slate-500">"None."</p> }.into_any();
    }
    let rows = page
        .keys
        .into_iter()
        .map(|k| {
            let href = format!("/idempotency/key?id={}", enc(&k.id));
            view! {
                <tr class="border-t border-slate-100">
                    <td class="py-1 font-mono text-xs"><a class="text-sky-800 underline" href=href>{k.key_hash[..12.min(k.key_hash.len())].to_string()}"…"</a></td>
                    <td class="py-1 text-xs">{operation(&k.scope).0}<span class="block font-mono text-slate-500">{k.scope}</span></td>
                    <td class="py-1">{k.tenant}</td>
                    <td class="py-1">{k.attempts}</td>
                    <td class="py-1"><Moment iso=k.started_at /></td>
                    <td class="py-1">{k.stop_reason.unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable label columns=&["Key", "Scope", "Tenant", "Attempts", "Started", "Stop reason"]>
            {rows}
        </DataTable>
        <Pager
            base="/idempotency"
            next=page.next_cursor
            next_param=param
            next_label="More"
            label=if param == "stuck" { "Pages of stuck keys" } else { "Pages of failed keys" }
        />
    }
    .into_any()
}

#[component]
pub fn IdempotencyKeyPage() -> impl IntoView {
    let query = use_query_map();
    let expire = FormAction::new::<ExpireIdempotencyKey>();
    let key = page_data(
        move || {
            (
                query.read().get("id").unwrap_or_default(),
                expire.version().get(),
            )
        },
        |(id, _)| load_idempotency_key(id),
    );
    let shell = page_data(|| (), |_| load_shell_info());
    view! {
        <Title text="Idempotency key" />
        <a href="/idempotency" class="text-sm text-sky-800 underline">"← Idempotency"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Idempotency key"</h1>
        <div class="mt-4"><ActionResult value=move || expire.value().get() success=|m: &String| m.clone() /></div>
        // The expire form is for admins only: the key and the signed-in user's role, together.
        <AsyncSection load=move || async move {
            let is_admin = shell.await.ok().and_then(|s| s.user).is_some_and(|u| u.role.allows(Role::Admin));
            key.await.map(|k| (k, is_admin))
        } spacing="mt-4" let:loaded>
            <KeyDetail k=loaded.0 is_admin=loaded.1 expire />
        </AsyncSection>
    }
}

/// A key's stored state, one `(label, value)` per line of its page.
fn key_facts(k: &KeySummary) -> [(&'static str, String); 13] {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    let status = if k.expired {
        format!("{} (expired)", k.status)
    } else {
        k.status.clone()
    };
    [
        ("Tenant", k.tenant.clone()),
        (
            "Operation",
            format!(
                "{} (from the {})",
                operation(&k.scope).0,
                operation(&k.scope).1
            ),
        ),
        ("Scope", k.scope.clone()),
        ("Key hash", k.key_hash.clone()),
        ("Status", status),
        ("Attempts", k.attempts.to_string()),
        ("Created", k.created_at.clone()),
        ("Started", k.started_at.clone()),
        ("Completed", or_dash(k.completed_at.clone())),
        ("Updated", k.updated_at.clone()),
        ("Expires", k.expires_at.clone()),
        ("Stop reason", or_dash(k.stop_reason.clone())),
        (
            "Stored HTTP status",
            or_dash(k.response_status.map(|s| s.to_string())),
        ),
    ]
}

/// A key's stored state and answer; for admins, "expire now" with a reason.
#[component]
fn KeyDetail(k: KeySummary, is_admin: bool, expire: FormAction<String>) -> impl IntoView {
    let rows = key_facts(&k);
    // Where the key leads: the API key that sent it (the list of keys is for admins), the
    // page of what it changed.
    let link = |title: &'static str, label: String, href: Option<String>| {
        let target = match href {
            Some(href) => {
                view! { <a class="text-sky-800 underline" href=href>{label}</a> }.into_any()
            }
            None => label.into_any(),
        };
        view! {
            <dt class="text-slate-600">{title}</dt>
            <dd class="col-span-2">{target}</dd>
        }
    };
    let keys_page = is_admin.then(|| "/users#api-keys".to_string());
    let api_key = k
        .api_key
        .clone()
        .map(|name| link("API key", name, keys_page));
    let resource = k
        .resource
        .clone()
        .map(|r| link("What it changed", r.label, Some(r.href)));
    let form = (is_admin && !k.expired).then(|| {
        view! {
            <PostForm action=expire attr:class="mt-6 max-w-xl space-y-2 rounded border border-amber-200 bg-amber-50 p-4">
                <input type="hidden" name="id" value=k.id.clone() />
                <label for="expire-reason" class="block text-sm font-medium">"Reason for expiring this key"</label>
                <textarea id="expire-reason" name="reason" rows="2" maxlength="500" class="w-full rounded border border-slate-300 px-2 py-1 text-sm"></textarea>
                <button type="submit" class="rounded bg-slate-900 px-4 py-2 text-sm font-medium text-white">"Expire now"</button>
                <p class="text-xs text-amber-900">"The next request with this key runs its operation again."</p>
            </PostForm>
        }
    });
    view! {
        <dl class="mt-4 grid max-w-3xl grid-cols-3 gap-y-1 text-sm">
            {rows.into_iter().map(|(l, v)| view! {
                <dt class="text-slate-600">{l}</dt>
                <dd class="col-span-2 break-all font-mono">{time_or_text(v)}</dd>
            }).collect_view()}
            {api_key}
            {resource}
        </dl>
        <h2 class="mt-6 font-semibold">"Stored response (sanitized)"</h2>
        <pre class="mt-2 max-w-3xl overflow-x-auto rounded bg-slate-100 p-3 text-xs">{k.response_json.clone().unwrap_or_else(|| "–".into())}</pre>
        {form}
    }
}
