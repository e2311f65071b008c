//! Conversations (docs/conversations.md): creating them from Context Objects, appending
//! messages exactly once, moving their status along allowed transitions, and finding them
//! by the index that answers each question.
//!
//! The operations that read or write the table are methods of [`Conversations`], held on
//! `AppState`; the rules they apply (validating a Context Object, the status moves, reading
//! the search form, what each role sees) are free functions in the submodules.

pub mod context;
pub mod directory;
pub mod reference;
mod results;
pub mod search;
pub mod view;

use chrono::{DateTime, Utc};

use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::config::TtlSection;
use crate::server::contract::conversations::{ContextObject, ConversationChanges, NewMessage};
use crate::server::domain::conversations::ids::{ConversationId, PrimaryChannel};
use crate::server::store::conversations::{
    self as store, Appended, Changes, Conversation, Created, Filters, Found, Partition, Updated,
};
use crate::server::store::query::Start;
use crate::server::store::Store;

pub use crate::server::store::conversations::Status;

/// The statuses' rules. The enum and its stored strings belong to the store; where a
/// status may move is decided here.
impl Status {
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
    pub fn allowed_from(self) -> &'static [Status] {
        use Status::*;
        match self {
            Processing => &[],
            InitialMessageSent => &[Processing],
            ReplyReceived => &[InitialMessageSent, ResponseSent],
            ResponseSent => &[ReplyReceived],
            Completed => &[InitialMessageSent, ReplyReceived, ResponseSent],
            Failed => &[
                Processing,
                InitialMessageSent,
                ReplyReceived,
                ResponseSent,
                Completed,
            ],
        }
    }
}

/// Where a conversation in `status` may go next.
pub fn to_targets(status: Status) -> Vec<&'static str> {
    Status::ALL
        .into_iter()
        .filter(|t| t.allowed_from().contains(&status))
        .map(Status::as_str)
        .collect()
}

/// The answer to a move `to` that the current status did not allow.
fn refused_move(current: Status, to: Option<Status>) -> AppError {
    let allowed = to_targets(current);
    let current = current.as_str();
    let to = to.map(Status::as_str).unwrap_or_default();
    AppError::Conflict(format!(
        "The conversation is {current}; it cannot move to {to}. From {current} it may move \
         to: {}.",
        if allowed.is_empty() {
            "nothing".to_string()
        } else {
            allowed.join(", ")
        }
    ))
}

pub enum CreateOutcome {
    Created(Box<Conversation>),
    /// It was there already, created from the same Context Object: nothing was written.
    Existing(Box<Conversation>),
}

#[derive(Debug, PartialEq)]
pub enum AppendOutcome {
    Added {
        message_count: i64,
    },
    /// The entry id was appended before: nothing was written.
    Duplicate,
}

/// How many conversations a reply-linking lookup answers with.
pub const LOOKUP_SIZE: usize = 25;

/// The conversations area's operations on the table. Built once in `AppState::new` (and by
/// the seeding command, which has no server secret: the console's link references, which
/// need it, are passed to the methods that make or read links).
#[derive(Clone)]
pub struct Conversations {
    store: Store,
    /// How long a conversation lives (its `ttl` attribute): `ttl.conversations_days`.
    ttl_days: i64,
    /// How long the audit record of a contact reveal is kept: `ttl.audit_days`.
    audit_days: i64,
    /// The companies and projects conversations name, for the search.
    pub directory: directory::Directory,
}

impl Conversations {
    pub fn new(store: Store, ttl: &TtlSection) -> Conversations {
        Conversations {
            directory: directory::Directory::new(store.clone()),
            store,
            ttl_days: ttl.conversations_days,
            audit_days: ttl.audit_days,
        }
    }

    /// Creates the conversation a Context Object describes, received at `now`. Sending the
    /// same Context Object again is a no-op; the same conversation with other content is a
    /// conflict.
    pub async fn create(
        &self,
        body: ContextObject,
        now: DateTime<Utc>,
    ) -> Result<CreateOutcome, AppError> {
        let c = context::from_context(body, now, self.ttl_days)?;
        let today = now.timestamp() / 86_400;
        match store::create(&self.store, &c).await? {
            Created::New => {
                self.directory.note(&c, today).await;
                Ok(CreateOutcome::Created(Box::new(c)))
            }
            Created::Exists(old) if old.context_sha256 == c.context_sha256 => {
                // A repeat files it too: the first attempt may have stopped in between.
                self.directory.note(&old, today).await;
                Ok(CreateOutcome::Existing(old))
            }
            Created::Exists(_) => Err(AppError::Conflict(
                "This conversation exists already with a different Context Object; nothing \
                 was changed."
                    .into(),
            )),
        }
    }

    /// Appends one message, received at `now`, unless its entry id is there already.
    pub async fn append(
        &self,
        primary_channel: &PrimaryChannel,
        conversation_id: &ConversationId,
        body: NewMessage,
        now: DateTime<Utc>,
    ) -> Result<AppendOutcome, AppError> {
        let m = context::message(body, now)?;
        let now_iso = iso(now);
        match store::append(&self.store, primary_channel, conversation_id, &m, &now_iso).await? {
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

    /// Applies an update body at `now`; a status change must be an allowed transition.
    pub async fn update(
        &self,
        primary_channel: &PrimaryChannel,
        conversation_id: &ConversationId,
        body: ConversationChanges,
        now: DateTime<Utc>,
    ) -> Result<Conversation, AppError> {
        let changes = Changes::try_from(body)?;
        let to = changes.conversation_status;
        let from = to.map(Status::allowed_from);
        let now_iso = iso(now);
        let updated = store::update(
            &self.store,
            primary_channel,
            conversation_id,
            &changes,
            from,
            &now_iso,
        )
        .await?;
        match updated {
            Updated::Done(c) => Ok(*c),
            Updated::Missing => Err(AppError::NotFound),
            Updated::Refused { current_status } => Err(refused_move(current_status, to)),
        }
    }

    /// One conversation by its table key.
    pub async fn get(
        &self,
        primary_channel: &PrimaryChannel,
        conversation_id: &ConversationId,
    ) -> Result<Conversation, AppError> {
        store::get(&self.store, primary_channel, conversation_id)
            .await?
            .ok_or(AppError::NotFound)
    }

    /// Reply linking: the first [`LOOKUP_SIZE`] conversations of a company number's
    /// partition (see [`search::lookup`]), in index order.
    pub async fn lookup(&self, partition: &Partition) -> Result<Found, AppError> {
        let filters = Filters::default();
        let size = LOOKUP_SIZE;
        Ok(store::search(&self.store, partition, &filters, Start::First, size).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        assert_eq!(
            to_targets(Status::Processing),
            vec!["initial_message_sent", "failed"]
        );
        assert_eq!(
            to_targets(Status::ReplyReceived),
            vec!["response_sent", "completed", "failed"]
        );
        assert_eq!(to_targets(Status::Failed), Vec::<&str>::new());
        assert!(Status::parse("done").is_err());
    }
}
