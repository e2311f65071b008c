//! `/api/v1/kill-switches`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A change of one switch, as incident tooling sends it.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct SwitchChange {
    /// `safe_mode` or `automation_enabled`.
    pub switch: String,
    pub enable: bool,
    /// The version you read.
    pub expected_version: u64,
    /// Why (redacted before it is stored).
    #[serde(default)]
    #[schema(max_length = 500, min_length = 1)]
    pub reason: String,
    /// Required to turn safe mode off or automation on.
    #[serde(default)]
    pub confirm: bool,
    /// A timed change (safe mode off or automation on only): the switch goes back towards
    /// safety after this many minutes.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10080)]
    pub for_minutes: Option<i64>,
    /// A timed change's end instead (RFC 3339 with its offset), a minute to a week ahead.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub ends_at: Option<String>,
    /// Set the change for this time instead of now (RFC 3339 with its offset), a minute to
    /// 31 days ahead: it runs then, once, unless its switch was changed after it was set.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub at: Option<String>,
}

/// The switches as they are.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Switches {
    pub safe_mode: bool,
    pub automation_enabled: bool,
    pub version: u64,
    /// When safe mode's timed change ends (it turns back on), if one is running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_mode_ends_at: Option<String>,
    /// When automation's timed change ends (it turns back off), if one is running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automation_enabled_ends_at: Option<String>,
}

/// What a call to a trigger URL did.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Triggered {
    /// The switch the URL belongs to.
    pub switch: String,
    /// False: it was in its safe position already, or the alert resolved.
    pub changed: bool,
    /// The switches' version afterwards.
    pub version: u64,
}

/// A change that waits for a second admin (docs/switches.md, "Approvals"): with approvals
/// required, turning safe mode off or automation on is a request an admin approves or
/// rejects in the console. Nothing changed yet.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApprovalRequested {
    /// Always `awaiting_approval`.
    pub status: String,
    pub request: PendingRequest,
}

/// A request waiting for a second admin.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PendingRequest {
    pub id: String,
    /// `safe_mode` or `automation_enabled`.
    pub switch: String,
    pub enable: bool,
    /// Redacted.
    pub reason: String,
    /// A timed change: minutes from its approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub for_minutes: Option<i64>,
    /// A timed change: its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    /// The switches' version it was asked against; any change since makes it stale.
    pub version: u64,
    pub requested_by: String,
    /// When the requester is an API key: the person who made it (who cannot approve it
    /// either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    pub requested_at: String,
    /// Past this it can no longer be approved.
    pub expires_at: String,
}

/// The requests waiting for a second admin, oldest first.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PendingRequests {
    pub requests: Vec<PendingRequest>,
}

impl From<crate::model::kill_switches::Approval> for PendingRequest {
    fn from(a: crate::model::kill_switches::Approval) -> PendingRequest {
        PendingRequest {
            id: a.id,
            switch: a.switch.key().to_string(),
            enable: a.enable,
            reason: a.reason,
            for_minutes: a.for_minutes,
            ends_at: a.ends_at,
            version: a.version,
            requested_by: a.requested_by,
            on_behalf_of: a.on_behalf_of,
            requested_at: a.requested_at,
            expires_at: a.expires_at,
        }
    }
}

/// A change set for a later time (docs/switches.md, "Scheduled changes"). Nothing changed
/// yet.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ChangeScheduled {
    /// Always `scheduled`.
    pub status: String,
    pub scheduled: ScheduledChange,
}

/// A change set for later.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ScheduledChange {
    pub id: String,
    /// `safe_mode` or `automation_enabled`.
    pub switch: String,
    pub enable: bool,
    /// Redacted.
    pub reason: String,
    /// When it runs.
    pub at: String,
    /// A timed change: minutes from when it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub for_minutes: Option<i64>,
    /// A timed change: its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    pub scheduled_by: String,
    pub scheduled_at: String,
}

/// The changes set for later, soonest first.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Schedule {
    pub scheduled: Vec<ScheduledChange>,
}

impl From<crate::model::kill_switches::Scheduled> for ScheduledChange {
    fn from(s: crate::model::kill_switches::Scheduled) -> ScheduledChange {
        ScheduledChange {
            id: s.id,
            switch: s.switch.key().to_string(),
            enable: s.enable,
            reason: s.reason,
            at: s.at,
            for_minutes: s.for_minutes,
            ends_at: s.ends_at,
            scheduled_by: s.scheduled_by,
            scheduled_at: s.scheduled_at,
        }
    }
}

/// A trip (docs/switches.md, "Trips"): when an alert of `rule` fires, `switch` goes to its
/// safe position.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TripRule {
    /// The alert rule (`outbox.dead_letters`, …).
    pub rule: String,
    /// The rule in words.
    pub rule_label: String,
    /// `safe_mode` (turns on) or `automation_enabled` (turns off).
    pub switch: String,
    pub made_by: String,
    pub made_at: String,
}

/// The trips attached, and the rules a trip may be attached to.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Trips {
    pub trips: Vec<TripRule>,
    /// Each rule a trip may name, with its words.
    pub rules: Vec<TripRuleChoice>,
}

/// A rule a trip may name.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TripRuleChoice {
    pub rule: String,
    pub label: String,
    /// Judged per idempotency scope: a trip may name `<rule>:<scope>`, and then only that
    /// scope's alert trips it.
    pub per_scope: bool,
    /// Who makes the rule fire (a trip on it hands them the switch).
    pub driven_by: String,
}

/// A client's cancel of a change it set for later.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct ScheduleCancel {
    /// The change's id, as `POST /api/v1/kill-switches` or the schedule answered it.
    #[schema(max_length = 64, min_length = 1)]
    pub id: String,
    /// Why (redacted before it is stored).
    #[serde(default)]
    #[schema(max_length = 500, min_length = 1)]
    pub reason: String,
}

/// A change cancelled.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ScheduleCancelled {
    /// Always `cancelled`.
    pub status: String,
    /// What was cancelled, in words.
    pub message: String,
}
