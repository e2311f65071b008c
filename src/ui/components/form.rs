//! Pieces of the console's forms.

use leptos::prelude::*;

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
