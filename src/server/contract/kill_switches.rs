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
