//! The Context Object a channel processor creates a conversation from, and the other
//! request bodies of the conversations API: validated into the stored shape, every error
//! naming its field.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::contract::conversations::{
    ChannelConfig, ContextObject, ConversationChanges, NewMessage,
};
use crate::server::contract::Flag;
use crate::server::crypto::sha256_hex;
use crate::server::domain::conversations::contact::{e164, email, ChannelMethod};
use crate::server::domain::conversations::ids::ConversationId;
use crate::server::domain::fields;
use crate::server::store::conversations::{Changes, Conversation, Message, Status};

/// Larger bodies are refused with 413 before they are read.
pub const CONTEXT_BODY_LIMIT: usize = 128 * 1024;
pub const MESSAGE_BODY_LIMIT: usize = 128 * 1024;
/// One message's text.
pub const MAX_CONTENT_CHARS: usize = 100_000;
const MAX_MAP_BYTES: usize = 32 * 1024;
const MAX_TOKENS: i64 = 100_000_000;
const MAX_MS: i64 = 86_400_000;

/// A channel's name as stored, checked.
fn channel(raw: &str, name: &str) -> Result<String, AppError> {
    ChannelMethod::parse(raw, name).map(|c| c.as_str().to_string())
}

/// The company's sending numbers and address of one channel config, checked.
struct Senders {
    whatsapp: Option<String>,
    sms: Option<String>,
    email: Option<String>,
}

fn channel_config(
    cc: Option<ChannelConfig>,
) -> Result<(Senders, Option<Map<String, Value>>), AppError> {
    let Some(cc) = cc else {
        let none = Senders {
            whatsapp: None,
            sms: None,
            email: None,
        };
        return Ok((none, None));
    };
    let check = |field: &str, v: &Option<String>, f: fn(&str, &str) -> Result<String, AppError>| {
        let name = format!("channel_config.{field}");
        fields::text(&name, v.clone(), 254)?
            .map(|x| f(&x, &name))
            .transpose()
    };
    let senders = Senders {
        whatsapp: check("company_whatsapp_number", &cc.company_whatsapp_number, e164)?,
        sms: check("company_sms_number", &cc.company_sms_number, e164)?,
        email: check("company_email", &cc.company_email, email)?,
    };
    let map = match serde_json::to_value(cc) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Ok((
        senders,
        fields::object("channel_config", Some(map), MAX_MAP_BYTES)?,
    ))
}

