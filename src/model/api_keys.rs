//! API keys as the API keys page shows them: never a key, only what it is.

use serde::{Deserialize, Serialize};

/// A machine client's API key: never the key, only what it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKeySummary {
    /// The key's SHA-256 (what a revoke names; it opens nothing).
    pub key_hash: String,
    pub name: String,
    pub scopes: Vec<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub created_by: String,
    pub expires_at: String,
    /// To the hour; `None`: never used.
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
}

/// The API keys page: the keys, the scopes a key may carry, a fresh key for its forms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKeysView {
    pub keys: Vec<ApiKeySummary>,
    pub scopes: Vec<String>,
    pub form_key: String,
}
