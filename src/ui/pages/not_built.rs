use leptos::prelude::*;
use leptos_meta::Title;

/// A page the product will have, saying plainly that it is not built yet.
#[component]
pub fn NotBuiltPage(page: &'static str) -> impl IntoView {
    let (title, what) = match page {
        "conversations" => (
            "Conversations",
            "search and read multi-channel conversations",
        ),
        "audit" => (
            "Audit",
            "browse every recorded action by conversation, type and time",
        ),
        "inbox" => (
            "Inbox",
            "publish inbox messages and watch feeds and read counts",
        ),
        "idempotency" => (
            "Idempotency",
            "watch cache-hit, stale-takeover and failure rates per scope",
        ),
        _ => (
            "Measurements",
            "follow measurement ingestion, conflicts and ordering",
        ),
    };
    view! {
        <Title text=title />
        <h1 class="text-2xl font-semibold">{title}</h1>
        <div class="mt-4 rounded-md border border-dashed border-slate-300 bg-white p-6 text-slate-600">
            <p>
                <strong>"Not built yet."</strong>
                " This page will let you "
                {what}
                "."
            </p>
        </div>
    }
}
