use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(res) = use_context::<leptos_axum::ResponseOptions>() {
            res.set_status(axum::http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <Title text="Not found" />
        <main class="mx-auto max-w-xl px-6 py-16">
            <h1 class="text-2xl font-semibold">"Page not found"</h1>
            <p class="mt-2 text-slate-600">
                <a class="text-sky-700 underline" href="/">
                    "Back to the overview"
                </a>
            </p>
        </main>
    }
}
