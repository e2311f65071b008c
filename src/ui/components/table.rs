//! The console's tables: a named table (tests and screen readers find it by its label), a
//! header row from the column titles, and the rows the page renders.

use leptos::prelude::*;

/// A table named `label`, with one header cell per entry of `columns`. Columns named in
/// `align_right` (numbers) are right-aligned; `padded` gives the header cells the padding of
/// tables whose rows hold forms. The rows are the children: `<tr>`s, or a keyed `<For>`.
#[component]
pub fn DataTable(
    #[prop(into)] label: String,
    columns: &'static [&'static str],
    #[prop(default = &[])] align_right: &'static [&'static str],
    #[prop(default = false)] padded: bool,
    /// The margin above the table.
    #[prop(default = "mt-2")]
    spacing: &'static str,
    children: Children,
) -> impl IntoView {
    let header = columns
        .iter()
        .map(|title| {
            let class = match (padded, align_right.contains(title)) {
                (true, true) => Some("py-2 pr-4 text-right"),
                (true, false) => Some("py-2 pr-4"),
                (false, true) => Some("text-right"),
                (false, false) => None,
            };
            view! { <th class=class>{*title}</th> }
        })
        .collect_view();
    // On a narrow screen a wide table scrolls inside its own box; the page never does.
    view! {
        <div class=format!("{spacing} overflow-x-auto")>
            // Every cell keeps a gap to the next, so neighbouring columns never run together.
            <table class="w-full text-left text-sm [&_td]:pr-4 [&_th]:pr-4" aria-label=label>
                <thead class="text-xs uppercase text-slate-500">
                    <tr>{header}</tr>
                </thead>
                <tbody>{children()}</tbody>
            </table>
        </div>
    }
}
