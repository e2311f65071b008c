//! One conversation: header, the message thread, configuration, and for admins a
//! reason-gated reveal of the contact details.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::conversations::{load_conversation, RevealContact};
use crate::model::conversations::{ConversationDetail, MessageView};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::badge::StatusPill;
use crate::ui::components::form::{field_error, invalid_attrs, FieldError, FormKey};
use crate::ui::components::links::state_href;
use crate::ui::components::moment::{time_or_text, Moment};
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::data::page_data;

#[component]
pub fn ConversationPage() -> impl IntoView {
    let query = use_query_map();
    let reveal = FormAction::new::<RevealContact>();
    let detail = page_data(
        move || {
            (
                query.read().get("r").unwrap_or_default(),
                reveal.version().get(),
            )
        },
        |(r, _)| load_conversation(r),
    );
    view! {
        <Title text="Conversation" />
        // Back to the search this conversation was opened from (its query string; the path
        // is fixed, so the link cannot lead elsewhere).
        <a href=move || back_href(query.read().get("back")) class="text-sm text-sky-800 underline">"← Conversations"</a>
        <div class="mt-3">
            <ActionResult value=move || reveal.value().get() success=|_: &()| "Revealed for 15 minutes; the reveal is in the audit.".to_string() />
        </div>
        <AsyncSection load=move || detail spacing="mt-4" let:d>
            <Detail d reveal />
        </AsyncSection>
    }
}

fn back_href(back: Option<String>) -> String {
    match back.filter(|b| !b.is_empty()) {
        Some(b) => format!("/conversations?{}", b.trim_start_matches('?')),
        None => "/conversations".to_string(),
    }
}

/// A yes/no fact as a chip, amber when yes.
fn flag(label: &'static str, on: bool) -> impl IntoView {
    let class = if on {
        "rounded bg-amber-100 px-2 py-0.5 text-xs font-semibold text-amber-900"
    } else {
        "rounded bg-slate-100 px-2 py-0.5 text-xs text-slate-500"
    };
    view! { <span class=class>{label}": "{if on { "yes" } else { "no" }}</span> }
}

/// The conversation: status and flags, facts, recipient, hand-off, the link to the
/// middleware's state, the messages and the configuration.
#[component]
fn Detail(mut d: ConversationDetail, reveal: FormAction<()>) -> impl IntoView {
    let state_link = d.middleware_ref.clone().map(|r| {
        view! { <a class="text-sky-800 underline" href=state_href(&r)>"Middleware state and audit →"</a> }
    });
    let thread = std::mem::take(&mut d.messages)
        .into_iter()
        .map(|m| view! { <Message m /> })
        .collect_view();
    view! {
        <h1 class="mt-2 text-2xl font-semibold">"Conversation "<span class="font-mono text-lg" data-testid="conversation-id">{d.conversation_id.clone()}</span></h1>
        <div class="mt-2 flex flex-wrap gap-2 text-sm">
            <span data-testid="conversation-status"><StatusPill status=d.status.clone() /></span>
            {flag("task complete", d.task_complete)}
            {flag("hand-off", d.hand_off)}
            {flag("function call", d.function_call)}
            {flag("consent", d.comms_consent)}
        </div>
        <div class="mt-4 grid gap-4 md:grid-cols-2">
            <Facts d=d.clone() />
            <Recipient d=d.clone() reveal />
        </div>
        {d.hand_off_reason.clone().map(|r| view! {
            <p class="mt-4 rounded bg-amber-50 p-3 text-sm text-amber-900" data-testid="hand-off-reason">"Handed off to a human: "{r}</p>
        })}
        <p class="mt-4 text-sm">{state_link}</p>
        <h2 class="mt-6 text-lg font-semibold">"Messages"</h2>
        <ol class="mt-2 space-y-2" aria-label="Messages">{thread}</ol>
        <h2 class="mt-6 text-lg font-semibold">"Configuration"</h2>
        <Configuration d />
    }
}

/// Where the conversation belongs and when it changed.
#[component]
fn Facts(d: ConversationDetail) -> impl IntoView {
    let row = "flex justify-between border-b border-slate-100 py-1";
    view! {
        <dl class="rounded-lg border border-slate-200 bg-white p-4 text-sm">
            <div class=row><dt class="text-slate-600">"Company"</dt><dd>{d.company}</dd></div>
            <div class=row><dt class="text-slate-600">"Project"</dt><dd>{d.project}</dd></div>
            <div class=row><dt class="text-slate-600">"Channel"</dt><dd>{d.channel}</dd></div>
            <div class=row><dt class="text-slate-600">"Created"</dt><dd class="text-xs">{time_or_text(d.created_at)}</dd></div>
            <div class=row><dt class="text-slate-600">"Updated"</dt><dd class="text-xs">{time_or_text(d.updated_at)}</dd></div>
            <div class="flex justify-between py-1"><dt class="text-slate-600">"Function call"</dt><dd>{d.function_call_type.unwrap_or_else(|| "–".into())}</dd></div>
        </dl>
    }
}

