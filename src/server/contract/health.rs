//! `/healthz`: whether this console can reach DynamoDB.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: &'static str,
    /// `ok`, `error` or `timeout`.
    pub dynamodb: &'static str,
}
