//! What the inbox API and the Inbox pages show.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedItem {
    pub id: String,
    /// Published to everyone (else to this user).
    pub public: bool,
    pub title: String,
    pub body: String,
    pub cta_uri: Option<String>,
    pub category: Option<String>,
    pub received_ms: i64,
    pub expires_s: i64,
    pub read: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeedPage {
    pub items: Vec<FeedItem>,
    /// The cursor of the next page.
    pub next: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub total: i64,
    pub read: i64,
    pub unread: i64,
    pub unread_by_category: BTreeMap<String, i64>,
    pub public_published: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxSummary {
    pub key: String,
    pub title: String,
    pub description: String,
    /// `default=30d, billing=7d`.
    pub ttl: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublicationRow {
    pub id: String,
    pub title: String,
    pub audience: String,
    pub recipients: i64,
    pub category: Option<String>,
    pub status: String,
    pub created_at: String,
    pub read: i64,
}

/// The Inbox page: the tenants, and for the chosen tenant its settings and inboxes, and
/// for the chosen inbox what was published there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InboxPage {
    pub tenants: Vec<String>,
    pub tenant: Option<String>,
    pub tenant_title: Option<String>,
    pub tenant_ttl: Option<String>,
    pub inboxes: Vec<InboxSummary>,
    pub inbox: Option<InboxSummary>,
    pub publications: Vec<PublicationRow>,
    pub publications_next: Option<String>,
    pub can_write: bool,
    /// A fresh idempotency key for the publish form.
    pub form_key: String,
}

/// The compose form: what to publish, where, to whom.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishForm {
    pub tenant: String,
    pub inbox: String,
    /// `everyone` or `users`.
    pub audience: String,
    /// User ids, one per line or separated by commas.
    pub uids: String,
    pub category: String,
    pub title: String,
    pub body: String,
    pub cta_uri: String,
    pub ttl: String,
    pub idempotency_key: String,
}

/// A user's feed and counts, as the "view as user" panel shows them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserView {
    pub feed: FeedPage,
    pub counts: Counts,
    pub can_write: bool,
}
