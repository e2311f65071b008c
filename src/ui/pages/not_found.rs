//! "Page not found", inside the console's frame (sidebar, top bar), with the way back.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_location;

use crate::ui::layout::Frame;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(res) = use_context::<leptos_axum::ResponseOptions>() {
            res.set_status(axum::http::StatusCode::NOT_FOUND);
        }
    }
    let path = use_location().pathname.get_untracked();
    view! {
        <Title text="Not found" />
        <Frame>
            <div class="mx-auto max-w-xl rounded-lg border border-slate-200 bg-white p-8" data-testid="not-found">
                <p class="text-sm font-semibold text-slate-500">"404"</p>
                <h1 class="mt-1 text-2xl font-semibold">"Page not found"</h1>
                <p class="mt-2 text-slate-600">
                    "There is no page at "<span class="font-mono break-all">{path}</span>"."
                </p>
                <p class="mt-4">
                    <a class="text-sky-800 underline" href="/">"Back to the overview"</a>
                </p>
            </div>
        </Frame>
    }
}
