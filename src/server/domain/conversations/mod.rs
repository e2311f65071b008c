//! Conversations (design doc 2): creating them from Context Objects, appending messages
//! exactly once, moving their status along allowed transitions, and finding them by
//! the index that answers each question.

pub mod context;
pub mod reference;
pub mod search;
pub mod view;

use chrono::{DateTime, Utc};

use crate::model::AppError;
use crate::server::contract::conversations::{ContextObject, ConversationChanges, NewMessage};
use crate::server::domain::fields::iso_ms;
use crate::server::store::conversations::{
    self as store, Appended, Changes, Conversation, Created, Updated,
};
use crate::server::store::Store;

pub const PROCESSING: &str = "processing";

/// A conversation's status and the moves it may make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Processing,
    InitialMessageSent,
    ReplyReceived,
    ResponseSent,
    Completed,
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

    pub fn parse(s: &str) -> Result<Status, AppError> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                AppError::invalid(
                    "conversation_status",
                    format!(
                        "conversation_status must be one of {}.",
                        Status::ALL.map(Status::as_str).join(", ")
                    ),
                )
            })
    }

    /// The statuses a conversation may come to `self` from: processing → initial message
    /// sent → reply received ⇄ response sent → completed; anything → failed.
    pub fn allowed_from(self) -> &'static [&'static str] {
        match self {
            Status::Processing => &[],
            Status::InitialMessageSent => &["processing"],
            Status::ReplyReceived => &["initial_message_sent", "response_sent"],
            Status::ResponseSent => &["reply_received"],
            Status::Completed => &["initial_message_sent", "reply_received", "response_sent"],
            Status::Failed => &[
                "processing",
                "initial_message_sent",
                "reply_received",
                "response_sent",
                "completed",
            ],
        }
    }
}

pub enum CreateOutcome {
    Created(Box<Conversation>),
    /// It was there already, created from the same Context Object: nothing was written.
    Existing(Box<Conversation>),
}

/// Creates the conversation a Context Object describes. Sending the same Context Object
/// again is a no-op; the same conversation with other content is a conflict.
pub async fn create(
    store: &Store,
    body: ContextObject,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<CreateOutcome, AppError> {
    let c = context::from_context(body, now, ttl_days)?;
    match store::create(store, &c).await? {
        Created::New => Ok(CreateOutcome::Created(Box::new(c))),
        Created::Exists(old) if old.context_sha256 == c.context_sha256 => {
            Ok(CreateOutcome::Existing(old))
        }
        Created::Exists(_) => Err(AppError::Conflict(
            "This conversation exists already with a different Context Object; nothing was changed."
                .into(),
        )),
    }
}

#[derive(Debug, PartialEq)]
pub enum AppendOutcome {
    Added {
        message_count: i64,
    },
    /// The entry id was appended before: nothing was written.
    Duplicate,
}

pub async fn append(
    store: &Store,
    primary_channel: &str,
    conversation_id: &str,
    body: NewMessage,
    now: DateTime<Utc>,
) -> Result<AppendOutcome, AppError> {
    let m = context::message(body, now)?;
    match store::append(store, primary_channel, conversation_id, &m, &iso_ms(now)).await? {
        Appended::Added { message_count } => Ok(AppendOutcome::Added { message_count }),
        Appended::Duplicate => Ok(AppendOutcome::Duplicate),
        Appended::Missing => Err(AppError::NotFound),
        Appended::Full { used, needed } => Err(AppError::TooLarge(format!(
            "This conversation holds {used} of {} bytes; the message needs {needed} more. \
             Start a new conversation or shorten the message.",
            store::APPEND_BUDGET_BYTES
        ))),
    }
}

/// Applies an update body; a status change must be an allowed transition.
pub async fn update(
    store: &Store,
    primary_channel: &str,
    conversation_id: &str,
    body: ConversationChanges,
    now: DateTime<Utc>,
) -> Result<Conversation, AppError> {
    let changes = Changes::try_from(body)?;
    let to = changes
        .conversation_status
        .as_deref()
        .map(Status::parse)
        .transpose()?;
    let from = to.map(Status::allowed_from);
    match store::update(
        store,
        primary_channel,
        conversation_id,
        &changes,
        from,
        &iso_ms(now),
    )
    .await?
    {
        Updated::Done(c) => Ok(*c),
        Updated::Missing => Err(AppError::NotFound),
        Updated::Refused { current_status } => {
            let to = to.map(Status::as_str).unwrap_or_default();
            let allowed = to_targets(&current_status);
            Err(AppError::Conflict(format!(
                "The conversation is {current_status}; it cannot move to {to}. From \
                 {current_status} it may move to: {}.",
                if allowed.is_empty() {
                    "nothing".to_string()
                } else {
                    allowed.join(", ")
                }
            )))
        }
    }
}

/// Where a conversation in `status` may go next.
pub fn to_targets(status: &str) -> Vec<&'static str> {
    Status::ALL
        .into_iter()
        .filter(|t| t.allowed_from().contains(&status))
        .map(Status::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        assert_eq!(
            to_targets("processing"),
            vec!["initial_message_sent", "failed"]
        );
        assert_eq!(
            to_targets("reply_received"),
            vec!["response_sent", "completed", "failed"]
        );
        assert_eq!(to_targets("failed"), Vec::<&str>::new());
        assert!(Status::parse("done").is_err());
    }
}
