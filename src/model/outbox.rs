//! What the Outbox page shows: side effects waiting, in flight, retrying, held and dead,
//! the operators' bulk jobs, and the receiver they go to.

use serde::{Deserialize, Serialize};

use super::AppError;

/// How many side effects are where.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutboxCounts {
    pub queued: u64,
    pub in_flight: u64,
    pub retrying: u64,
    pub held: u64,
    pub dead: u64,
}

/// One delivery attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TryRow {
    pub n: i64,
    pub at: String,
    pub ms: i64,
    pub result: String,
}

/// One side effect. Conversation ids are masked; links carry an encrypted reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxRow {
    /// The action key (its `webhook-id`), masked.
    pub key: String,
    /// A reference to the action for the buttons (encrypted: the key holds the
    /// conversation id).
    pub key_ref: String,
    pub action_type: String,
    pub target: String,
    /// The receiver it is routed to, in words made on the server: ` · to <name>`, or empty
    /// for `default`.
    #[serde(default)]
    pub to_receiver: String,
    pub conversation_id: String,
    pub conversation_ref: String,
    /// queued, claimed (in flight), retry, held, dead, ...
    pub status: String,
    /// The status in words made on the server: "in flight", "no answer: sent again with
    /// the same webhook-id", "held (safe mode)", "dead letter (http 503)", ...
    #[serde(default)]
    pub status_words: String,
    pub attempts: i64,
    pub result: String,
    pub next_try: Option<String>,
    pub created_at: String,
    pub tries: Vec<TryRow>,
}

/// A list narrowed to one conversation: its reference (for links; never its id) and its
/// id as the reader may see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationFilter {
    pub reference: String,
    pub shown: String,
}

/// The kinds of side effect, as stored (the server's `ActionType`, pinned by its test).
pub const ACTION_TYPES: [&str; 5] = ["route", "tag", "assign", "auto_reply", "escalate"];

/// What a resend of a time window would send (docs/events.md, "Resend a time window").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResendCount {
    pub n: u64,
    /// The count with what it counts, in words.
    pub words: String,
    /// The key of the form that starts it.
    pub form_key: String,
}

/// A bulk redrive, release, discard or resend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobView {
    pub id: String,
    /// redrive, release, discard, resend.
    pub op: String,
    /// held, dead or delivered.
    pub group: String,
    pub cause: Option<String>,
    pub action_type: Option<String>,
    pub reason: String,
    pub actor: String,
    pub total: i64,
    pub done: i64,
    pub skipped: i64,
    pub running: bool,
    pub created_at: String,
}

/// A signing secret, never its value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecretView {
    pub id: String,
    pub created_at: String,
    pub created_by: String,
}

/// What every console together sends the receiver at most (docs/events.md, "Rate limit",
/// "Concurrency limit"): the same numbers on every console, saved with the receiver by an
/// admin (before that, the server's settings `events.receiver_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiverLimits {
    /// Requests per second; 0: no limit.
    pub rate: i64,
    /// Requests that may go at once after a quiet spell, above the rate: any window of w
    /// seconds holds at most `rate × w + burst`; 0: the rate (one second's worth).
    pub burst: i64,
    /// Requests at the receiver at once; 0: no limit.
    pub concurrency: i64,
}

impl ReceiverLimits {
    /// The burst as it applies: the one set, or the rate when that is 0; 0 without a rate.
    pub fn burst(&self) -> i64 {
        match (self.rate, self.burst) {
            (rate, _) if rate <= 0 => 0,
            (rate, 0) => rate,
            (_, burst) => burst,
        }
    }
}

