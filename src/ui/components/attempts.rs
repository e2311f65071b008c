//! Measurement attempts as a table with their CSV export and paging: the Measurements and
//! Audit pages show it.

use leptos::prelude::*;

use super::links::enc;
use super::pager::Pager;
use super::table::DataTable;
use crate::model::measurements::AttemptPage;
use crate::ui::components::moment::{time_or_text, Moment};

const COLUMNS: [&str; 8] = [
    "When",
    "User",
    "Measurement",
    "Outcome",
    "Reason",
    "kg",
    "Timestamp",
    "Correlation",
];

/// The attempts table with its CSV export and paging; also on the Audit page.
#[component]
pub fn AttemptsSection(
    page: AttemptPage,
    outcome: String,
    base: String,
    #[prop(default = "cursor")] cursor_param: &'static str,
) -> impl IntoView {
    if page.user_ref.is_empty() && outcome.is_empty() {
        return view! { <p class="mt-6 text-sm text-slate-500">"Choose a user or an outcome to see attempts."</p> }.into_any();
    }
    // The user by their reference: no user id in the address.
    let csv = format!(
        "/measurements/audit.csv?user={}&outcome={}",
        enc(&page.user_ref),
        enc(&outcome)
    );
    let rows = page
        .rows
        .into_iter()
        .map(|r| {
            let bad = !matches!(r.action.as_str(), "accepted" | "duplicate" | "override");
            view! {
                <tr class="border-t border-slate-100 align-top" data-testid="attempt-row">
                    <td class="py-1 text-xs whitespace-nowrap"><Moment iso=r.at /></td>
                    <td class="py-1 font-mono text-xs">{r.user_id}</td>
                    <td class="py-1 font-mono text-xs">{r.measurement_id}</td>
                    <td class=if bad { "py-1 font-medium text-red-700" } else { "py-1" } data-testid="attempt-action">{r.action}</td>
                    <td class="py-1 text-xs">{r.reason}</td>
                    <td class="py-1 text-right">{r.weight_kg}</td>
                    <td class="py-1 text-xs">{time_or_text(r.timestamp)}</td>
                    <td class="py-1 font-mono text-xs">{r.correlation_id}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="mt-6" aria-label="Attempts">
            <div class="flex items-baseline justify-between">
                <h2 class="text-lg font-semibold">"Attempts"</h2>
                <a class="text-sm text-sky-800 underline" href=csv rel="external" download>"Export CSV"</a>
            </div>
            <DataTable label="Measurement attempts" columns=&COLUMNS align_right=&["kg"]>
                {rows}
            </DataTable>
            <Pager base next=page.next next_param=cursor_param label="Pages of attempts" />
        </section>
    }
    .into_any()
}
