use leptos::prelude::*;

use crate::model::AppError;

#[component]
pub fn ErrorBox(error: AppError) -> impl IntoView {
    view! {
        <div role="alert" class="rounded-md border border-red-300 bg-red-50 px-4 py-3 text-sm text-red-800">
            {error.to_string()}
        </div>
    }
}

#[component]
pub fn SuccessBox(message: String) -> impl IntoView {
    view! {
        <div role="status" class="rounded-md border border-emerald-300 bg-emerald-50 px-4 py-3 text-sm text-emerald-800">
            {message}
        </div>
    }
}

/// The outcome of the latest submission of a form, if any.
#[component]
pub fn ActionResult<T: Clone + Send + Sync + 'static>(
    value: impl Fn() -> Option<Result<T, AppError>> + Send + Sync + 'static,
    success: fn(&T) -> String,
) -> impl IntoView {
    move || match value() {
        Some(Ok(v)) => view! { <SuccessBox message=success(&v) /> }.into_any(),
        Some(Err(e)) => view! { <ErrorBox error=e /> }.into_any(),
        None => ().into_any(),
    }
}
