//! The answer to a form that made a password or a key: the secret, once, to copy now.

use leptos::prelude::*;

use crate::model::users::OneTime;
use crate::model::AppError;
use crate::ui::components::alert::{ErrorBox, SuccessBox};

/// The answer to a form that made a password or a key: the secret, once, to copy now.
#[component]
pub fn OneTimeResult(
    value: Signal<Option<Result<OneTime, AppError>>>,
    what: &'static str,
) -> impl IntoView {
    move || {
        match value.get() {
        Some(Ok(OneTime { message, secret: Some(secret) })) => view! {
            <div role="status" class="rounded-md border border-emerald-300 bg-emerald-50 px-4 py-3 text-sm text-emerald-900">
                <p>{message}</p>
                <p class="mt-2">{format!("The {what}, shown this once (copy it now; only its hash is kept):")}</p>
                <code class="mt-1 block select-all break-all rounded bg-white px-2 py-1 font-mono ring-1 ring-emerald-300" data-testid="one-time-secret">{secret}</code>
            </div>
        }
        .into_any(),
        Some(Ok(OneTime { message, secret: None })) => view! { <SuccessBox message /> }.into_any(),
        Some(Err(error)) => view! { <ErrorBox error /> }.into_any(),
        None => ().into_any(),
    }
    }
}
