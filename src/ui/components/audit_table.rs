//! Audit records as a table, with each conversation masked and linked by reference; the
//! Audit page and a conversation's timeline show it.

use leptos::prelude::*;

use super::links::state_href;
use super::table::DataTable;
use crate::model::events::AuditRow;

#[component]
pub fn AuditTable(rows: Vec<AuditRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="mt-2 text-sm text-slate-500" data-testid="no-audit">"No records."</p> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|r| {
            let suppressed = r.result.starts_with("suppressed");
            let conversation = r.conversation_ref.as_deref().map(state_href);
            view! {
                <tr class="border-t border-slate-100 align-top" data-testid="audit-row">
                    <td class="py-1 text-xs">{r.at}</td>
                    <td class="py-1 font-mono text-xs">
                        {match conversation {
                            Some(href) => view! { <a class="text-sky-800 underline" href=href>{r.conversation_id.clone()}</a> }.into_any(),
                            None => view! { <span>{r.conversation_id.clone()}</span> }.into_any(),
                        }}
                    </td>
                    <td class="py-1" data-testid="audit-action">{r.action_type}</td>
                    <td class=if suppressed { "py-1 font-medium text-amber-700" } else { "py-1" } data-testid="audit-result">{r.result}</td>
                    <td class="py-1">{r.actor}</td>
                    <td class="py-1 break-all font-mono text-xs text-slate-600">{r.payload}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable
            label="Audit records"
            columns=&["When", "Conversation", "Action", "Result", "By", "Details (redacted)"]
        >
            {rows}
        </DataTable>
    }
    .into_any()
}
