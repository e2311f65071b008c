//! `/api/v1/whoami`.

use serde::Serialize;
use utoipa::ToSchema;

use crate::model::api_keys::ApiScope;

/// The API key a request was made with.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct WhoAmI {
    pub name: String,
    pub scopes: Vec<ApiScope>,
}
