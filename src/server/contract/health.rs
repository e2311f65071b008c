//! `/healthz`: whether this console's process serves, answered from the process.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`: the process serves.
    pub status: &'static str,
    /// What this console's own requests saw of DynamoDB in the last minute, for people:
    /// `ok` (answered), `failing` (no answer, or DynamoDB's own failure) or `unknown` (no
    /// request). Never asked for the check, and never a reason for a 503.
    pub dynamodb: &'static str,
}

/// `/readyz`: whether this console can serve (DynamoDB answers, every table as specified).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `ready` or `not ready`.
    pub status: &'static str,
    /// What differs from the tables the console expects (a missing table or index, TTL on
    /// another attribute, a missing stream), or why DynamoDB could not be asked. Only when
    /// not ready, and only for a `metrics:read` API key or a signed-in admin: it names
    /// tables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<String>>,
}