/// The stored conversation a Context Object describes, at `now`, living `ttl_days`. Fields
/// are checked in the order the Context Object lists them, so the first bad one is named.
pub fn from_context(
    mut ctx: ContextObject,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Conversation, AppError> {
    let conversation_id =
        ConversationId::parse(std::mem::take(&mut ctx.conversation_id))?.into_string();
    let to = Recipient::of(&mut ctx)?;
    let (senders, channel_config) = channel_config(ctx.channel_config.take())?;
    let channel = to.channel_method;
    let now_iso = iso(now);
    let mut c = Conversation {
        primary_channel: to.primary_channel,
        conversation_id,
        gsi_recipient_tel: to.tel.clone(),
        gsi_recipient_email: to.email.clone(),
        gsi_company_whatsapp_number: senders
            .whatsapp
            .filter(|_| channel == ChannelMethod::Whatsapp),
        gsi_company_sms_number: senders.sms.filter(|_| channel == ChannelMethod::Sms),
        gsi_company_email: senders.email.filter(|_| channel == ChannelMethod::Email),
        recipient_tel: to.tel,
        recipient_email: to.email,
        company_id: fields::required("company_id", take(&mut ctx.company_id), 128)?,
        project_id: fields::required("project_id", take(&mut ctx.project_id), 128)?,
        request_id: fields::required("request_id", take(&mut ctx.request_id), 128)?,
        channel_method: to.channel_method.as_str().to_string(),
        conversation_status: Status::Processing,
        created_at: now_iso.clone(),
        updated_at: now_iso,
        channel_config,
        ttl: (now + Duration::days(ttl_days)).timestamp(),
        // No messages, no function call or hand-off, task not complete, counters at 0.
        ..Conversation::default()
    };
    describe(&mut c, &mut ctx)?;
    auto_queue(&mut c, &mut ctx)?;
    c.ai_config = fields::object("ai_config", ctx.ai_config, MAX_MAP_BYTES)?;
    c.context_sha256 = fingerprint(&c);
    Ok(c)
}

fn take(s: &mut String) -> String {
    std::mem::take(s)
}

/// Who a Context Object is for, checked: the channel, the recipient's phone and email, and
/// the one of them that keys the conversation (the email for email, else the phone).
struct Recipient {
    channel_method: ChannelMethod,
    tel: Option<String>,
    email: Option<String>,
    primary_channel: String,
}

impl Recipient {
    fn of(ctx: &mut ContextObject) -> Result<Recipient, AppError> {
        let channel_method = ChannelMethod::parse(
            &fields::required("channel_method", take(&mut ctx.channel_method), 16)?,
            "channel_method",
        )?;
        let tel = fields::text("recipient_tel", ctx.recipient_tel.take(), 32)?
            .map(|t| e164(&t, "recipient_tel"))
            .transpose()?;
        let email = fields::text("recipient_email", ctx.recipient_email.take(), 254)?
            .map(|e| email(&e, "recipient_email"))
            .transpose()?;
        let primary_channel = match channel_method {
            ChannelMethod::Email => email.clone().ok_or_else(|| {
                AppError::invalid(
                    "recipient_email",
                    "recipient_email is required when channel_method is email.",
                )
            })?,
            _ => tel.clone().ok_or_else(|| {
                AppError::invalid(
                    "recipient_tel",
                    format!("recipient_tel is required when channel_method is {channel_method}."),
                )
            })?,
        };
        Ok(Recipient {
            channel_method,
            tel,
            email,
            primary_channel,
        })
    }
}

/// The Context Object's descriptive fields: times, versions, thread, names, consent, the
/// project and company, and the channels allowed.
fn describe(c: &mut Conversation, ctx: &mut ContextObject) -> Result<(), AppError> {
    let channels = |s: &str, n: &str| channel(s, n);
    let timestamp = ctx.initial_request_timestamp.take();
    c.initial_request_timestamp = fields::time("initial_request_timestamp", timestamp)?.map(iso);
    c.processor_version = fields::text("processor_version", ctx.processor_version.take(), 64)?;
    c.router_version = fields::text("router_version", ctx.router_version.take(), 64)?;
    c.thread_id = fields::text("thread_id", ctx.thread_id.take(), 200)?;
    c.email_id = fields::text("email_id", ctx.email_id.take(), 500)?;
    let (first, last) = (
        ctx.recipient_first_name.take(),
        ctx.recipient_last_name.take(),
    );
    c.recipient_first_name = fields::text("recipient_first_name", first, 100)?;
    c.recipient_last_name = fields::text("recipient_last_name", last, 100)?;
    c.comms_consent = ctx.comms_consent.unwrap_or(false);
    c.project_data = fields::object("project_data", ctx.project_data.take(), MAX_MAP_BYTES)?;
    c.company_name = fields::text("company_name", ctx.company_name.take(), 200)?;
    c.project_name = fields::text("project_name", ctx.project_name.take(), 200)?;
    c.company_rep = fields::object("company_rep", ctx.company_rep.take(), MAX_MAP_BYTES)?;
    let allowed = ctx.allowed_channels.take();
    c.allowed_channels = fields::list("allowed_channels", allowed, 3, channels)?;
    c.project_status = fields::text("project_status", ctx.project_status.take(), 64)?;
    Ok(())
}

/// Whether the first message and replies are queued on their own, and from which of the
/// company's numbers and addresses.
fn auto_queue(c: &mut Conversation, ctx: &mut ContextObject) -> Result<(), AppError> {
    let phones = |s: &str, n: &str| e164(s, n);
    let emails = |s: &str, n: &str| email(s, n);
    c.auto_queue_initial_message = ctx.auto_queue_initial_message;
    c.auto_queue_initial_message_from_number = fields::list(
        "auto_queue_initial_message_from_number",
        ctx.auto_queue_initial_message_from_number.take(),
        50,
        phones,
    )?;
    c.auto_queue_initial_message_from_email = fields::list(
        "auto_queue_initial_message_from_email",
        ctx.auto_queue_initial_message_from_email.take(),
        50,
        emails,
    )?;
    c.auto_queue_reply_message = ctx.auto_queue_reply_message;
    c.auto_queue_reply_message_from_number = fields::list(
        "auto_queue_reply_message_from_number",
        ctx.auto_queue_reply_message_from_number.take(),
        50,
        phones,
    )?;
    c.auto_queue_reply_message_from_email = fields::list(
        "auto_queue_reply_message_from_email",
        ctx.auto_queue_reply_message_from_email.take(),
        50,
        emails,
    )?;
    Ok(())
}

/// What a Context Object said, without the times it was received at: two creates of the
/// same conversation agree on this exactly when they carried the same content.
fn fingerprint(c: &Conversation) -> String {
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        for volatile in ["created_at", "updated_at", "ttl", "context_sha256"] {
            m.remove(volatile);
        }
    }
    // serde_json's maps are sorted (no preserve_order): the text is canonical.
    sha256_hex(v.to_string().as_bytes())
}

