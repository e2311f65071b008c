//! `/api/v1/receiver`: the receiver's state, its controls (pause, breaker) and the resend of
//! a time window, for incident tooling (docs/events.md).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The receiver's deliveries as they stand.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReceiverState {
    /// The receiver's name (`default`, or a name an admin gave it).
    pub receiver: String,
    /// Every receiver's name, `default` first.
    pub receivers: Vec<String>,
    /// Each action type and the receiver it goes to.
    pub routes: std::collections::BTreeMap<String, String>,
    /// `delivering`, `paused` (an operator), `backing_off` (the receiver's 429),
    /// `breaker_open`, `off` (turned off, or it answered 410), `none` (no receiver).
    pub state: String,
    /// Why deliveries wait, in words (absent while they go).
    pub waits: Option<String>,
    /// The pause a resume names.
    pub pause_id: Option<String>,
    /// The breaker's opening a close names.
    pub breaker_id: Option<String>,
    /// Requests per second every console together sends at most (0: no limit).
    pub rate_per_second: i64,
    /// Requests that may go at once after a quiet spell: any w seconds hold at most
    /// `rate_per_second × w + burst` (the rate unless set; 0 only without a rate).
    pub burst: i64,
    /// Requests every console together has at the receiver at once, at most (0: no limit).
    pub concurrency: i64,
    /// Its URL without user info or query values.
    pub url: String,
    /// Delivery attempts of the last hour, and how many the receiver took.
    pub attempts_last_hour: u64,
    pub delivered_last_hour: u64,
    /// The newest failure's error in words, while failing.
    pub last_error: Option<String>,
    /// Side effects waiting for it: queued, retrying, in flight, or parked.
    pub queue_depth: u64,
    /// False when the count stopped early (a very long queue): `queue_depth` is a floor.
    pub queue_depth_exact: bool,
    /// Of those, parked by its open breaker (all of them while it is open, else 0).
    pub parked: u64,
}

/// A pause (no `pause_id`) or the resume of the pause `pause_id`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct PauseChange {
    /// Why (redacted before it is stored).
    #[schema(max_length = 500, min_length = 1)]
    pub reason: String,
    /// The pause to end, as `GET /api/v1/receiver` showed it; absent to pause (an empty
    /// one is refused, never read as a pause).
    #[serde(default)]
    pub pause_id: Option<String>,
    /// The receiver's name; absent: `default`.
    #[serde(default)]
    pub receiver: Option<String>,
}

/// Opening the breaker (no `breaker_id`) or closing the opening `breaker_id`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct BreakerChange {
    /// Why (redacted before it is stored).
    #[schema(max_length = 500, min_length = 1)]
    pub reason: String,
    /// The opening to close, as `GET /api/v1/receiver` showed it; absent to open (an empty
    /// one is refused).
    #[serde(default)]
    pub breaker_id: Option<String>,
    /// The receiver's name; absent: `default`.
    #[serde(default)]
    pub receiver: Option<String>,
}

/// What changed, in words.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReceiverChanged {
    pub words: String,
}

/// A window of side effects: delivered ones or dead letters, one kind or every kind,
/// decided between two times.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResendWindow {
    /// `delivered` (the default), `dead` or `discarded`.
    #[serde(default)]
    pub group: Option<String>,
    /// One kind (`route`, `tag`, `assign`, `auto_reply`, `escalate`); absent: every kind.
    #[serde(default)]
    pub action_type: Option<String>,
    /// When the window begins: RFC 3339, or `2026-11-27T14:00` in UTC.
    #[serde(default)]
    pub since: Option<String>,
    /// When it ends (included).
    #[serde(default)]
    pub until: Option<String>,
    /// One receiver's side effects (`default`, or a named one); absent: every receiver's.
    #[serde(default)]
    pub receiver: Option<String>,
}

/// How many side effects a resend of the window would send.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResendCounted {
    pub n: u64,
    /// The count with what it counts, in words ("at least" when it stopped counting).
    pub words: String,
}

/// A resend of a window, with a reason.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct ResendRequest {
    /// `delivered` (the default), `dead` or `discarded`.
    #[serde(default)]
    pub group: Option<String>,
    /// One kind; absent: every kind.
    #[serde(default)]
    pub action_type: Option<String>,
    #[schema(max_length = 40)]
    pub since: String,
    #[schema(max_length = 40)]
    pub until: String,
    /// Why (redacted before it is stored).
    #[schema(max_length = 500, min_length = 1)]
    pub reason: String,
    /// One receiver's side effects (`default`, or a named one); absent: every receiver's.
    #[serde(default)]
    pub receiver: Option<String>,
}

/// The resend's job, started (or found: the same `Idempotency-Key` starts one).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResendStarted {
    pub words: String,
}

/// Which receiver a read names.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReceiverQuery {
    /// The receiver's name; absent: `default`.
    #[serde(default)]
    pub receiver: Option<String>,
}

/// Which of a receiver's side effects to list.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActionsQuery {
    /// The receiver's name; absent: `default`.
    #[serde(default)]
    pub receiver: Option<String>,
    /// `due` (queued, in flight, retrying or parked; the default), `held`, `dead`,
    /// `delivered` or `discarded`.
    #[serde(default)]
    pub group: Option<String>,
    /// The `next` of the page before.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A page of one receiver's side effects in one group, as the Outbox lists them.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReceiverActions {
    pub receiver: String,
    pub group: String,
    pub actions: Vec<ReceiverAction>,
    /// The next page's `cursor`; absent on the last page.
    pub next: Option<String>,
}

/// One side effect: what it is, where it stands in words, and its attempts.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReceiverAction {
    /// Its `webhook-id`, masked (it holds the conversation id).
    pub key: String,
    pub action_type: String,
    pub target: String,
    /// The conversation as a viewer sees it (masked where it looks personal).
    pub conversation: String,
    /// `queued`, `claimed` (in flight), `retry`, `held`, `dead`, `delivered`, `discarded`.
    pub status: String,
    /// The status in words, as the Outbox says it.
    pub status_words: String,
    pub attempts: i64,
    /// The last attempt's result in words.
    pub result: String,
    /// When it is tried next (queued or retrying).
    pub next_try: Option<String>,
    pub created_at: String,
    /// The attempts kept, oldest first.
    pub tries: Vec<ReceiverTry>,
}

/// One attempt of a side effect.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReceiverTry {
    pub n: i64,
    pub at: String,
    pub ms: i64,
    pub result: String,
}