/// The recipient's contact details (masked unless revealed) and, for admins, the reveal.
#[component]
fn Recipient(d: ConversationDetail, reveal: FormAction<()>) -> impl IntoView {
    let contact = [
        ("Phone", d.recipient_tel.clone()),
        ("Email", d.recipient_email.clone()),
        ("Name", Some(d.recipient_name.clone()).filter(|n| !n.is_empty())),
    ]
    .into_iter()
    .filter_map(|(label, v)| v.map(|v| (label, v)))
    .map(|(label, v)| view! {
        <div class="flex justify-between border-b border-slate-100 py-1">
            <dt class="text-slate-600">{label}</dt><dd class="font-mono text-xs" data-testid=format!("contact-{}", label.to_ascii_lowercase())>{v}</dd>
        </div>
    })
    .collect_view();
    let reveal_form = (d.can_reveal && !d.revealed)
        .then(|| view! { <RevealForm r=d.r.clone() form_key=d.form_key.clone() reveal /> });
    // How long the reveal lasts: it ends by itself, and the page says when.
    let until = d.revealed_until.clone().map(|at| view! {
        <p class="mt-2 rounded bg-amber-50 px-2 py-1 text-xs text-amber-900" data-testid="revealed-until">
            "Shown to you until "<Moment iso=at />"; masked again after that. The reveal is in the audit."
        </p>
    });
    view! {
        <div class="rounded-lg border border-slate-200 bg-white p-4 text-sm">
            <h2 class="font-semibold">"Recipient"{d.revealed.then_some(" (revealed)")}</h2>
            <dl class="mt-1">{contact}</dl>
            {until}
            {reveal_form}
        </div>
    }
}

/// The folded, reason-gated reveal of the contact details; the reason is audited.
#[component]
fn RevealForm(r: String, form_key: String, reveal: FormAction<()>) -> impl IntoView {
    let error = Signal::derive(move || reveal.value().with(|v| field_error(v, "reason")));
    let (invalid, described) = invalid_attrs(error, "reveal-reason-error".into());
    view! {
        <details class="mt-3 rounded border border-slate-200 bg-slate-50 p-3 text-sm">
            <summary class="cursor-pointer font-medium text-sky-800">"Reveal contact details…"</summary>
            <PostForm action=reveal attr:class="mt-2 space-y-2">
                <input type="hidden" name="r" value=r />
                <FormKey value=form_key />
                <label for="reveal-reason" class="block">"Why do you need them? (audited)"</label>
                <textarea
                    id="reveal-reason"
                    name="reason"
                    rows="2"
                    maxlength="500"
                    aria-invalid=invalid
                    aria-describedby=described
                    class="w-full rounded border border-slate-300 px-2 py-1 aria-invalid:border-red-500"
                ></textarea>
                <FieldError id="reveal-reason-error" message=error />
                <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Reveal"</button>
            </PostForm>
        </details>
    }
}

/// The conversation's stored configuration documents, each folded.
#[component]
fn Configuration(d: ConversationDetail) -> impl IntoView {
    let configs = [
        ("AI config", d.ai_config),
        ("Channel config", d.channel_config),
        ("Project data", d.project_data),
        ("Company rep", d.company_rep),
    ]
    .into_iter()
    .filter_map(|(l, v)| v.map(|v| (l, v)))
    .map(|(label, json)| {
        view! {
            <details class="rounded border border-slate-200 bg-white p-3">
                <summary class="cursor-pointer text-sm font-medium">{label}</summary>
                <pre class="mt-2 overflow-x-auto text-xs">{json}</pre>
            </details>
        }
    })
    .collect_view();
    view! { <div class="mt-2 space-y-2">{configs}</div> }
}

/// One message of the thread: the assistant's on the left, the recipient's on the right;
/// its text only where the viewer may read it.
#[component]
fn Message(m: MessageView) -> impl IntoView {
    let (align, tone) = if m.role == "assistant" {
        ("mr-12", "bg-sky-50 border-sky-200")
    } else {
        ("ml-12", "bg-white border-slate-200")
    };
    let stats = [
        m.total_tokens.map(|t| format!("{t} tokens")),
        m.prompt_tokens
            .zip(m.completion_tokens)
            .map(|(p, c)| format!("{p} in / {c} out")),
        m.processing_time_ms.map(|ms| format!("{ms} ms")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let body = if m.content_hidden {
        view! { <p class="italic text-slate-500">{format!("Message text hidden ({} characters)", m.chars)}</p> }.into_any()
    } else {
        view! { <p class="whitespace-pre-wrap">{m.content}</p> }.into_any()
    };
    view! {
        <li class=format!("rounded-lg border p-3 text-sm {align} {tone}") data-testid="message">
            <div class="flex justify-between text-xs text-slate-500">
                <span class="font-semibold uppercase">{m.role}</span>
                <span>{time_or_text(m.timestamp)}</span>
            </div>
            <div class="mt-1">{body}</div>
            <div class="mt-1 text-xs text-slate-500">{stats}</div>
        </li>
    }
}
