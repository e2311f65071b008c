//! The conversation item as stored, and the values of its fixed-set attributes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a conversation is in its life. Stored as these exact strings: the status LSI
/// sorts and matches on them, and the API answers with them. The moves a status may make
/// are a domain rule (`domain::conversations`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    #[default]
    #[serde(rename = "processing")]
    Processing,
    #[serde(rename = "initial_message_sent")]
    InitialMessageSent,
    #[serde(rename = "reply_received")]
    ReplyReceived,
    #[serde(rename = "response_sent")]
    ResponseSent,
    #[serde(rename = "completed")]
    Completed,
    #[serde(rename = "failed")]
    Failed,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Processing,
        Status::InitialMessageSent,
        Status::ReplyReceived,
        Status::ResponseSent,
        Status::Completed,
        Status::Failed,
    ];

    /// The stored string (the same as serde writes).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Processing => "processing",
            Status::InitialMessageSent => "initial_message_sent",
            Status::ReplyReceived => "reply_received",
            Status::ResponseSent => "response_sent",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }
}

/// One entry of `messages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub entry_id: String,
    pub message_timestamp: String,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_prompt_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_completion_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_total_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processing_time_ms: Option<i64>,
}

/// A conversation as stored: the attributes docs/data-model.md lists under "conversations",
/// with their types.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub primary_channel: String,
    pub conversation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient_tel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient_email: Option<String>,
    pub company_id: String,
    pub project_id: String,
    pub channel_method: String,
    pub conversation_status: Status,
    pub request_id: String,
    #[serde(default)]
    pub messages: Vec<Message>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_request_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processor_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_id: Option<String>,
    /// 0 or 1: a Number, so it can be the task-complete LSI's sort key.
    pub task_complete: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processing_time_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient_first_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient_last_name: Option<String>,
    pub comms_consent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_data: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company_rep: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_channels: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_initial_message: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_initial_message_from_number: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_initial_message_from_email: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_reply_message: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_reply_message_from_number: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_queue_reply_message_from_email: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai_config: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_config: Option<Map<String, Value>>,
    pub function_call: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call_type: Option<String>,
    pub hand_off_to_human: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_off_to_human_reason: Option<String>,
    pub ttl: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi_recipient_tel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi_recipient_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi_company_whatsapp_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi_company_sms_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gsi_company_email: Option<String>,
    /// SHA-256 of the Context Object it was created from: a second create of the same
    /// conversation with other content is a conflict, not a silent no-op.
    #[serde(default)]
    pub context_sha256: String,
    #[serde(default)]
    pub message_count: i64,
    #[serde(default)]
    pub item_bytes: i64,
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::AttributeValue;

    use super::Status;

    #[test]
    fn statuses_are_stored_as_their_strings() {
        for st in Status::ALL {
            let v: AttributeValue = serde_dynamo::to_attribute_value(st).unwrap();
            assert_eq!(v, AttributeValue::S(st.as_str().to_string()));
            let back: Status = serde_dynamo::from_attribute_value(v).unwrap();
            assert_eq!(back, st);
        }
        let unknown = AttributeValue::S("done".into());
        assert!(serde_dynamo::from_attribute_value::<_, Status>(unknown).is_err());
    }
}
