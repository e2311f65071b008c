//! What the Conversations pages show. Personal data arrives here already masked for the
//! viewer's role: the server never sends a browser what its user may not see.

use serde::{Deserialize, Serialize};

/// The Conversations search form, as the page's query string carries it (every field may
/// be empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// A recipient phone (E.164, spaces allowed) or email.
    pub recipient: String,
    pub company: String,
    pub project: String,
    /// The company's sending number or address (reply linking).
    pub company_number: String,
    pub channel: String,
    pub status: String,
    /// `""`, `"0"` or `"1"`.
    pub task: String,
    /// `YYYY-MM-DD`, inclusive.
    pub from: String,
    pub to: String,
    /// A conversation id (or its link reference).
    #[serde(default)]
    pub conversation: String,
    /// Page cursors.
    pub after: Option<String>,
    pub before: Option<String>,
}

/// A company the search knows by name (the company directory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompanyChoice {
    pub company_id: String,
    /// Empty when no conversation named it.
    pub name: String,
}

/// One row of search results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationRow {
    /// Opaque link reference (the table key, encrypted).
    pub r: String,
    pub conversation_id: String,
    pub recipient: String,
    pub name: String,
    pub company: String,
    pub project: String,
    pub channel: String,
    pub status: String,
    pub task_complete: bool,
    pub hand_off: bool,
    pub messages: i64,
    pub created_at: String,
    /// How long ago, at the time of the search ("5 min ago").
    #[serde(default)]
    pub created_ago: String,
}

/// A search's answer: one page, and how it was answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchPage {
    /// False when the form asked nothing yet.
    pub searched: bool,
    pub rows: Vec<ConversationRow>,
    pub next: Option<String>,
    pub prev: Option<String>,
    /// The index whose `Query` answered it.
    pub index: String,
    /// How many match, when that was cheap to learn; `exact` false means "at least".
    pub count: Option<u64>,
    pub count_exact: bool,
    /// The recipient searched for, masked.
    #[serde(default)]
    pub recipient: Option<String>,
    /// The company searched for, when the directory knows it.
    #[serde(default)]
    pub company: Option<CompanyChoice>,
    /// Several companies' names contain what was typed: the person picks one.
    #[serde(default)]
    pub companies: Vec<CompanyChoice>,
    /// Newest first (a recipient's search), else grouped by project.
    #[serde(default)]
    pub newest_first: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageView {
    pub entry_id: String,
    pub timestamp: String,
    pub role: String,
    /// Empty when hidden from this role.
    pub content: String,
    pub content_hidden: bool,
    pub chars: usize,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub processing_time_ms: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationDetail {
    pub r: String,
    pub conversation_id: String,
    pub company: String,
    pub project: String,
    pub channel: String,
    pub status: String,
    pub task_complete: bool,
    pub comms_consent: bool,
    pub function_call: bool,
    pub function_call_type: Option<String>,
    pub hand_off: bool,
    pub hand_off_reason: Option<String>,
    pub thread_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub processing_time_ms: Option<i64>,
    pub recipient_tel: Option<String>,
    pub recipient_email: Option<String>,
    pub recipient_name: String,
    /// True when this admin revealed the contact details (audited) in the last minutes.
    pub revealed: bool,
    /// When the reveal stops showing them (RFC 3339, UTC), while it does.
    #[serde(default)]
    pub revealed_until: Option<String>,
    pub can_reveal: bool,
    pub messages: Vec<MessageView>,
    /// Pretty JSON of the configuration maps, masked like the rest.
    pub ai_config: Option<String>,
    pub channel_config: Option<String>,
    pub project_data: Option<String>,
    pub company_rep: Option<String>,
    /// The middleware's state (docs/events.md) exists for this conversation id.
    pub has_middleware_state: bool,
    /// The link reference of the middleware's state of this conversation, when it has one.
    pub middleware_ref: Option<String>,
    /// A fresh key for the reveal form.
    pub form_key: String,
}
