//! The Outbox's list of side effects, a row each, and the form of the move opened for one
//! of them: bound to the item by the address (`act`, `op`), never to a row's position.

use leptos::prelude::*;

use super::Actions;
use crate::model::outbox::OutboxRow;
use crate::ui::components::form::FormKey;
use crate::ui::components::links::{enc, state_href};
use crate::ui::components::moment::Moment;
use crate::ui::components::post_form::PostForm;
use crate::ui::components::table::DataTable;

/// The side effect a move's form is open for (its reference and the move), from the
/// address, and the page of the list it was opened on.
#[derive(Clone, Default)]
pub(super) struct Selected {
    pub(super) act: String,
    pub(super) op: String,
    pub(super) cursor: String,
}

/// One group's side effects.
#[component]
pub(super) fn Rows(rows: Vec<OutboxRow>, here: String) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="mt-2 text-sm text-slate-500">"Nothing here."</p> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|r| view! { <Row r here=here.clone() /> })
        .collect_view();
    view! {
        <DataTable label="Side effects" columns=&["Action", "Conversation", "Status", "Attempts", "Last result", ""]>
            {rows}
        </DataTable>
    }
    .into_any()
}

/// A status in words (made on the server), with the next try's moment when there is one.
fn status_text(r: &OutboxRow) -> impl IntoView {
    let next = r
        .next_try
        .clone()
        .filter(|_| matches!(r.status.as_str(), "queued" | "retry"))
        .map(|t| view! { ", next try " <Moment iso=t /> });
    view! { {r.status_words.clone()} {next} }
}

/// The moves a side effect in this status can make.
fn moves_of(status: &str) -> &'static [&'static str] {
    match status {
        "held" => &["release", "discard"],
        "dead" => &["redrive", "discard"],
        _ => &[],
    }
}

/// "release" → "Release".
fn capitalized(op: &str) -> String {
    format!("{}{}", op[..1].to_ascii_uppercase(), &op[1..])
}

#[component]
fn Row(r: OutboxRow, here: String) -> impl IntoView {
    let tries = r
        .tries
        .iter()
        .map(|t| view! { <li>{format!("#{} at ", t.n)} <Moment iso=t.at.clone() /> {format!(" ({} ms): {}", t.ms, t.result)}</li> })
        .collect_view();
    // Links, not forms: the form opens above the list for this item (by its reference).
    let buttons = moves_of(&r.status)
        .iter()
        .map(|op| {
            let href = format!("{here}&act={}&op={op}", enc(&r.key_ref));
            view! { <a class="block text-sm text-sky-800 underline" href=href>{format!("{}…", capitalized(op))}</a> }
        })
        .collect_view();
    view! {
        <tr class="border-t border-slate-100 align-top" data-testid="outbox-row">
            <td class="py-2 pr-3">
                <span class="block">{format!("{} → {}{}", r.action_type, r.target, r.to_receiver)}</span>
                <span class="block font-mono text-xs text-slate-500">{r.key.clone()}</span>
            </td>
            <td class="py-2 pr-3 font-mono text-xs"><a class="text-sky-800 underline" href=state_href(&r.conversation_ref)>{r.conversation_id.clone()}</a></td>
            <td class="py-2 pr-3" data-testid="outbox-status">{status_text(&r)}</td>
            <td class="py-2 pr-3 text-right">{r.attempts}</td>
            <td class="py-2 pr-3 text-xs">
                {r.result.clone()}
                <details class="mt-1"><summary class="cursor-pointer text-sky-800">"Attempts"</summary><ul class="mt-1 space-y-0.5">{tries}</ul></details>
            </td>
            <td class="py-2">{buttons}</td>
        </tr>
    }
}

/// The open move's form, for the side effect the address names: what it is, a reason and
/// the button; the item is looked up in the list as read now, so after any change the form
/// is still its own, or says it moved and offers nothing.
#[component]
pub(super) fn MoveForm(
    rows: Vec<OutboxRow>,
    selected: Selected,
    here: String,
    actions: Actions,
    form_key: String,
) -> impl IntoView {
    if selected.act.is_empty() {
        return ().into_any();
    }
    let Some(r) = rows.into_iter().find(|r| r.key_ref == selected.act) else {
        return view! {
            <p role="status" class="mt-2 rounded border border-slate-300 bg-slate-50 px-3 py-2 text-sm" data-testid="move-gone">
                "That side effect has left this list (moved by you or by another operator): nothing to do here. "
                <a class="text-sky-800 underline" href=here>"Close"</a>
            </p>
        }
        .into_any();
    };
    let Some(op) = moves_of(&r.status)
        .iter()
        .copied()
        .find(|op| *op == selected.op)
    else {
        return ().into_any();
    };
    let label = capitalized(op);
    let name = format!("{label} one side effect");
    view! {
        <section class="mt-2 rounded border border-sky-300 bg-sky-50 p-3 text-sm" aria-label=name data-testid="move-form">
            <p>
                <span class="font-semibold">{format!("{label}: ")}</span>
                {format!("{} → {}, conversation {}, ", r.action_type, r.target, r.conversation_id)}
                <span class="font-mono text-xs">{r.key.clone()}</span>
            </p>
            <PostForm action=actions.one attr:class="mt-2 flex flex-wrap items-center gap-2">
                <input type="hidden" name="action" value=r.key_ref.clone() />
                <input type="hidden" name="op" value=op />
                <FormKey value=form_key name="form_key" />
                <label for="move-reason">{format!("Reason to {op}")}</label>
                <input id="move-reason" name="reason" required maxlength="500" class="w-64 rounded border border-slate-300 px-2 py-1" />
                <button type="submit" class="rounded bg-slate-900 px-3 py-1 text-white">{label}</button>
                <a class="text-sky-800 underline" href=here>"Cancel"</a>
            </PostForm>
        </section>
    }
    .into_any()
}
