//! The REST API's reference for client developers, read from its OpenAPI document.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::openapi::load_api_doc;
use crate::model::openapi::{ApiDoc, Field, Operation};
use crate::ui::components::async_section::AsyncSection;
use crate::ui::data::page_data;

#[component]
pub fn OpenApiPage() -> impl IntoView {
    let doc = page_data(|| (), |_| load_api_doc());
    view! {
        <Title text="API" />
        <h1 class="text-2xl font-semibold">"REST API"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "The machine-readable document (OpenAPI 3.1) is at "
            <a class="text-sky-800 underline" href="/api/openapi.json" rel="external">"/api/openapi.json"</a>"."
        </p>
        <AsyncSection load=move || doc spacing="mt-4" let:d>
            <Reference d />
        </AsyncSection>
    }
}

fn fields(list: Vec<Field>) -> impl IntoView {
    view! {
        <ul class="ml-4 list-disc text-xs">
            {list.into_iter().map(|f| view! {
                <li>
                    <span class="font-mono">{f.name}</span>": "<span class="font-mono text-slate-600">{f.ty}</span>
                    {f.required.then_some(" (required)")}
                    {(!f.description.is_empty()).then(|| format!(" — {}", f.description))}
                </li>
            }).collect_view()}
        </ul>
    }
}

#[component]
fn Reference(d: ApiDoc) -> impl IntoView {
    let ops = d
        .operations
        .into_iter()
        .map(|o| view! { <Op o /> })
        .collect_view();
    let schemas = d
        .schemas
        .into_iter()
        .map(|s| view! {
            <div class="min-w-0 rounded border border-slate-200 bg-white p-3 [overflow-wrap:anywhere]" id=format!("schema-{}", s.name)>
                <h3 class="font-mono text-sm font-semibold break-all">{s.name.clone()}</h3>
                {(!s.description.is_empty()).then(|| view! { <p class="text-xs text-slate-600">{s.description}</p> })}
                {fields(s.fields)}
            </div>
        })
        .collect_view();
    view! {
        <p class="mt-3 max-w-3xl text-sm">{d.description}</p>
        <h2 class="mt-6 text-lg font-semibold">"Endpoints"</h2>
        <div class="mt-2 space-y-3">{ops}</div>
        <h2 class="mt-8 text-lg font-semibold">"Bodies"</h2>
        <div class="mt-2 grid gap-3 md:grid-cols-2">{schemas}</div>
    }
}

#[component]
fn Op(o: Operation) -> impl IntoView {
    let scope = match &o.scope {
        None => "no key".to_string(),
        Some(s) if s.is_empty() => "any API key".to_string(),
        Some(s) => format!("scope {s}"),
    };
    view! {
        <section class="min-w-0 rounded-lg border border-slate-200 bg-white p-4 [overflow-wrap:anywhere]" data-testid="operation">
            <div class="flex flex-wrap items-baseline gap-3">
                <span class="rounded bg-slate-900 px-2 py-0.5 font-mono text-xs text-white">{o.method}</span>
                <span class="font-mono text-sm break-all">{o.path}</span>
                <span class="text-xs text-slate-500">{o.tag}" · "{scope}</span>
            </div>
            {(!o.description.is_empty()).then(|| view! { <p class="mt-1 text-sm">{o.description}</p> })}
            {o.body.map(|b| view! { <p class="mt-1 text-xs">"Body: "<a class="font-mono text-sky-800 underline" href=format!("#schema-{b}")>{b.clone()}</a></p> })}
            {(!o.params.is_empty()).then(|| fields(o.params))}
            <p class="mt-1 text-xs text-slate-600">
                {o.responses.into_iter().map(|(code, what)| format!("{code} {what}")).collect::<Vec<_>>().join(" · ")}
            </p>
        </section>
    }
}
