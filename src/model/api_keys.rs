//! API keys as the API keys page shows them: never a key, only what it is.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What an API key lets its client do: one scope per REST area and direction. Serialized
/// (and stored) as its name, `area:verb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ApiScope {
    #[serde(rename = "switches:read")]
    SwitchesRead,
    #[serde(rename = "switches:write")]
    SwitchesWrite,
    #[serde(rename = "events:write")]
    EventsWrite,
    #[serde(rename = "conversations:read")]
    ConversationsRead,
    #[serde(rename = "conversations:write")]
    ConversationsWrite,
    #[serde(rename = "inbox:read")]
    InboxRead,
    #[serde(rename = "inbox:write")]
    InboxWrite,
    #[serde(rename = "measurements:write")]
    MeasurementsWrite,
    /// Overrides a measurement's conflict (`X-Force-Override`).
    #[serde(rename = "measurements:admin")]
    MeasurementsAdmin,
    #[serde(rename = "metrics:read")]
    MetricsRead,
    /// Each receiver's state, its side effects by group (masked, as a viewer sees them) and
    /// the count of a resend.
    #[serde(rename = "receiver:read")]
    ReceiverRead,
    /// Pause and resume the receiver, open and close its breaker, resend a window.
    #[serde(rename = "receiver:write")]
    ReceiverWrite,
}

impl ApiScope {
    /// Every scope, in the order the API keys page offers them.
    pub const ALL: [ApiScope; 12] = [
        ApiScope::SwitchesRead,
        ApiScope::SwitchesWrite,
        ApiScope::EventsWrite,
        ApiScope::ConversationsRead,
        ApiScope::ConversationsWrite,
        ApiScope::InboxRead,
        ApiScope::InboxWrite,
        ApiScope::MeasurementsWrite,
        ApiScope::MeasurementsAdmin,
        ApiScope::MetricsRead,
        ApiScope::ReceiverRead,
        ApiScope::ReceiverWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiScope::SwitchesRead => "switches:read",
            ApiScope::SwitchesWrite => "switches:write",
            ApiScope::EventsWrite => "events:write",
            ApiScope::ConversationsRead => "conversations:read",
            ApiScope::ConversationsWrite => "conversations:write",
            ApiScope::InboxRead => "inbox:read",
            ApiScope::InboxWrite => "inbox:write",
            ApiScope::MeasurementsWrite => "measurements:write",
            ApiScope::MeasurementsAdmin => "measurements:admin",
            ApiScope::MetricsRead => "metrics:read",
            ApiScope::ReceiverRead => "receiver:read",
            ApiScope::ReceiverWrite => "receiver:write",
        }
    }

    /// The scope named `raw` (exactly), if there is one.
    pub fn parse(raw: &str) -> Option<ApiScope> {
        ApiScope::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

impl fmt::Display for ApiScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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

#[cfg(test)]
mod tests {
    use super::ApiScope;

    /// The name a scope is stored and sent under is the one it parses from.
    #[test]
    fn scopes_round_trip_by_name() {
        for s in ApiScope::ALL {
            assert_eq!(ApiScope::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
            let back: ApiScope = serde_json::from_str(&format!("\"{s}\"")).unwrap();
            assert_eq!(back, s);
        }
        assert_eq!(ApiScope::parse("inbox:Write"), None);
        assert_eq!(ApiScope::parse(" inbox:write"), None);
    }
}
