//! ops-console: a Leptos console (server-rendered, hydrated) over DynamoDB that keeps a
//! support-automation middleware exactly-once and under control.

pub mod api;
pub mod app;
pub mod model;
pub mod ui;

// The server's code may map Unicode case; the browser's may not (clippy.toml).
#[cfg(feature = "ssr")]
#[allow(clippy::disallowed_methods)]
pub mod server;

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Pages are lazy routes: hydration waits for the page's own wasm to arrive (as
    // `leptos::mount::hydrate_lazy`, which sets up the executor, and then marks the page).
    wasm_bindgen_futures::spawn_local(async {
        let body = leptos::prelude::document()
            .body()
            .expect("the page has a body");
        let owner = leptos::mount::hydrate_from_async(body.clone(), app::App).await;
        owner.forget();
        // The page is interactive now, its own code included: tests wait for this mark,
        // and the page-weight run times it.
        let _ = body.set_attribute("data-hydrated", "true");
    });
}