/// Where side effects go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverView {
    /// Its name: `default`, or one an admin gave it.
    #[serde(default)]
    pub name: String,
    pub url: String,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub secrets: Vec<SecretView>,
    /// `console` (saved here), `settings` (from the server's settings), `none`.
    pub source: String,
    pub version: i64,
    pub updated_at: String,
    pub updated_by: String,
    /// How its deliveries went; `None` without a receiver.
    pub health: Option<ReceiverHealth>,
    /// Deliveries wait: paused by an operator or by the receiver's 429 (docs/events.md,
    /// "Pause"), or parked by the open breaker ("Breaker"). Absent from a page of an older
    /// release.
    #[serde(default)]
    pub waits: Option<WaitView>,
    /// A fresh key for the Receiver page's pause and breaker forms (empty elsewhere).
    #[serde(default)]
    pub form_key: String,
    /// The limits every console together keeps to, in words made on the server (empty:
    /// none): its rate with the burst, and requests at once.
    #[serde(default)]
    pub limits: String,
    /// Its queue depth in words made on the server: side effects waiting for it (queued,
    /// retrying, in flight, or parked while its breaker is open).
    #[serde(default)]
    pub queue: String,
}

/// The Receiver page's data: the receiver, its limits as numbers for its form, and every
/// receiver with the routes (apart from [`ReceiverView`], which the Outbox and the Overview
/// read too without them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverDetail {
    /// The receiver this page shows (`default` first of all).
    pub name: String,
    pub receiver: ReceiverView,
    pub limits: ReceiverLimits,
    /// Every receiver's name, `default` first.
    #[serde(default)]
    pub names: Vec<String>,
    /// Every action type, in the order pages list them.
    #[serde(default)]
    pub route_types: Vec<String>,
    /// The receiver each of `route_types` goes to, in the same order.
    #[serde(default)]
    pub routes: Vec<String>,
    /// The routes' version, which a change of a route names.
    #[serde(default)]
    pub routes_version: i64,
}

/// A receiver's name (docs/events.md, "Receivers"): `default`, where every action type
/// without a route goes, or 1 to 24 of `a`–`z`, `0`–`9` and `-`, starting with a letter.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReceiverName(String);

impl ReceiverName {
    pub const DEFAULT: &'static str = "default";

    /// The receiver of every action type without a route.
    pub fn default_one() -> ReceiverName {
        ReceiverName(Self::DEFAULT.into())
    }

    /// A name as a form or a request gives it (empty: `default`).
    pub fn parse(raw: &str) -> Result<ReceiverName, AppError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(Self::default_one());
        }
        let ok = raw.len() <= 24
            && raw.starts_with(|c: char| c.is_ascii_lowercase())
            && raw
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            return Err(AppError::invalid(
                "receiver",
                "A receiver's name is 1 to 24 of a-z, 0-9 and -, starting with a letter.",
            ));
        }
        Ok(ReceiverName(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }
}

/// Why deliveries wait, in words made on the server, and what the Receiver page's forms
/// end: an operator's pause (a resume names it), the breaker's opening (a close names it).
/// A receiver's 429 ends on its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitView {
    pub words: String,
    pub pause_id: Option<String>,
    pub breaker_id: Option<String>,
}

/// How a receiver's deliveries went (every console's attempts, from DynamoDB).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiverHealth {
    /// Delivery attempts of the last hour, and how many the receiver took.
    pub attempts_last_hour: u64,
    pub delivered_last_hour: u64,
    /// The same over the alert rule's window (15 min).
    pub window_attempts: u64,
    pub window_delivered: u64,
    /// The alert rule's verdict: every attempt of the window failed (and there were some).
    pub every_attempt_failed: bool,
    /// RFC 3339 (UTC).
    pub last_success: Option<String>,
    /// The first failure after the last success, while the newest attempt failed.
    pub failing_since: Option<String>,
    /// The newest failure's error in words, while failing.
    pub last_error: Option<String>,
}

/// What a test message to the receiver came back with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestAnswer {
    pub webhook_id: String,
    pub outcome: String,
    pub ms: i64,
}

/// The page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutboxView {
    pub counts: OutboxCounts,
    pub dead_by_cause: Vec<(String, u64)>,
    /// due, held, dead or delivered: the list shown.
    pub group: String,
    pub cause: String,
    /// The one conversation the list is narrowed to.
    pub conversation: Option<ConversationFilter>,
    pub rows: Vec<OutboxRow>,
    pub next: Option<String>,
    pub jobs: Vec<JobView>,
    pub safe_mode: bool,
    /// Every receiver, `default` first.
    #[serde(default)]
    pub receivers: Vec<ReceiverView>,
    /// A new form key for the page's forms.
    pub form_key: String,
}
