//! Paging links for lists read a page at a time with DynamoDB cursors: plain links, so
//! paging works before hydration and without JavaScript.

use leptos::prelude::*;

use super::links::enc;

/// `base` with one more query parameter (`?` or `&` as `base` needs).
fn with_param(base: &str, param: &str, value: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{param}={}", enc(value))
}

/// The links under a cursor-paged list. `base` is the list's URL without a cursor; `next` is
/// the cursor of the following (older) page, added as `next_param`; `prev`, for lists paged
/// both ways, is added as `prev_param`. `first`, when given, labels a link to `base` itself
/// (the newest page), shown always. Nothing is rendered when there is no link.
#[component]
pub fn Pager(
    #[prop(into)] base: String,
    next: Option<String>,
    #[prop(default = "cursor")] next_param: &'static str,
    #[prop(default = "Older")] next_label: &'static str,
    #[prop(default = None)] prev: Option<String>,
    #[prop(default = "before")] prev_param: &'static str,
    #[prop(default = "← Previous page")] prev_label: &'static str,
    #[prop(default = None)] first: Option<&'static str>,
    /// The navigation's name (a page with two pagers names each).
    #[prop(default = "Pages")]
    label: &'static str,
) -> impl IntoView {
    if first.is_none() && prev.is_none() && next.is_none() {
        return ().into_any();
    }
    let link = |href: String, rel: Option<&'static str>, text: &'static str| {
        view! { <a class="text-sky-800 underline" rel=rel href=href>{text}</a> }
    };
    let first = first.map(|text| link(base.clone(), None, text));
    let prev = prev.map(|c| link(with_param(&base, prev_param, &c), Some("prev"), prev_label));
    let next = next.map(|c| link(with_param(&base, next_param, &c), Some("next"), next_label));
    view! {
        <nav class="mt-2 flex gap-6 text-sm" aria-label=label>
            {first}
            {prev}
            {next}
        </nav>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::with_param;

    #[test]
    fn adds_the_cursor_with_the_separator_the_url_needs() {
        assert_eq!(
            with_param("/kill-switches", "before", "7b22"),
            "/kill-switches?before=7b22"
        );
        assert_eq!(
            with_param("/events?conversation=a%20b", "cursor", "7b22"),
            "/events?conversation=a%20b&cursor=7b22"
        );
        assert_eq!(
            with_param("/audit?x=", "cursor", "a+b"),
            "/audit?x=&cursor=a%2Bb"
        );
    }
}
