//! The Outbox: side effects on their way to the receiver — queued, in flight, retrying,
//! held by safe mode, dead letters by cause, delivered ones — all of them or one
//! conversation's — each with its attempts; redrive, release and
//! discard with a reason (one, or all of a group at once with the count shown first); and
//! each receiver's card (its state, limits, queue depth and health), which leads to its own
//! page (`/outbox/receiver?receiver=<name>`).
//!
//! A move's form is bound to the item it is for through the address (`act` and `op` for
//! one side effect, `cause` for a group of dead letters), never to a row's position: the
//! list is read again every few seconds and after every move, rows come and go and move up,
//! and the open form stays with its item, or closes saying the item moved.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

mod bulk;
pub mod receiver;
mod receivers;
mod resend;
mod rows;
use bulk::{DeadLetters, HeldBulk};
use rows::{MoveForm, Rows, Selected};

use crate::api::outbox::{load_outbox, MoveAction, StartOutboxJob};
use crate::model::outbox::{ConversationFilter, JobView, OutboxCounts, OutboxView, ReceiverView};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::links::enc;
use crate::ui::components::moment::Moment;
use crate::ui::components::pager::Pager;
use crate::ui::components::post_form::FormAction;
use crate::ui::components::receiver::ReceiverStatus;
use crate::ui::components::table::DataTable;
use crate::ui::data::{page_data, PageData};

/// The page's actions, handed down to the sections that submit them.
#[derive(Clone, Copy)]
struct Actions {
    job: FormAction<String>,
    one: FormAction<String>,
}

impl Actions {
    fn new() -> Actions {
        Actions {
            job: FormAction::new::<StartOutboxJob>(),
            one: FormAction::new::<MoveAction>(),
        }
    }

    /// Changes every submission makes visible: the page reloads after each.
    fn version(&self) -> usize {
        self.job.version().get() + self.one.version().get()
    }
}

#[component]
pub fn OutboxPage() -> impl IntoView {
    let actions = Actions::new();
    let query = use_query_map();
    let group = move || query.read().get("group").unwrap_or_default();
    let selected = move || {
        let q = query.read();
        Selected {
            act: q.get("act").unwrap_or_default(),
            op: q.get("op").unwrap_or_default(),
            cursor: q.get("cursor").unwrap_or_default(),
        }
    };
    let data = page_data(
        move || {
            let q = query.read();
            (
                actions.version(),
                q.get("group"),
                q.get("cause"),
                q.get("conversation"),
                q.get("cursor"),
            )
        },
        |(_, g, c, conversation, cursor)| {
            load_outbox(
                g.unwrap_or_default(),
                c.unwrap_or_default(),
                conversation.unwrap_or_default(),
                cursor,
            )
        },
    );
    keep_current(data);
    view! {
        <Title text="Outbox" />
        <h1 class="text-2xl font-semibold">"Outbox"</h1>
        <p class="mt-1 text-sm text-slate-600">
            "Side effects on their way to the receiver."
        </p>
        <Results actions />
        <AsyncSection load=move || data spacing="mt-4" let:page>
            <Outbox page actions group=group() selected=selected() />
        </AsyncSection>
    }
}

