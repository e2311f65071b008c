//! Audit records as a table, with each conversation masked and linked by reference; the
//! Audit page and a conversation's timeline show it.

use leptos::prelude::*;

use super::links::state_href;
use super::moment::Moment;
use super::table::DataTable;
use crate::model::audit::AuditRow;

#[component]
pub fn AuditTable(rows: Vec<AuditRow>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="mt-2 text-sm text-slate-500" data-testid="no-audit">"No records."</p> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|r| {
            let suppressed = r.result.starts_with("suppressed") || r.result.starts_with("held");
            let conversation = r.conversation_ref.as_deref().map(state_href);
            let summary_class = if suppressed { "font-medium text-amber-800" } else { "font-medium" };
            view! {
                <tr class="border-t border-slate-100 align-top" data-testid="audit-row">
                    <td class="py-1.5 text-xs"><Moment iso=r.at.clone() /></td>
                    <td class="py-1.5 font-mono text-xs">
                        {match conversation {
                            Some(href) => view! { <a class="text-sky-800 underline" href=href>{r.conversation_id.clone()}</a> }.into_any(),
                            None => view! { <span>{r.conversation_id.clone()}</span> }.into_any(),
                        }}
                    </td>
                    <td class="py-1.5">
                        <p class=summary_class data-testid="audit-summary">{r.summary}</p>
                    </td>
                    <td class="py-1.5 text-xs">{r.actor}</td>
                    <td class="py-1.5 text-xs">
                        <details>
                            <summary class="cursor-pointer text-sky-800">"JSON"</summary>
                            // The stored codes, for whoever reads the raw record.
                            <p class="mt-1 text-slate-500">
                                <span class="font-mono" data-testid="audit-action">{r.action_type}</span>
                                " · "
                                <span data-testid="audit-result">{r.result}</span>
                            </p>
                            <pre class="mt-1 max-w-md whitespace-pre-wrap break-all font-mono text-slate-600">{r.payload}</pre>
                        </details>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable
            label="Audit records"
            columns=&["When", "Conversation", "What happened", "By", "Details (redacted)"]
        >
            {rows}
        </DataTable>
    }
    .into_any()
}
