//! ops-console: a Leptos console (server-rendered, hydrated) over DynamoDB that keeps a
//! support-automation middleware exactly-once and under control.

pub mod api;
pub mod app;
pub mod model;
pub mod ui;

#[cfg(feature = "ssr")]
pub mod server;

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
