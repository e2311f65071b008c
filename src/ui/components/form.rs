//! Pieces of the console's forms.

use leptos::prelude::*;

use crate::model::AppError;

/// The hidden idempotency key a write form carries. The server renders a fresh key with the
/// form, so a double click, a refresh or a retry of the same form writes once
/// (docs/idempotency.md). `name` is the server function's argument that takes it.
#[component]
pub fn FormKey(
    #[prop(into)] value: String,
    #[prop(default = "idempotency_key")] name: &'static str,
) -> impl IntoView {
    view! { <input type="hidden" name=name value=value /> }
}

/// A select's options with the current one selected in the server's HTML too, so a filter
/// form shows its values without JavaScript.
#[component]
pub fn Options(
    #[prop(into)] current: String,
    choices: &'static [(&'static str, &'static str)],
) -> impl IntoView {
    choices
        .iter()
        .map(|(value, label)| {
            view! {
                <option value=*value selected=current == *value>
                    {*label}
                </option>
            }
        })
        .collect_view()
}

/// The message of the latest submission's refusal when it names `field` (a 400 for that
/// field), for the field itself to show.
pub fn field_error<T>(latest: &Option<Result<T, AppError>>, field: &str) -> Option<String> {
    match latest {
        Some(Err(e)) if e.field() == Some(field) => Some(e.to_string()),
        _ => None,
    }
}

/// A field's error, under the field: `id` is what the field's `aria-describedby` names
/// while there is one (see [`invalid_attrs`]).
#[component]
pub fn FieldError(#[prop(into)] id: String, message: Signal<Option<String>>) -> impl IntoView {
    move || {
        message.get().map(|m| {
            view! { <p id=id.clone() class="mt-1 text-sm font-medium text-red-700" data-testid="field-error">{m}</p> }
        })
    }
}

/// `aria-invalid` and `aria-describedby` for a field while `message` holds its error.
pub fn invalid_attrs(
    message: Signal<Option<String>>,
    error_id: String,
) -> (
    impl Fn() -> Option<&'static str> + Send + Sync + Clone + 'static,
    impl Fn() -> Option<String> + Send + Sync + Clone + 'static,
) {
    (
        move || message.get().map(|_| "true"),
        move || message.get().map(|_| error_id.clone()),
    )
}

/// True once the page's code runs in the browser (never on the server, never without
/// JavaScript): for forms whose answer only the page's code can show, such as a secret
/// shown once (a form posted without JavaScript is answered with a redirect, and a secret
/// must not travel in a URL).
pub fn running_in_browser() -> Signal<bool> {
    let live = RwSignal::new(false);
    Effect::new(move |_| live.set(true));
    live.into()
}

/// A submit button that works only with the page's code running, saying so while it does
/// not (see [`running_in_browser`]).
#[component]
pub fn SecretSubmit(label: &'static str) -> impl IntoView {
    let live = running_in_browser();
    view! {
        <button type="submit" disabled=move || !live.get() class="rounded bg-slate-900 px-3 py-1.5 text-white disabled:bg-slate-400">{label}</button>
        <p class="basis-full text-xs text-amber-800" hidden=move || live.get() data-testid="needs-js">
            "This needs JavaScript: what it makes is shown once, on this page."
        </p>
    }
}
