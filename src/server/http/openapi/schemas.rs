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
    reason: String,
    /// Required to turn safe mode off or automation on.
    confirm: Option<bool>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Customer {
    email: Option<String>,
    phone: Option<String>,
    id: Option<String>,
}

/// One customer message from the helpdesk.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Event {
    conversation_id: String,
    message_id: Option<String>,
    /// RFC 3339.
    created_at: String,
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
    conversation_id: String,
    /// `whatsapp`, `email` or `sms`.
    channel_method: String,
    /// E.164; required for WhatsApp and SMS.
    recipient_tel: Option<String>,
    /// Required for email.
    recipient_email: Option<String>,
    company_id: String,
    project_id: String,
    request_id: String,
    company_name: Option<String>,
    project_name: Option<String>,
    recipient_first_name: Option<String>,
    recipient_last_name: Option<String>,
    comms_consent: Option<bool>,
    initial_request_timestamp: Option<String>,
    router_version: Option<String>,
    project_data: Option<BTreeMap<String, Value>>,
    company_rep: Option<BTreeMap<String, Value>>,
    ai_config: Option<BTreeMap<String, Value>>,
    /// `company_whatsapp_number`, `company_sms_number`, `company_email`, …
    channel_config: Option<BTreeMap<String, Value>>,
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
    conversation_status: Option<String>,
    task_complete: Option<bool>,
    hand_off_to_human: Option<bool>,
    hand_off_to_human_reason: Option<String>,
    function_call: Option<bool>,
    function_call_type: Option<String>,
    thread_id: Option<String>,
    email_id: Option<String>,
    processing_time_ms: Option<i64>,
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
    entry_id: String,
    /// `user` or `assistant`.
    role: String,
    content: String,
    message_timestamp: Option<String>,
    ai_prompt_tokens: Option<i64>,
    ai_completion_tokens: Option<i64>,
    ai_total_tokens: Option<i64>,
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
    title: Option<String>,
    /// A lifetime like `30d` or `12h`.
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
    title: Option<String>,
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
    kind: String,
    uids: Option<Vec<String>>,
    label: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PublishRequest {
    audience: Audience,
    category: Option<String>,
    title: String,
    body: String,
    /// http(s) only.
    cta_uri: Option<String>,
    ttl: Option<String>,
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
    measurement_id: String,
    user_id: String,
    weight: f64,
    /// `kg`, `lb` or `g`.
    unit: String,
    /// RFC 3339 with offset.
    timestamp: String,
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
    measurements: Vec<Measurement>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BatchItem {
    index: i64,
    /// accepted, override, duplicate, conflict, out_of_order, invalid, skipped
    status: String,
    http_status: u16,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BatchReport {
    items: Vec<BatchItem>,
    summary: BTreeMap<String, i64>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Health {
    status: String,
    dynamodb: String,
}
