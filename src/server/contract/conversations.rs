//! `/api/v1/conversations`: what channel processors send and get back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::Flag;

/// A JSON object stored as one attribute: at most 32 KiB of JSON, nested at most 31
/// levels of maps and lists deep; numbers are 0 or between 1e-130 and 1e126 in size with
/// at most 38 significant digits; no empty member names.
pub type Document = Map<String, Value>;

/// The Channel Router's sending numbers and addresses (other members are kept as sent).
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
pub struct ChannelConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 254)]
    pub company_whatsapp_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 254)]
    pub company_sms_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 254)]
    pub company_email: Option<String>,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub other: BTreeMap<String, Value>,
}

/// A Context Object from the Channel Router: the conversation to create.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct ContextObject {
    #[schema(max_length = 512, min_length = 1)]
    pub conversation_id: String,
    /// `whatsapp`, `email` or `sms`.
    #[schema(max_length = 16)]
    pub channel_method: String,
    /// E.164; required for WhatsApp and SMS.
    #[schema(max_length = 32)]
    pub recipient_tel: Option<String>,
    /// Required for email.
    #[schema(max_length = 254)]
    pub recipient_email: Option<String>,
    #[schema(max_length = 128, min_length = 1)]
    pub company_id: String,
    #[schema(max_length = 128, min_length = 1)]
    pub project_id: String,
    #[schema(max_length = 128, min_length = 1)]
    pub request_id: String,
    #[schema(max_length = 200)]
    pub company_name: Option<String>,
    #[schema(max_length = 200)]
    pub project_name: Option<String>,
    #[schema(max_length = 64)]
    pub project_status: Option<String>,
    #[schema(max_length = 100)]
    pub recipient_first_name: Option<String>,
    #[schema(max_length = 100)]
    pub recipient_last_name: Option<String>,
    pub comms_consent: Option<bool>,
    /// RFC 3339 with an offset.
    #[schema(max_length = 64)]
    pub initial_request_timestamp: Option<String>,
    #[schema(max_length = 64)]
    pub router_version: Option<String>,
    #[schema(max_length = 64)]
    pub processor_version: Option<String>,
    #[schema(max_length = 200)]
    pub thread_id: Option<String>,
    #[schema(max_length = 500)]
    pub email_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub project_data: Option<Document>,
    /// As `project_data`.
    #[schema(value_type = Option<Object>)]
    pub company_rep: Option<Document>,
    /// As `project_data`.
    #[schema(value_type = Option<Object>)]
    pub ai_config: Option<Document>,
    /// Limits as `project_data`.
    pub channel_config: Option<ChannelConfig>,
    /// Of `whatsapp`, `email`, `sms`.
    #[schema(max_items = 3)]
    pub allowed_channels: Option<Vec<String>>,
    pub auto_queue_initial_message: Option<bool>,
    /// E.164 numbers.
    #[schema(max_items = 50)]
    pub auto_queue_initial_message_from_number: Option<Vec<String>>,
    #[schema(max_items = 50)]
    pub auto_queue_initial_message_from_email: Option<Vec<String>>,
    pub auto_queue_reply_message: Option<bool>,
    #[schema(max_items = 50)]
    pub auto_queue_reply_message_from_number: Option<Vec<String>>,
    #[schema(max_items = 50)]
    pub auto_queue_reply_message_from_email: Option<Vec<String>>,
}

/// The answer to a create.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Created {
    /// False when it existed with the same content (nothing was written).
    pub created: bool,
    pub conversation_status: String,
    pub message_count: i64,
}

/// One message to append.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct NewMessage {
    /// Appending the same entry id again is a no-op.
    #[schema(max_length = 128, min_length = 1)]
    pub entry_id: String,
    /// `user` or `assistant`.
    #[schema(max_length = 16)]
    pub role: String,
    #[schema(max_length = 100000, min_length = 1)]
    pub content: String,
    /// RFC 3339 with an offset; now when absent.
    #[schema(max_length = 64)]
    pub message_timestamp: Option<String>,
    #[schema(minimum = 0, maximum = 100000000)]
    pub ai_prompt_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 100000000)]
    pub ai_completion_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 100000000)]
    pub ai_total_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 86400000)]
    pub processing_time_ms: Option<i64>,
}

/// The answer to an append.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Appended {
    pub appended: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_count: Option<i64>,
    /// True when this entry id was appended before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<bool>,
}

/// What to change; at least one member.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
pub struct ConversationChanges {
    /// processing → initial_message_sent → reply_received ⇄ response_sent → completed;
    /// any → failed.
    #[schema(max_length = 32)]
    pub conversation_status: Option<String>,
    /// `true`/`false` or `1`/`0`.
    #[schema(value_type = Option<bool>)]
    pub task_complete: Option<Flag>,
    pub hand_off_to_human: Option<bool>,
    /// Required when handing off.
    #[schema(max_length = 1000)]
    pub hand_off_to_human_reason: Option<String>,
    pub function_call: Option<bool>,
    /// Required when `function_call` is true.
    #[schema(max_length = 200)]
    pub function_call_type: Option<String>,
    #[schema(max_length = 200)]
    pub thread_id: Option<String>,
    #[schema(max_length = 500)]
    pub email_id: Option<String>,
    #[schema(minimum = 0, maximum = 86400000)]
    pub processing_time_ms: Option<i64>,
    #[schema(max_length = 64)]
    pub processor_version: Option<String>,
}

/// The answer to an update.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Updated {
    pub conversation_status: String,
    pub task_complete: bool,
    pub hand_off_to_human: bool,
    pub function_call: bool,
    pub updated_at: String,
}

/// A stored conversation as the API returns it.
#[derive(ToSchema)]
#[allow(dead_code)] // The answer is the stored item itself; this describes it.
pub struct Conversation {
    primary_channel: String,
    conversation_id: String,
    channel_method: String,
    conversation_status: String,
    company_id: String,
    project_id: String,
    task_complete: i64,
    comms_consent: bool,
    messages: Vec<BTreeMap<String, Value>>,
    created_at: String,
    updated_at: String,
}

/// `GET /api/v1/conversations/lookup`'s query.
#[derive(Clone, Debug, Deserialize)]
pub struct LookupQuery {
    pub channel: Option<String>,
    pub company_number: Option<String>,
    pub recipient: Option<String>,
}

/// One conversation a lookup found.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ConversationRef {
    pub primary_channel: String,
    pub conversation_id: String,
    pub conversation_status: String,
    pub channel_method: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A lookup's first page.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Lookup {
    pub conversations: Vec<ConversationRef>,
    /// True when there are more than this page holds.
    pub more: bool,
}
