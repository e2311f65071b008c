//! The Outbox page's bulk moves: every dead letter of a cause redriven or discarded, every
//! held action released or discarded, each with the count it will take and a reason.

use leptos::prelude::*;

use super::Actions;
use crate::ui::components::form::FormKey;
use crate::ui::components::links::enc;
use crate::ui::components::post_form::PostForm;
use crate::ui::components::table::DataTable;

/// A bulk move's form: the count it will take, a reason, and the button.
#[component]
fn BulkForm(
    op: &'static str,
    group: &'static str,
    #[prop(into)] cause: String,
    #[prop(into)] label: String,
    form_key: String,
    actions: Actions,
) -> impl IntoView {
    let id = format!("reason-{op}-{group}-{}", cause.replace(' ', "-"));
    view! {
        <details class="inline-block">
            <summary class="cursor-pointer text-sm text-sky-800 underline">{format!("{label}…")}</summary>
            <PostForm action=actions.job attr:class="mt-2 flex flex-wrap items-end gap-2">
                <input type="hidden" name="op" value=op />
                <input type="hidden" name="group" value=group />
                <input type="hidden" name="cause" value=cause />
                <FormKey value=form_key name="form_key" />
                <label for=id.clone() class="text-sm">"Reason"</label>
                <input id=id name="reason" required maxlength="500" class="rounded border border-slate-300 px-2 py-1 text-sm" />
                <button type="submit" class="rounded bg-slate-900 px-3 py-1 text-sm text-white">{label}</button>
            </PostForm>
        </details>
    }
}

/// Dead letters grouped by cause, each a link to its list; the cause open in the address
/// (and only it) gets its redrive and discard forms, so a form is always for the cause it
/// names whatever the other causes do.
#[component]
pub(super) fn DeadLetters(
    causes: Vec<(String, u64)>,
    selected: String,
    actions: Actions,
    form_key: String,
) -> impl IntoView {
    if causes.is_empty() {
        return ().into_any();
    }
    let forms = causes.iter().find(|(c, _)| *c == selected).map(|(cause, n)| {
        let plural = if *n == 1 { "" } else { "s" };
        view! {
            <div class="mt-2 space-x-4" data-testid="cause-moves">
                <BulkForm op="redrive" group="dead" cause=cause.clone() label=format!("Redrive {n} dead letter{plural} ({cause})") form_key=form_key.clone() actions />
                <BulkForm op="discard" group="dead" cause=cause.clone() label=format!("Discard {n} dead letter{plural} ({cause})") form_key actions />
            </div>
        }
    });
    let rows = causes
        .into_iter()
        .map(|(cause, n)| {
            let href = format!("/outbox?group=dead&cause={}", enc(&cause));
            let open = (cause == selected).then_some("page");
            view! {
                <tr class="border-t border-slate-100">
                    <td class="py-2"><a class="text-sky-800 underline" href=href aria-current=open>{cause}</a></td>
                    <td class="py-2 text-right">{n}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2 class="mt-8 text-lg font-semibold">"Dead letters by cause"</h2>
        <p class="mt-1 text-sm text-slate-600">"Open a cause to redrive or discard all of its dead letters."</p>
        <DataTable label="Dead letters by cause" columns=&["Cause", "Count"] align_right=&["Count"]>
            {rows}
        </DataTable>
        {forms}
    }
    .into_any()
}

/// Held side effects, released or discarded all at once.
#[component]
pub(super) fn HeldBulk(held: u64, actions: Actions, form_key: String) -> impl IntoView {
    if held == 0 {
        return ().into_any();
    }
    view! {
        <div class="mt-6 space-x-4">
            <BulkForm op="release" group="held" cause="" label=format!("Release {held} held") form_key=form_key.clone() actions />
            <BulkForm op="discard" group="held" cause="" label=format!("Discard {held} held") form_key actions />
        </div>
    }
    .into_any()
}
