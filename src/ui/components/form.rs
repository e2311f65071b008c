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
    field_error_where(latest, |f| f == field)
}

/// The message of the latest submission's refusal when the field it names is one `matches`
/// accepts (one input whose value the server reads as several fields, such as
/// `billing=7d, promo=2d`).
pub fn field_error_where<T>(
    latest: &Option<Result<T, AppError>>,
    matches: impl Fn(&str) -> bool,
) -> Option<String> {
    match latest {
        Some(Err(e)) if e.field().is_some_and(matches) => Some(e.to_string()),
        _ => None,
    }
}

/// A labelled text input (or, `rows` given, a text area) with its error under it while
/// `error` holds one: the field is then marked invalid and described by the message.
#[component]
pub fn TextField(
    #[prop(into)] label: String,
    /// The form's name for the value.
    name: &'static str,
    /// The input's id, unique on the page; the error's id is derived from it.
    id: &'static str,
    #[prop(into, optional)] value: String,
    #[prop(optional, into)] placeholder: Option<String>,
    /// Lines of a text area; a one-line input when absent.
    #[prop(optional)]
    rows: Option<u32>,
    /// The wrapper's classes (its place in the form's grid).
    #[prop(optional)]
    class: &'static str,
    error: Signal<Option<String>>,
) -> impl IntoView {
    const INPUT: &str =
        "mt-1 w-full rounded border border-slate-300 px-2 py-1 text-sm aria-invalid:border-red-500";
    let error_id = format!("{id}-error");
    let (invalid, described) = invalid_attrs(error, error_id.clone());
    let input = match rows {
        Some(rows) => view! {
            <textarea id=id name=name rows=rows placeholder=placeholder aria-invalid=invalid aria-describedby=described class=INPUT>{value}</textarea>
        }
        .into_any(),
        None => view! {
            <input id=id name=name value=value placeholder=placeholder aria-invalid=invalid aria-describedby=described class=INPUT />
        }
        .into_any(),
    };
    view! {
        <div class=class>
            <label for=id class="block">{label}</label>
            {input}
            <FieldError id=error_id message=error />
        </div>
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
pub fn SecretSubmit(#[prop(into)] label: String) -> impl IntoView {
    let live = running_in_browser();
    view! {
        <button type="submit" disabled=move || !live.get() class="rounded bg-slate-900 px-3 py-1.5 text-white disabled:bg-slate-400">{label}</button>
        <p class="basis-full text-xs text-amber-800" hidden=move || live.get() data-testid="needs-js">
            "This needs JavaScript: what it makes is shown once, on this page."
        </p>
    }
}
