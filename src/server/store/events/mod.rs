//! The helpdesk events' tables (docs/events.md; keys and indexes in docs/data-model.md):
//! the event and side-effect records of `rp_mw_idempotency-<env>` (Table A) and the
//! per-conversation state of `rp_mw_conversation_state-<env>` (Table B).
//!
//! Both kinds of Table A record are claims: a worker puts the record with its own nonce
//! and a lease, and every later write of that worker is conditioned on the nonce, so a
//! worker that lost its claim (it was slow, its lease ran out, another took over) can
//! never overwrite what the new owner did.

use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::item::Claim;
use crate::server::domain::events::decision::{ActionType, Mode};
use crate::server::domain::events::state::ConversationState;

pub mod breaker;
mod claims;
pub mod days;
mod decisions;
pub mod health;
pub mod job_moves;
pub mod jobs;
pub mod order;
pub mod outbox;
pub mod outbox_counts;
pub mod outbox_reads;
pub mod pause;
pub mod rate;
mod reads;
pub mod receiver;
pub mod routes;
pub mod slots;
mod window;
pub use claims::*;
pub use days::{day_key, day_keys, DAY_SHARDS, DAY_SHARDS_BEFORE};
pub use decisions::*;
pub use reads::*;

/// What a Table A record is: stored as `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordKind {
    /// An inbound event (`evt:` keys).
    #[serde(rename = "event")]
    Event,
    /// A side effect (`act:` keys).
    #[serde(rename = "action")]
    Action,
    /// An operator's bulk operation on the outbox (`job:` keys).
    #[serde(rename = "job")]
    Job,
}

/// Where an event is: `processing` → `decided` → `processed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventStatus {
    #[serde(rename = "processing")]
    Processing,
    /// The decision is recorded (with the state and its audit); side effects may be pending.
    #[serde(rename = "decided")]
    Decided,
    #[serde(rename = "processed")]
    Processed,
}

impl EventStatus {
    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventStatus::Processing => "processing",
            EventStatus::Decided => "decided",
            EventStatus::Processed => "processed",
        }
    }
}

/// Where a side effect is (docs/events.md, "The outbox").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionStatus {
    /// Waiting in the outbox for its first attempt.
    #[serde(rename = "queued")]
    Queued,
    /// A console holds it and is delivering it (in flight) until its lease runs out.
    #[serde(rename = "claimed")]
    Claimed,
    /// An attempt failed in a way worth retrying: waiting for its next attempt.
    #[serde(rename = "retry")]
    Retry,
    /// Safe mode (or an operator) holds it: it waits for a release or a discard.
    #[serde(rename = "held")]
    Held,
    #[serde(rename = "delivered")]
    Delivered,
    /// A dead letter: refused by the receiver, or every attempt of the schedule failed.
    #[serde(rename = "dead")]
    Dead,
    /// An operator dropped it, with a reason.
    #[serde(rename = "discarded")]
    Discarded,
    /// Refused by the receiver, as recorded before dead letters existed.
    #[serde(rename = "rejected")]
    Rejected,
}

impl ActionStatus {
    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Queued => "queued",
            ActionStatus::Claimed => "claimed",
            ActionStatus::Retry => "retry",
            ActionStatus::Held => "held",
            ActionStatus::Delivered => "delivered",
            ActionStatus::Dead => "dead",
            ActionStatus::Discarded => "discarded",
            ActionStatus::Rejected => "rejected",
        }
    }

    /// It will not be sent again unless an operator redrives it: the next action of its
    /// conversation may go.
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            ActionStatus::Delivered
                | ActionStatus::Dead
                | ActionStatus::Discarded
                | ActionStatus::Rejected
        )
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(EventStatus, ActionStatus);

/// One delivery attempt, as the Outbox page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Try {
    /// 1 for the first attempt.
    pub n: i64,
    pub at: String,
    /// How long the receiver took to answer (or to fail).
    pub ms: i64,
    /// `receiver answered 503`, `unknown: no answer within 5000 ms`, ...
    pub result: String,
}

/// An inbound event (Table A, `evt:` keys). Never holds the message body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub event_id: String,
    /// Always [`RecordKind::Event`].
    pub kind: RecordKind,
    pub status: EventStatus,
    pub mode: Mode,
    pub conversation_id: String,
    pub created_at: String,
    pub last_processed_at: String,
    /// From the payload's `created_at`.
    pub received_at: String,
    pub expires_at: i64,
    pub safe_mode: bool,
    pub automation_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    pub payload_sha256: String,
    pub payload_bytes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    pub channel: String,
    /// The decision as recorded (redacted JSON), once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Deliveries of this event after the first.
    #[serde(default)]
    pub duplicates: i64,
    /// How many workers claimed it (more than 1: a crash was recovered).
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// Index keys: `YYYY-MM-DD` of `created_at`, and `created_at#event_id`.
    pub event_day: String,
    pub created_sk: String,
}

/// A side effect (Table A, `act:` keys): written with its event's decision, then
/// delivered from the outbox by whichever console claims it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub event_id: String,
    /// Always [`RecordKind::Action`].
    pub kind: RecordKind,
    pub action_type: ActionType,
    /// Team, tag, assignee or reply type.
    pub target: String,
    pub conversation_id: String,
    /// The event that caused it.
    pub source_event: String,
    pub status: ActionStatus,
    /// The last attempt's outcome, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub expires_at: i64,
    /// Delivery attempts made.
    pub attempts: i64,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    /// The outbox index partition it is in (`due#NN`, `held#NN`, `dead#NN`, `delivered#NN`
    /// once the receiver took it, `discarded#NN`); absent on a record discarded by an older
    /// release (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<String>,
    /// Its due group's partition on `due-index` (`due#NN`), written instead of `outbox` while
    /// it is due when `events.due_index` is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<String>,
    /// `<ms, 13 digits>#<key>`: when it is due (or its claim runs out), or since when it is
    /// held or dead: the sort key on either index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox_sk: Option<String>,
    /// When it may be tried next (ms).
    #[serde(default)]
    pub next_at_ms: i64,
    /// The receiver it goes to, routed by its type when it was queued (absent:
    /// `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// The earlier action of its conversation and receiver that must end before this one
    /// is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The message, the same bytes on every attempt (the signature covers it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// The last attempts (at most [`MAX_TRIES_KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tries: Vec<Try>,
    /// What a dead letter is grouped by: `http 503`, `timeout`, `connection`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The last attempt went out and no answer came: the receiver may have it.
    #[serde(default)]
    pub unknown: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_reason: Option<String>,
    /// Attempts the retry schedule does not count: those made before the last redrive,
    /// and a breaker's failed probes.
    #[serde(default)]
    pub round_start: i64,
    /// The W3C `traceparent` of the span it was queued in (traces on): its deliveries
    /// continue that trace, whichever console makes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
}

/// Attempts an action keeps a record of (the audit keeps every one).
pub const MAX_TRIES_KEPT: usize = 20;

#[cfg(test)]
mod tests;
