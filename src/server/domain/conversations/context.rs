//! The Context Object a channel processor creates a conversation from, and the other
//! request bodies of the conversations API: validated into the stored shape, every error
//! naming its field.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

use crate::model::AppError;
use crate::server::domain::auth::sha256_hex;
use crate::server::domain::fields::{e164, email, iso_ms, Fields};
use crate::server::domain::limits;
use crate::server::store::conversations::{Changes, Conversation, Message};

pub const CHANNELS: &[&str] = &["whatsapp", "email", "sms"];
/// Larger bodies are refused with 413 before they are read.
pub const CONTEXT_BODY_LIMIT: usize = 128 * 1024;
pub const MESSAGE_BODY_LIMIT: usize = 128 * 1024;
/// One message's text.
pub const MAX_CONTENT_CHARS: usize = 100_000;
const MAX_MAP_BYTES: usize = 32 * 1024;
const MAX_TOKENS: i64 = 100_000_000;
const MAX_MS: i64 = 86_400_000;

fn channel(raw: &str, name: &str) -> Result<String, AppError> {
    let lower = raw.to_ascii_lowercase();
    if CHANNELS.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err(AppError::invalid(
            name,
            format!("{name} must be one of whatsapp, email, sms."),
        ))
    }
}

/// A conversation id from the Channel Router: any printable text up to 512 characters
/// and [`limits::CONVERSATION_ID_BYTES`] bytes (it is the table's sort key; it contains
/// `#` separators).
fn conversation_id(f: &Fields) -> Result<String, AppError> {
    let id = f.req_str("conversation_id", 512)?;
    limits::key_part("conversation_id", &id, limits::CONVERSATION_ID_BYTES)?;
    Ok(id)
}

