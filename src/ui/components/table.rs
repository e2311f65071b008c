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
    // On a narrow screen (under 640 px) every row becomes a block, each cell a line headed by
    // its column's title (style/tailwind.css lays it out; the titles come from the rules
    // below, one per column, scoped to this set of columns). Wider, it is a table that
    // scrolls inside its own box if it must; the page never does.
    let key = columns_class(columns);
    view! {
        <div class=format!("{spacing} overflow-x-auto")>
            <style>{narrow_labels(&key, columns)}</style>
            // Every cell keeps a gap to the next, so neighbouring columns never run together.
            <table
                class=format!("data-table {key} w-full text-left text-sm [&_td]:pr-4 [&_th]:pr-4")
                aria-label=label
            >
                <thead class="text-xs uppercase text-slate-500">
                    <tr>{header}</tr>
                </thead>
                <tbody>{children()}</tbody>
            </table>
        </div>
    }
}

/// A class naming this set of columns (tables with the same columns share their rules).
fn columns_class(columns: &[&str]) -> String {
    // FNV-1a over the titles: short, stable, and the same on the server and in the browser.
    let hash = columns
        .iter()
        .flat_map(|c| c.bytes().chain([0]))
        .fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
    format!("dt-{hash:08x}")
}

/// The CSS that heads each cell with its column's title on a narrow screen. The title is
/// hidden from screen readers (`/ ""`: they have the header row), for browsers that read
/// that syntax; a cell of an untitled column (row actions) takes the whole width.
fn narrow_labels(key: &str, columns: &[&str]) -> String {
    let rules: String = columns
        .iter()
        .enumerate()
        .map(|(i, title)| {
            let n = i + 1;
            if title.is_empty() {
                return format!(".{key} td:nth-child({n}){{padding-left:0}}");
            }
            let t = title.replace('\\', "\\\\").replace('"', "\\\"");
            format!(".{key} td:nth-child({n}):before{{content:\"{t}\";content:\"{t}\"/\"\"}}")
        })
        .collect();
    format!("@media (max-width:639px){{{rules}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_titled_column_gets_its_label_on_a_narrow_screen() {
        let columns = ["When", "", "Say \"hi\""];
        let key = columns_class(&columns);
        assert!(key.starts_with("dt-") && key.len() == 11);
        assert_ne!(key, columns_class(&["When", "", "Other"]));
        assert_eq!(
            narrow_labels(&key, &columns),
            format!(
                "@media (max-width:639px){{\
                 .{key} td:nth-child(1):before{{content:\"When\";content:\"When\"/\"\"}}\
                 .{key} td:nth-child(2){{padding-left:0}}\
                 .{key} td:nth-child(3):before{{content:\"Say \\\"hi\\\"\";content:\"Say \\\"hi\\\"\"/\"\"}}}}"
            )
        );
    }
}
