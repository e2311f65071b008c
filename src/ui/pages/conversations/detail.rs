//! One conversation: header, the message thread, configuration, and for admins a
//! reason-gated reveal of the contact details.

use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::api::conversations::{load_conversation, RevealContact};
use crate::model::conversations::{ConversationDetail, MessageView};
use crate::ui::components::alert::{ActionResult, ErrorBox};
use crate::ui::components::links::state_href;

#[component]
pub fn ConversationPage() -> impl IntoView {
    let query = use_query_map();
    let reveal = ServerAction::<RevealContact>::new();
    let detail = Resource::new(
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
        <a href="/conversations" class="text-sm text-sky-800 underline">"← Conversations"</a>
        <div class="mt-3">
            <ActionResult value=move || reveal.value().get() success=|_: &()| "Revealed for 15 minutes; the reveal is in the audit.".to_string() />
        </div>
        <Transition fallback=|| view! { <p class="mt-4 text-slate-500">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(d) => view! { <Detail d reveal /> }.into_any(),
                    Err(error) => view! { <div class="mt-4"><ErrorBox error /></div> }.into_any(),
                }
            })}
        </Transition>
    }
}

fn flag(label: &'static str, on: bool) -> impl IntoView {
    let class = if on {
        "rounded bg-amber-100 px-2 py-0.5 text-xs font-semibold text-amber-900"
    } else {
        "rounded bg-slate-100 px-2 py-0.5 text-xs text-slate-500"
    };
    view! { <span class=class>{label}": "{if on { "yes" } else { "no" }}</span> }
}

#[component]
fn Detail(d: ConversationDetail, reveal: ServerAction<RevealContact>) -> impl IntoView {
    let contact = [
        ("Phone", d.recipient_tel.clone()),
        ("Email", d.recipient_email.clone()),
        ("Name", Some(d.recipient_name.clone()).filter(|n| !n.is_empty())),
    ]
    .into_iter()
    .filter_map(|(label, v)| v.map(|v| (label, v)))
    .map(|(label, v)| view! {
        <div class="flex justify-between border-b border-slate-100 py-1">
            <dt class="text-slate-600">{label}</dt><dd class="font-mono text-xs" data-testid=format!("contact-{}", label.to_lowercase())>{v}</dd>
        </div>
    })
    .collect_view();
    let reveal_form = (d.can_reveal && !d.revealed).then(|| {
        view! {
            <details class="mt-3 rounded border border-slate-200 bg-slate-50 p-3 text-sm">
                <summary class="cursor-pointer font-medium text-sky-800">"Reveal contact details…"</summary>
                <ActionForm action=reveal attr:class="mt-2 space-y-2">
                    <input type="hidden" name="r" value=d.r.clone() />
                    <input type="hidden" name="idempotency_key" value=d.form_key.clone() />
                    <label for="reveal-reason" class="block">"Why do you need them? (audited)"</label>
                    <textarea id="reveal-reason" name="reason" rows="2" maxlength="500" class="w-full rounded border border-slate-300 px-2 py-1"></textarea>
                    <button type="submit" class="rounded bg-slate-900 px-3 py-1.5 text-white">"Reveal"</button>
                </ActionForm>
            </details>
        }
    });
    let state_link = d.middleware_id.clone().map(|id| {
        view! { <a class="text-sky-800 underline" href=state_href(&id)>"Middleware state and audit →"</a> }
    });
    let state_note = (d.has_middleware_state && d.middleware_id.is_none())
        .then(|| view! { <span class="text-slate-500">"The middleware has state for this conversation (reveal to open it)."</span> });
    let configs = [
        ("AI config", d.ai_config.clone()),
        ("Channel config", d.channel_config.clone()),
        ("Project data", d.project_data.clone()),
        ("Company rep", d.company_rep.clone()),
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
    let thread = d
        .messages
        .into_iter()
        .map(|m| view! { <Message m /> })
        .collect_view();
    view! {
        <h1 class="mt-2 text-2xl font-semibold">"Conversation "<span class="font-mono text-lg" data-testid="conversation-id">{d.conversation_id.clone()}</span></h1>
        <div class="mt-2 flex flex-wrap gap-2 text-sm">
            <span class="rounded bg-sky-100 px-2 py-0.5 font-semibold text-sky-900" data-testid="conversation-status">{d.status.clone()}</span>
            {flag("task complete", d.task_complete)}
            {flag("hand-off", d.hand_off)}
            {flag("function call", d.function_call)}
            {flag("consent", d.comms_consent)}
        </div>
        <div class="mt-4 grid gap-4 md:grid-cols-2">
            <dl class="rounded-lg border border-slate-200 bg-white p-4 text-sm">
                <div class="flex justify-between border-b border-slate-100 py-1"><dt class="text-slate-600">"Company"</dt><dd>{d.company.clone()}</dd></div>
                <div class="flex justify-between border-b border-slate-100 py-1"><dt class="text-slate-600">"Project"</dt><dd>{d.project.clone()}</dd></div>
                <div class="flex justify-between border-b border-slate-100 py-1"><dt class="text-slate-600">"Channel"</dt><dd>{d.channel.clone()}</dd></div>
                <div class="flex justify-between border-b border-slate-100 py-1"><dt class="text-slate-600">"Created"</dt><dd class="text-xs">{d.created_at.clone()}</dd></div>
                <div class="flex justify-between border-b border-slate-100 py-1"><dt class="text-slate-600">"Updated"</dt><dd class="text-xs">{d.updated_at.clone()}</dd></div>
                <div class="flex justify-between py-1"><dt class="text-slate-600">"Function call"</dt><dd>{d.function_call_type.clone().unwrap_or_else(|| "–".into())}</dd></div>
            </dl>
            <div class="rounded-lg border border-slate-200 bg-white p-4 text-sm">
                <h2 class="font-semibold">"Recipient"{d.revealed.then_some(" (revealed)")}</h2>
                <dl class="mt-1">{contact}</dl>
                {reveal_form}
            </div>
        </div>
        {d.hand_off_reason.clone().map(|r| view! {
            <p class="mt-4 rounded bg-amber-50 p-3 text-sm text-amber-900" data-testid="hand-off-reason">"Handed off to a human: "{r}</p>
        })}
        <p class="mt-4 text-sm">{state_link}{state_note}</p>
        <h2 class="mt-6 text-lg font-semibold">"Messages"</h2>
        <ol class="mt-2 space-y-2" aria-label="Messages">{thread}</ol>
        <h2 class="mt-6 text-lg font-semibold">"Configuration"</h2>
        <div class="mt-2 space-y-2">{configs}</div>
    }
}

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
                <span>{m.timestamp}</span>
            </div>
            <div class="mt-1">{body}</div>
            <div class="mt-1 text-xs text-slate-500">{stats}</div>
        </li>
    }
}