/// The stored conversation a Context Object describes, at `now`, living `ttl_days`.
pub fn from_context(
    v: &Value,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Conversation, AppError> {
    let f = Fields::of(v, "")?;
    let conversation_id = conversation_id(&f)?;
    let channel_method = channel(&f.req_str("channel_method", 16)?, "channel_method")?;
    let recipient_tel = f
        .opt_str("recipient_tel", 32)?
        .map(|t| e164(&t, "recipient_tel"))
        .transpose()?;
    let recipient_email = f
        .opt_str("recipient_email", 254)?
        .map(|e| email(&e, "recipient_email"))
        .transpose()?;
    let primary_channel = match channel_method.as_str() {
        "email" => recipient_email.clone().ok_or_else(|| {
            AppError::invalid(
                "recipient_email",
                "recipient_email is required when channel_method is email.",
            )
        })?,
        _ => recipient_tel.clone().ok_or_else(|| {
            AppError::invalid(
                "recipient_tel",
                format!("recipient_tel is required when channel_method is {channel_method}."),
            )
        })?,
    };
    let channel_config = f.opt_object("channel_config", MAX_MAP_BYTES)?;
    let cc_value = channel_config.clone().map(Value::Object);
    let cc = match &cc_value {
        Some(v) => Some(Fields::of(v, "channel_config")?),
        None => None,
    };
    let cc_field = |name: &str, check: fn(&str, &str) -> Result<String, AppError>| match &cc {
        Some(cc) => cc
            .opt_str(name, 254)?
            .map(|x| check(&x, &cc.name(name)))
            .transpose(),
        None => Ok(None),
    };
    let company_whatsapp = cc_field("company_whatsapp_number", e164)?;
    let company_sms = cc_field("company_sms_number", e164)?;
    let company_email = cc_field("company_email", email)?;
    let phones = |s: &str, n: &str| e164(s, n);
    let emails = |s: &str, n: &str| email(s, n);
    let channels = |s: &str, n: &str| channel(s, n);
    let now_iso = iso_ms(now);
    let c = Conversation {
        primary_channel,
        conversation_id,
        gsi_recipient_tel: recipient_tel.clone(),
        gsi_recipient_email: recipient_email.clone(),
        gsi_company_whatsapp_number: company_whatsapp.filter(|_| channel_method == "whatsapp"),
        gsi_company_sms_number: company_sms.filter(|_| channel_method == "sms"),
        gsi_company_email: company_email.filter(|_| channel_method == "email"),
        recipient_tel,
        recipient_email,
        company_id: f.req_str("company_id", 128)?,
        project_id: f.req_str("project_id", 128)?,
        request_id: f.req_str("request_id", 128)?,
        channel_method,
        conversation_status: super::PROCESSING.into(),
        messages: Vec::new(),
        created_at: now_iso.clone(),
        updated_at: now_iso,
        initial_request_timestamp: f.opt_time("initial_request_timestamp")?.map(iso_ms),
        processor_version: f.opt_str("processor_version", 64)?,
        router_version: f.opt_str("router_version", 64)?,
        thread_id: f.opt_str("thread_id", 200)?,
        email_id: f.opt_str("email_id", 500)?,
        task_complete: 0,
        processing_time_ms: None,
        recipient_first_name: f.opt_str("recipient_first_name", 100)?,
        recipient_last_name: f.opt_str("recipient_last_name", 100)?,
        comms_consent: f.opt_bool("comms_consent")?.unwrap_or(false),
        project_data: f.opt_object("project_data", MAX_MAP_BYTES)?,
        company_name: f.opt_str("company_name", 200)?,
        project_name: f.opt_str("project_name", 200)?,
        company_rep: f.opt_object("company_rep", MAX_MAP_BYTES)?,
        allowed_channels: f.opt_list("allowed_channels", 3, channels)?,
        project_status: f.opt_str("project_status", 64)?,
        auto_queue_initial_message: f.opt_bool("auto_queue_initial_message")?,
        auto_queue_initial_message_from_number: f.opt_list(
            "auto_queue_initial_message_from_number",
            50,
            phones,
        )?,
        auto_queue_initial_message_from_email: f.opt_list(
            "auto_queue_initial_message_from_email",
            50,
            emails,
        )?,
        auto_queue_reply_message: f.opt_bool("auto_queue_reply_message")?,
        auto_queue_reply_message_from_number: f.opt_list(
            "auto_queue_reply_message_from_number",
            50,
            phones,
        )?,
        auto_queue_reply_message_from_email: f.opt_list(
            "auto_queue_reply_message_from_email",
            50,
            emails,
        )?,
        ai_config: f.opt_object("ai_config", MAX_MAP_BYTES)?,
        channel_config,
        function_call: false,
        function_call_type: None,
        hand_off_to_human: false,
        hand_off_to_human_reason: None,
        ttl: (now + Duration::days(ttl_days)).timestamp(),
        context_sha256: String::new(),
        message_count: 0,
        item_bytes: 0,
    };
    Ok(Conversation {
        context_sha256: fingerprint(&c),
        ..c
    })
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

/// One message to append.
pub fn message(v: &Value, now: DateTime<Utc>) -> Result<Message, AppError> {
    let f = Fields::of(v, "")?;
    let role = f.req_str("role", 16)?;
    if role != "user" && role != "assistant" {
        return Err(AppError::invalid("role", "role must be user or assistant."));
    }
    let content = match v.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(AppError::invalid("content", "content is required."))
        }
        Some(_) => return Err(AppError::invalid("content", "content must be a string.")),
    };
    if content.chars().count() > MAX_CONTENT_CHARS {
        return Err(AppError::invalid(
            "content",
            format!("content is at most {MAX_CONTENT_CHARS} characters."),
        ));
    }
    let entry_id = f.req_str("entry_id", 128)?;
    Ok(Message {
        entry_id,
        message_timestamp: iso_ms(f.opt_time("message_timestamp")?.unwrap_or(now)),
        role,
        content,
        ai_prompt_tokens: f.opt_count("ai_prompt_tokens", MAX_TOKENS)?,
        ai_completion_tokens: f.opt_count("ai_completion_tokens", MAX_TOKENS)?,
        ai_total_tokens: f.opt_count("ai_total_tokens", MAX_TOKENS)?,
        processing_time_ms: f.opt_count("processing_time_ms", MAX_MS)?,
    })
}

/// The changes of an update body. At least one is required.
pub fn changes(v: &Value) -> Result<Changes, AppError> {
    let f = Fields::of(v, "")?;
    let status = f
        .opt_str("conversation_status", 32)?
        .map(|s| super::Status::parse(&s).map(|st| st.as_str().to_string()))
        .transpose()?;
    let task_complete = match v.get("task_complete") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        Some(Value::Number(n)) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => n.as_i64(),
        Some(_) => {
            return Err(AppError::invalid(
                "task_complete",
                "task_complete must be true or false (or 1 or 0).",
            ))
        }
    };
    let hand_off = f.opt_bool("hand_off_to_human")?;
    let reason = f.opt_str("hand_off_to_human_reason", 1000)?;
    if hand_off == Some(true) && reason.is_none() {
        return Err(AppError::invalid(
            "hand_off_to_human_reason",
            "hand_off_to_human_reason is required when handing off to a human.",
        ));
    }
    let function_call = f.opt_bool("function_call")?;
    let function_call_type = f.opt_str("function_call_type", 200)?;
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
        thread_id: f.opt_str("thread_id", 200)?,
        email_id: f.opt_str("email_id", 500)?,
        processing_time_ms: f.opt_count("processing_time_ms", MAX_MS)?,
        processor_version: f.opt_str("processor_version", 64)?,
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

/// A map's string leaves, for tests and seeds.
pub fn map_of(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect()
}
