//! What the inbox API and the Inbox pages show.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeedPage {
    pub items: Vec<FeedItem>,
    /// The cursor of the next page.
    pub next: Option<String>,
}

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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
    /// The stored default lifetime (empty: the tenant's), as the edit form shows it.
    #[serde(default)]
    pub default_ttl: String,
    /// The stored lifetimes per message type, `billing=7d, promo=2d`.
    #[serde(default)]
    pub type_ttls: String,
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
pub struct InboxView {
    pub tenants: Vec<String>,
    pub tenant: Option<String>,
    pub tenant_title: Option<String>,
    pub tenant_ttl: Option<String>,
    pub inboxes: Vec<InboxSummary>,
    pub inbox: Option<InboxSummary>,
    pub publications: Vec<PublicationRow>,
    pub publications_next: Option<String>,
    pub can_write: bool,
    /// A fresh key for a new message: it becomes the draft's key, and the publish's
    /// idempotency key, for as long as the person works on that message.
    pub form_key: String,
    /// The message being composed (the page's `draft`), if it is this user's.
    #[serde(default)]
    pub draft: Option<Draft>,
}

/// A message being composed: kept on the server (never in the URL), published at most
/// once under its key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub form: PublishForm,
    /// Set once it was published: what the receipt shows instead of the form.
    pub receipt: Option<Receipt>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub message_id: String,
    pub recipients: i64,
    pub published_at: String,
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
    /// The draft's key: also the publish's idempotency key.
    pub idempotency_key: String,
}

/// A user's feed and counts, as the "view as user" panel shows them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserView {
    pub feed: FeedPage,
    pub counts: Counts,
    pub can_write: bool,
    /// Whose inbox it is.
    #[serde(default)]
    pub uid: String,
    /// Their link reference: what links and forms carry.
    #[serde(default)]
    pub uid_ref: String,
}