/// The page reads the outbox again every ten seconds, and every two while a job runs
/// (with JavaScript; without, a reload shows it): other consoles deliver, other operators
/// move items.
fn keep_current(data: PageData<Result<OutboxView, crate::model::AppError>>) {
    #[cfg(feature = "hydrate")]
    {
        let ticks = std::cell::Cell::new(0u32);
        let handle = set_interval_with_handle(
            move || {
                let running = data
                    .get_untracked()
                    .and_then(|r| r.ok())
                    .is_some_and(|p| p.jobs.iter().any(|j| j.running));
                ticks.set(ticks.get() + 1);
                if running || ticks.get().is_multiple_of(5) {
                    data.refetch();
                }
            },
            std::time::Duration::from_secs(2),
        );
        if let Ok(h) = handle {
            on_cleanup(move || h.clear());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = data;
}

/// The outcome of the latest submission of each form.
#[component]
fn Results(actions: Actions) -> impl IntoView {
    view! {
        <div class="mt-4 space-y-2">
            <ActionResult value=move || actions.job.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || actions.one.value().get() success=|m: &String| m.clone() />
        </div>
    }
}

/// Everything below the results.
#[component]
fn Outbox(page: OutboxView, actions: Actions, group: String, selected: Selected) -> impl IntoView {
    let safe = page.safe_mode.then(|| view! {
        <p role="status" class="mt-4 rounded border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900">
            "Safe mode is on: side effects are held here until released or discarded."
        </p>
    });
    let OutboxView {
        counts,
        dead_by_cause,
        rows,
        next,
        jobs,
        receivers,
        form_key,
        cause,
        conversation,
        ..
    } = page;
    let whole = conversation.is_none();
    let narrowed = conversation
        .as_ref()
        .map(|c| format!("&conversation={}", enc(&c.reference)))
        .unwrap_or_default();
    let base = format!(
        "/outbox?group={}{}{narrowed}",
        enc(&group),
        if cause.is_empty() {
            String::new()
        } else {
            format!("&cause={}", enc(&cause))
        }
    );
    let here = if selected.cursor.is_empty() {
        base.clone()
    } else {
        format!("{base}&cursor={}", enc(&selected.cursor))
    };
    view! {
        {safe}
        <Counts counts=counts.clone() />
        {receiver_cards(receivers)}
        // Bulk moves act on every conversation: offered on the full lists only.
        {whole.then(|| view! {
            <DeadLetters causes=dead_by_cause selected=cause.clone() actions form_key=form_key.clone() />
            <HeldBulk held=counts.held actions form_key=form_key.clone() />
        })}
        <h2 class="mt-8 text-lg font-semibold">{group_title(&group, &cause)}</h2>
        <GroupTabs group=group.clone() narrowed=narrowed.clone() />
        <Narrowed conversation group=group.clone() />
        <MoveForm rows=rows.clone() selected here=here.clone() actions form_key />
        <Rows rows here />
        <Pager base next next_label="More" label="Pages of side effects" />
        <Jobs jobs />
    }
}

/// Each receiver's card, `default` first: its name (to its page), state, limits, queue
/// depth and health.
fn receiver_cards(receivers: Vec<ReceiverView>) -> impl IntoView {
    let cards = receivers.into_iter().map(|receiver| {
        let name = receiver.name.clone();
        let href = format!("/outbox/receiver?receiver={}", enc(&name));
        let tag = name.clone();
        view! {
            <div class="mt-3" data-receiver=tag>
                <a class="font-medium text-sky-800 underline" href=href>{name}</a>
                <ReceiverStatus receiver />
            </div>
        }
    });
    view! {
        <section aria-label="Receivers" class="mt-6 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
            <h2 class="text-lg font-semibold">"Receivers"</h2>
            {cards.collect_view()}
        </section>
    }
}

fn group_title(group: &str, cause: &str) -> String {
    match (group, cause) {
        ("held", _) => "Held".into(),
        ("dead", "") => "Dead letters".into(),
        ("dead", c) => format!("Dead letters: {c}"),
        ("delivered", _) => "Delivered".into(),
        ("discarded", _) => "Discarded".into(),
        _ => "Queued, in flight and retrying".into(),
    }
}

/// The lists, as links that keep the conversation the page is narrowed to.
#[component]
fn GroupTabs(group: String, narrowed: String) -> impl IntoView {
    let tabs = [
        ("due", "Queued and retrying"),
        ("held", "Held"),
        ("dead", "Dead letters"),
        ("delivered", "Delivered"),
        ("discarded", "Discarded"),
    ]
    .into_iter()
    .map(|(g, label)| {
        let current = group == g || (g == "due" && group.is_empty());
        let href = format!("/outbox?group={g}{narrowed}");
        view! {
            <a href=href aria-current=current.then_some("page")
                class=if current { "rounded bg-slate-900 px-2 py-1 text-white" } else { "rounded px-2 py-1 text-sky-800 underline" }>{label}</a>
        }
    })
    .collect_view();
    view! { <nav aria-label="Outbox lists" class="mt-2 flex flex-wrap gap-2 text-sm">{tabs}</nav> }
}

/// Which conversation the list is narrowed to, and the way back to all of them.
#[component]
fn Narrowed(conversation: Option<ConversationFilter>, group: String) -> impl IntoView {
    conversation.map(|c| {
        let all = format!("/outbox?group={}", enc(&group));
        view! {
            <p class="mt-2 text-sm" data-testid="outbox-conversation">
                "Conversation " <span class="font-mono text-xs">{c.shown}</span> " only. "
                <a class="text-sky-800 underline" href=all>"All conversations"</a>
            </p>
        }
    })
}

/// The groups as tiles, each a link to its list.
#[component]
fn Counts(counts: OutboxCounts) -> impl IntoView {
    let tile = |label: &'static str, n: u64, href: &'static str, alarm: bool| {
        let class = if alarm && n > 0 {
            "text-red-700"
        } else {
            "text-slate-900"
        };
        view! {
            <a href=href class="rounded-lg border border-slate-200 bg-white p-4 shadow-sm hover:border-sky-400">
                <span class="block text-xs uppercase text-slate-500">{label}</span>
                <span class=format!("text-2xl font-semibold {class}") data-testid=format!("count-{}", label.to_ascii_lowercase().replace(' ', "-"))>{n}</span>
            </a>
        }
    };
    view! {
        <div class="mt-4 grid grid-cols-2 gap-3 md:grid-cols-5">
            {tile("Queued", counts.queued, "/outbox", false)}
            {tile("In flight", counts.in_flight, "/outbox", false)}
            {tile("Retrying", counts.retrying, "/outbox", false)}
            {tile("Held", counts.held, "/outbox?group=held", true)}
            {tile("Dead letters", counts.dead, "/outbox?group=dead", true)}
        </div>
        <p class="mt-1 text-xs text-slate-500" data-testid="outbox-counts-note">
            "Counted from DynamoDB's indexes, which trail changes by about a second: a side effect that has just moved may still be counted where it was. Releases, redrives and discards act on each side effect itself and count exactly what they did."
        </p>
    }
}

/// The latest bulk jobs with their progress.
#[component]
fn Jobs(jobs: Vec<JobView>) -> impl IntoView {
    if jobs.is_empty() {
        return ().into_any();
    }
    let rows = jobs
        .into_iter()
        .map(|j| {
            let what = format!(
                "{} {}{}",
                j.op,
                j.group,
                j.cause
                    .as_ref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default()
            );
            let progress = format!(
                "{} of {}{}",
                j.done,
                j.total,
                if j.skipped > 0 {
                    format!(" ({} had moved already)", j.skipped)
                } else {
                    String::new()
                }
            );
            view! {
                <tr class="border-t border-slate-100" data-testid="outbox-job">
                    <td class="py-1"><Moment iso=j.created_at /></td>
                    <td class="py-1">{what}</td>
                    <td class="py-1">{j.actor}</td>
                    <td class="py-1">{j.reason}</td>
                    <td class="py-1" data-testid="job-progress">{progress}</td>
                    <td class="py-1">{if j.running { "running" } else { "finished" }}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2 class="mt-8 text-lg font-semibold">"Bulk jobs"</h2>
        <DataTable label="Bulk jobs" columns=&["Started", "What", "By", "Reason", "Progress", ""]>
            {rows}
        </DataTable>
    }
    .into_any()
}
