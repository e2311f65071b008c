//! `/api/v1/inbox`: tenants, inboxes, publishing, feeds, counts and reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::model::inbox::{Counts, FeedItem, FeedPage};

/// A tenant's settings.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
pub struct TenantSettings {
    /// The tenant's key when absent.
    #[schema(max_length = 200)]
    pub title: Option<String>,
    /// A lifetime like `30d` or `12h` (30 days when absent).
    #[schema(max_length = 16)]
    pub ttl: Option<String>,
}

/// A tenant's settings as saved.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TenantSaved {
    pub tenant: String,
    pub title: String,
    pub ttl: String,
}

/// An inbox's configuration.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
pub struct InboxSettings {
    #[schema(max_length = 200)]
    pub title: Option<String>,
    #[schema(max_length = 1000)]
    pub description: Option<String>,
    /// Lifetimes by category: `{"default": "30d", "<category>": "7d"}`.
    pub ttl: Option<BTreeMap<String, String>>,
}

/// An inbox's configuration as saved.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct InboxSaved {
    pub inbox: String,
    pub title: String,
    pub description: String,
    pub ttl: BTreeMap<String, String>,
}

/// Who receives a message.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct Audience {
    /// `users` or `everyone`.
    #[schema(max_length = 16)]
    pub kind: String,
    /// With `users`: 1 to 10,000 user ids.
    #[schema(max_items = 20000)]
    pub uids: Option<Vec<String>>,
    /// How the console shows the audience.
    #[schema(max_length = 200)]
    pub label: Option<String>,
}

/// A message to publish.
#[derive(Clone, Debug, Deserialize, ToSchema)]
pub struct PublishRequest {
    pub audience: Audience,
    #[schema(max_length = 128)]
    pub category: Option<String>,
    #[schema(max_length = 200, min_length = 1)]
    pub title: String,
    #[schema(max_length = 10000, min_length = 1)]
    pub body: String,
    /// http(s) only.
    #[schema(max_length = 2000)]
    pub cta_uri: Option<String>,
    /// A lifetime like `7d`; the inbox's lifetime for the category when absent.
    #[schema(max_length = 16)]
    pub ttl: Option<String>,
    #[schema(max_length = 128)]
    pub host_system_id: Option<String>,
}

/// What was published.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PublishAnswer {
    pub message_id: String,
    pub recipients: u64,
    /// `users` or `everyone`.
    pub audience: String,
}

/// `GET …/feed`'s query.
#[derive(Clone, Debug, Deserialize)]
pub struct Cursor {
    pub cursor: Option<String>,
}

/// A message marked read.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReadAnswer {
    pub read: bool,
    /// True when it was read before.
    pub already: bool,
}

/// All of a user's messages marked read.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReadAllAnswer {
    /// How many were unread.
    pub marked: u64,
}
