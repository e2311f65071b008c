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
}

/// The switches as they are.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Switches {
    pub safe_mode: bool,
    pub automation_enabled: bool,
    pub version: u64,
}
