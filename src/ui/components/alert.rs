use leptos::prelude::*;

use crate::model::AppError;

/// A failure, in red; "not allowed" says so plainly, with the way back.
#[component]
pub fn ErrorBox(error: AppError) -> impl IntoView {
    if matches!(error, AppError::Forbidden) {
        return view! {
            <div role="alert" class="rounded-lg border border-amber-300 bg-amber-50 p-6 text-sm text-amber-900" data-testid="not-allowed">
                <h2 class="text-lg font-semibold">"Not allowed"</h2>
                // Said once (the error's own text said it already): what to do instead.
                <p class="mt-1">{error.to_string()}" Ask an admin if you need it."</p>
                <p class="mt-3"><a class="text-sky-800 underline" href="/">"Back to the overview"</a></p>
            </div>
        }
        .into_any();
    }
    view! {
        <div role="alert" class="rounded-md border border-red-300 bg-red-50 px-4 py-3 text-sm text-red-800">
            {error.to_string()}
        </div>
    }
    .into_any()
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