/// One message to append, received at `now`.
pub fn message(m: NewMessage, now: DateTime<Utc>) -> Result<Message, AppError> {
    let role = fields::required("role", m.role, 16)?;
    if role != "user" && role != "assistant" {
        return Err(AppError::invalid("role", "role must be user or assistant."));
    }
    // Kept as written (not trimmed): it is the message.
    let content = m.content;
    if content.trim().is_empty() {
        return Err(AppError::invalid("content", "content is required."));
    }
    if content.chars().count() > MAX_CONTENT_CHARS {
        return Err(AppError::invalid(
            "content",
            format!("content is at most {MAX_CONTENT_CHARS} characters."),
        ));
    }
    let entry_id = fields::required("entry_id", m.entry_id, 128)?;
    Ok(Message {
        entry_id,
        message_timestamp: iso(
            fields::time("message_timestamp", m.message_timestamp)?.unwrap_or(now)
        ),
        role,
        content,
        ai_prompt_tokens: fields::count("ai_prompt_tokens", m.ai_prompt_tokens, MAX_TOKENS)?,
        ai_completion_tokens: fields::count(
            "ai_completion_tokens",
            m.ai_completion_tokens,
            MAX_TOKENS,
        )?,
        ai_total_tokens: fields::count("ai_total_tokens", m.ai_total_tokens, MAX_TOKENS)?,
        processing_time_ms: fields::count("processing_time_ms", m.processing_time_ms, MAX_MS)?,
    })
}

impl TryFrom<ConversationChanges> for Changes {
    type Error = AppError;

    /// The changes of an update body. At least one is required.
    fn try_from(b: ConversationChanges) -> Result<Changes, AppError> {
        let status = fields::text("conversation_status", b.conversation_status, 32)?
            .map(|s| Status::parse(&s))
            .transpose()?;
        let task_complete = match b.task_complete.map(Flag::value) {
            None => None,
            Some(Some(done)) => Some(i64::from(done)),
            Some(None) => {
                return Err(AppError::invalid(
                    "task_complete",
                    "task_complete must be true or false (or 1 or 0).",
                ))
            }
        };
        let hand_off = b.hand_off_to_human;
        let reason = fields::text("hand_off_to_human_reason", b.hand_off_to_human_reason, 1000)?;
        if hand_off == Some(true) && reason.is_none() {
            return Err(AppError::invalid(
                "hand_off_to_human_reason",
                "hand_off_to_human_reason is required when handing off to a human.",
            ));
        }
        let function_call = b.function_call;
        let function_call_type = fields::text("function_call_type", b.function_call_type, 200)?;
        if function_call == Some(true) && function_call_type.is_none() {
            return Err(AppError::invalid(
                "function_call_type",
                "function_call_type is required when function_call is true.",
            ));
        }
        let c = Changes {
            conversation_status: status,
            task_complete,
            hand_off_to_human: hand_off,
            hand_off_to_human_reason: reason,
            function_call,
            function_call_type,
            thread_id: fields::text("thread_id", b.thread_id, 200)?,
            email_id: fields::text("email_id", b.email_id, 500)?,
            processing_time_ms: fields::count("processing_time_ms", b.processing_time_ms, MAX_MS)?,
            processor_version: fields::text("processor_version", b.processor_version, 64)?,
        };
        let empty = c.conversation_status.is_none()
            && c.task_complete.is_none()
            && c.hand_off_to_human.is_none()
            && c.hand_off_to_human_reason.is_none()
            && c.function_call.is_none()
            && c.function_call_type.is_none()
            && c.thread_id.is_none()
            && c.email_id.is_none()
            && c.processing_time_ms.is_none()
            && c.processor_version.is_none();
        if empty {
            return Err(AppError::invalid(
                "body",
                "Give at least one of conversation_status, task_complete, hand_off_to_human, \
                 function_call, thread_id, email_id, processing_time_ms, processor_version.",
            ));
        }
        Ok(c)
    }
}

/// A map's string leaves, for tests and seeds.
pub fn map_of(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect()
}
