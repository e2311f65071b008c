//! The bodies of the REST API as the OpenAPI document describes them. The handlers read
//! JSON field by field (to name the bad field in a 400); these types say what they read.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::{ToResponse, ToSchema};

/// `application/problem+json` (RFC 9457); `field` names the bad input.
#[derive(ToSchema)]
#[schema(as = Problem)]
#[allow(dead_code)]
pub struct ProblemDoc {
    #[schema(rename = "type")]
    kind: String,
    title: String,
    status: u16,
    detail: String,
    field: Option<String>,
}

/// Every error answer.
#[derive(ToResponse)]
#[response(
    description = "A problem (RFC 9457)",
    content_type = "application/problem+json"
)]
#[allow(dead_code)]
pub struct ProblemResponse(ProblemDoc);

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct WhoAmI {
    name: String,
    scopes: Vec<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Switches {
    safe_mode: bool,
    automation_enabled: bool,
    version: u64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SwitchChange {
    /// `safe_mode` or `automation_enabled`.
    switch: String,
    enable: bool,
    /// The version you read.
    expected_version: u64,
    #[schema(max_length = 500, min_length = 1)]
    reason: String,
    /// Required to turn safe mode off or automation on.
    confirm: Option<bool>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Customer {
    #[schema(max_length = 254)]
    email: Option<String>,
    #[schema(max_length = 32)]
    phone: Option<String>,
    #[schema(max_length = 128)]
    id: Option<String>,
}

/// One customer message from the helpdesk.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Event {
    #[schema(max_length = 128, min_length = 1, pattern = "^[A-Za-z0-9_.@+/-]+$")]
    conversation_id: String,
    #[schema(max_length = 128, pattern = "^[A-Za-z0-9_.@+/-]+$")]
    message_id: Option<String>,
    /// RFC 3339.
    created_at: String,
    #[schema(max_length = 32)]
    channel: String,
    text: String,
    customer: Option<Customer>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct EventAnswer {
    event_key: String,
    duplicate: bool,
    status: String,
}

/// A Context Object from the Channel Router (design doc 2).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ContextObject {
    #[schema(max_length = 512, min_length = 1)]
    conversation_id: String,
    /// `whatsapp`, `email` or `sms`.
    #[schema(max_length = 16)]
    channel_method: String,
    /// E.164; required for WhatsApp and SMS.
    #[schema(max_length = 32)]
    recipient_tel: Option<String>,
    /// Required for email.
    #[schema(max_length = 254)]
    recipient_email: Option<String>,
    #[schema(max_length = 128, min_length = 1)]
    company_id: String,
    #[schema(max_length = 128, min_length = 1)]
    project_id: String,
    #[schema(max_length = 128, min_length = 1)]
    request_id: String,
    #[schema(max_length = 200)]
    company_name: Option<String>,
    #[schema(max_length = 200)]
    project_name: Option<String>,
    #[schema(max_length = 100)]
    recipient_first_name: Option<String>,
    #[schema(max_length = 100)]
    recipient_last_name: Option<String>,
    comms_consent: Option<bool>,
    initial_request_timestamp: Option<String>,
    #[schema(max_length = 64)]
    router_version: Option<String>,
    /// At most 32 KiB of JSON, nested at most 31 levels of maps and lists deep; numbers are 0 or between
    /// 1e-130 and 1e126 in size with at most 38 significant digits; no empty member names.
    project_data: Option<BTreeMap<String, Value>>,
    /// As `project_data`.
    company_rep: Option<BTreeMap<String, Value>>,
    /// As `project_data`.
    ai_config: Option<BTreeMap<String, Value>>,
    /// `company_whatsapp_number`, `company_sms_number`, `company_email`, …; limits as
    /// `project_data`.
    channel_config: Option<BTreeMap<String, Value>>,
    #[schema(max_items = 3)]
    allowed_channels: Option<Vec<String>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Created {
    created: bool,
    conversation_status: String,
    message_count: i64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
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

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ConversationChanges {
    /// processing → initial_message_sent → reply_received ⇄ response_sent → completed; any → failed.
    #[schema(max_length = 32)]
    conversation_status: Option<String>,
    task_complete: Option<bool>,
    hand_off_to_human: Option<bool>,
    #[schema(max_length = 1000)]
    hand_off_to_human_reason: Option<String>,
    function_call: Option<bool>,
    #[schema(max_length = 200)]
    function_call_type: Option<String>,
    #[schema(max_length = 200)]
    thread_id: Option<String>,
    #[schema(max_length = 500)]
    email_id: Option<String>,
    #[schema(minimum = 0, maximum = 86400000)]
    processing_time_ms: Option<i64>,
    #[schema(max_length = 64)]
    processor_version: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Updated {
    conversation_status: String,
    task_complete: bool,
    hand_off_to_human: bool,
    function_call: bool,
    updated_at: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct NewMessage {
    #[schema(max_length = 128, min_length = 1)]
    entry_id: String,
    /// `user` or `assistant`.
    #[schema(max_length = 16)]
    role: String,
    #[schema(max_length = 100000, min_length = 1)]
    content: String,
    message_timestamp: Option<String>,
    #[schema(minimum = 0, maximum = 100000000)]
    ai_prompt_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 100000000)]
    ai_completion_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 100000000)]
    ai_total_tokens: Option<i64>,
    #[schema(minimum = 0, maximum = 86400000)]
    processing_time_ms: Option<i64>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Appended {
    appended: bool,
    message_count: Option<i64>,
    duplicate: Option<bool>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ConversationRef {
    primary_channel: String,
    conversation_id: String,
    conversation_status: String,
    channel_method: String,
    created_at: String,
    updated_at: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Lookup {
    conversations: Vec<ConversationRef>,
    more: bool,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TenantSettings {
    #[schema(max_length = 200)]
    title: Option<String>,
    /// A lifetime like `30d` or `12h`.
    #[schema(max_length = 16)]
    ttl: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TenantSaved {
    tenant: String,
    title: String,
    ttl: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct InboxSettings {
    #[schema(max_length = 200)]
    title: Option<String>,
    #[schema(max_length = 1000)]
    description: Option<String>,
    /// `{"default": "30d", "<category>": "7d"}`.
    ttl: Option<BTreeMap<String, String>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct InboxSaved {
    inbox: String,
    title: String,
    description: String,
    ttl: BTreeMap<String, String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Audience {
    /// `users` or `everyone`.
    #[schema(max_length = 16)]
    kind: String,
    #[schema(max_items = 20000)]
    uids: Option<Vec<String>>,
    #[schema(max_length = 200)]
    label: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PublishRequest {
    audience: Audience,
    #[schema(max_length = 128)]
    category: Option<String>,
    #[schema(max_length = 200, min_length = 1)]
    title: String,
    #[schema(max_length = 10000)]
    body: String,
    /// http(s) only.
    #[schema(max_length = 2000)]
    cta_uri: Option<String>,
    #[schema(max_length = 16)]
    ttl: Option<String>,
    #[schema(max_length = 128)]
    host_system_id: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PublishAnswer {
    message_id: String,
    recipients: i64,
    audience: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct FeedItem {
    id: String,
    public: bool,
    title: String,
    body: String,
    cta_uri: Option<String>,
    category: Option<String>,
    received_ms: i64,
    expires_s: i64,
    read: bool,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Feed {
    items: Vec<FeedItem>,
    next: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Counts {
    total: i64,
    read: i64,
    unread: i64,
    unread_by_category: BTreeMap<String, i64>,
    public_published: i64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ReadAnswer {
    read: bool,
    already: bool,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ReadAllAnswer {
    marked: i64,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Measurement {
    #[schema(max_length = 128, min_length = 1)]
    measurement_id: String,
    #[schema(max_length = 128, min_length = 1)]
    user_id: String,
    weight: f64,
    /// `kg`, `lb` or `g`.
    #[schema(max_length = 8)]
    unit: String,
    /// RFC 3339 with offset.
    #[schema(max_length = 64)]
    timestamp: String,
    #[schema(max_length = 64, min_length = 1)]
    source: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MeasurementResult {
    measurement_id: String,
    user_id: String,
    /// `accepted` or `override`.
    status: String,
    weight_kg: f64,
    timestamp: String,
    source: String,
    seq: i64,
    correlation_id: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MeasurementBatch {
    #[schema(max_items = 500)]
    measurements: Vec<Measurement>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BatchItem {
    index: i64,
    /// accepted, override, duplicate, conflict, out_of_order, invalid, skipped, unavailable
    status: String,
    http_status: u16,
    /// out_of_order: the user's last accepted timestamp.
    last_accepted: Option<String>,
    /// out_of_order: the earliest timestamp accepted now (resubmit from it).
    accepted_from: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BatchReport {
    items: Vec<BatchItem>,
    summary: BTreeMap<String, i64>,
    /// The items to send again, by index, in the order to send them (skipped and
    /// unavailable ones, each user's oldest first).
    retry_order: Vec<i64>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Health {
    status: String,
    dynamodb: String,
}
