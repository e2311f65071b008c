//! A part of a page that waits for server data: "Loading…" while it loads, the error box if
//! loading failed, the content once it is there.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use leptos::prelude::*;

use super::alert::ErrorBox;
use crate::model::AppError;

/// `<Transition>` + `Suspend` over what `load` returns (usually a `Resource`: `load=move ||
/// data`; an `async` block when a section needs two). The server renders the content (the
/// routes are `SsrMode::Async`) and the browser hydrates the same markup from the serialized
/// resources; after a change the previous content stays on screen until the new one is in.
///
/// `spacing` is the margin above the loading line and the error box (e.g. `"mt-4"`); the
/// content brings its own.
#[component]
pub fn AsyncSection<L, Fut, T, C, V>(
    load: L,
    /// The content, from the loaded value (`let:value` in `view!`).
    children: C,
    #[prop(default = "Loading…")] loading: &'static str,
    #[prop(default = "")] spacing: &'static str,
) -> impl IntoView
where
    L: Fn() -> Fut + Send + Sync + 'static,
    Fut: IntoFuture<Output = Result<T, AppError>> + 'static,
    Fut::IntoFuture: Send + 'static,
    T: 'static,
    C: Fn(T) -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let (load, children) = (Arc::new(load), Arc::new(children));
    // Only this closure is generic; the `Transition` and `Suspend` around it are one type
    // for every section in the app, so their (large) code is in the wasm once.
    let render: Render = Arc::new(move || {
        let (load, children) = (load.clone(), children.clone());
        Box::pin(async move {
            match load().await {
                Ok(value) => children(value).into_any(),
                Err(error) => view! { <Failed error spacing /> }.into_any(),
            }
        })
    });
    section(render, loading, spacing)
}

/// What a section shows once its data is in, type-erased.
type Render = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = AnyView> + Send>> + Send + Sync>;

fn section(render: Render, loading: &'static str, spacing: &'static str) -> AnyView {
    let fallback_class = if spacing.is_empty() {
        "text-slate-500".to_string()
    } else {
        format!("{spacing} text-slate-500")
    };
    view! {
        <Transition fallback=move || view! { <p class=fallback_class.clone()>{loading}</p> }>
            {
                let render = render.clone();
                move || Suspend::new(render())
            }
        </Transition>
    }
    .into_any()
}

/// The error box, with the section's margin above it when it has one.
#[component]
fn Failed(error: AppError, spacing: &'static str) -> impl IntoView {
    if spacing.is_empty() {
        view! { <ErrorBox error /> }.into_any()
    } else {
        view! {
            <div class=spacing>
                <ErrorBox error />
            </div>
        }
        .into_any()
    }
}
