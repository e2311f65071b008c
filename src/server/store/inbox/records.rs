//! The items of the inbox table and the fixed values they carry (docs/data-model.md,
//! "inbox").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What an item is: every inbox item carries its kind, stored as the two letters below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Tenant settings.
    #[serde(rename = "TS")]
    TenantSettings,
    /// An inbox's configuration.
    #[serde(rename = "IC")]
    InboxConfig,
    /// A message, in a user's partition or the public one.
    #[serde(rename = "UM")]
    Message,
    /// A read receipt of a public message.
    #[serde(rename = "RR")]
    Receipt,
    /// Counters of a partition.
    #[serde(rename = "US")]
    Stats,
    /// A publication: what was published to whom.
    #[serde(rename = "PB")]
    Publication,
    /// One shard of a publication's read counter.
    #[serde(rename = "PR")]
    ReadShard,
    /// A publish job: the message id a publish request got.
    #[serde(rename = "PJ")]
    Job,
    /// A tenant in the tenant registry.
    #[serde(rename = "TR")]
    Tenant,
    /// The marker of a removal the stream consumer counted.
    #[serde(rename = "RM")]
    Removal,
    /// A message someone is composing in the console.
    #[serde(rename = "DR")]
    Draft,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::TenantSettings,
        Kind::InboxConfig,
        Kind::Message,
        Kind::Receipt,
        Kind::Stats,
        Kind::Publication,
        Kind::ReadShard,
        Kind::Job,
        Kind::Tenant,
        Kind::Removal,
        Kind::Draft,
    ];

    /// The stored name (the same as serde's), for items written as attribute maps and for
    /// conditions.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TenantSettings => "TS",
            Kind::InboxConfig => "IC",
            Kind::Message => "UM",
            Kind::Receipt => "RR",
            Kind::Stats => "US",
            Kind::Publication => "PB",
            Kind::ReadShard => "PR",
            Kind::Job => "PJ",
            Kind::Tenant => "TR",
            Kind::Removal => "RM",
            Kind::Draft => "DR",
        }
    }

    /// The kind stored as `name`, if there is one.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Who a message went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AudienceKind {
    /// A list of users: one copy in each one's partition.
    #[serde(rename = "users")]
    Users,
    /// Everyone: one copy in the public partition.
    #[serde(rename = "everyone")]
    Everyone,
}

impl AudienceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AudienceKind::Users => "users",
            AudienceKind::Everyone => "everyone",
        }
    }
}

/// Where a publication is: `publishing` until every recipient has the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PublicationStatus {
    #[serde(rename = "publishing")]
    Publishing,
    #[serde(rename = "published")]
    Published,
}

impl PublicationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PublicationStatus::Publishing => "publishing",
            PublicationStatus::Published => "published",
        }
    }
}

/// Tenant settings (kind TS).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantSettings {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub title: String,
    /// Default message lifetime, e.g. `30d`.
    pub ttl: String,
    pub tenant_key: String,
    pub updated_at: String,
    pub expiredat: i64,
}

/// An inbox's configuration (kind IC).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxConfig {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub title: String,
    pub description: String,
    /// `default` and per message type (category): `{"default": "30d", "billing": "7d"}`.
    pub ttl: BTreeMap<String, String>,
    pub tenant_key: String,
    pub inbox_key: String,
    pub updated_at: String,
    pub expiredat: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audience {
    pub kind: AudienceKind,
    pub label: String,
    /// The first recipients (all of them up to 20); `count` has the number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uids: Vec<String>,
    #[serde(default)]
    pub count: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Taxonomy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

impl Taxonomy {
    /// Uncategorized messages carry no `taxonomy` at all: DynamoDB Local's stream records
    /// write an empty map as `{}`, which no SDK can read back.
    pub fn is_empty(&self) -> bool {
        self.category.is_none()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Body {
    pub title: String,
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_uri: Option<String>,
}

/// A message (kind UM), in a user's partition or the public one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageItem {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_system_id: Option<String>,
    pub sender: String,
    pub audiences: Audience,
    /// Epoch milliseconds.
    pub received: i64,
    pub delivered: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readat: Option<i64>,
    /// Epoch seconds (DynamoDB's TTL attribute).
    pub expiredat: i64,
    #[serde(default, skip_serializing_if = "Taxonomy::is_empty")]
    pub taxonomy: Taxonomy,
    pub message: Body,
    pub tenant_key: String,
    pub inbox_key: String,
    pub uid: String,
}

/// A read receipt of a public message (kind RR), in the reader's partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Taxonomy::is_empty")]
    pub taxonomy: Taxonomy,
    pub readat: i64,
    pub expiredat: i64,
    pub tenant_key: String,
    pub inbox_key: String,
    pub uid: String,
}

/// Counters (kind US, set by the update that creates them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub pk: String,
    pub sk: String,
    #[serde(default)]
    pub published: i64,
    #[serde(default)]
    pub read: i64,
    /// Whose counters these are (docs/inbox.md lists them on every stats record).
    #[serde(default)]
    pub tenant_key: String,
    #[serde(default)]
    pub inbox_key: String,
    #[serde(default)]
    pub uid: String,
}

/// A publication (kind PB): what was published to whom, and how many read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Publication {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub id: String,
    pub inbox_key: String,
    pub audience_kind: AudienceKind,
    pub label: String,
    pub recipients: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub title: String,
    pub status: PublicationStatus,
    pub created_at: String,
    pub expiredat: i64,
}

/// A publish job (kind PJ): the message id a publish request got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub message_id: String,
    pub inbox_key: String,
    pub expiredat: i64,
}

/// A message someone is composing in the console (kind DR): kept for a day, published at
/// most once (its key is the publish's idempotency key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DraftItem {
    pub pk: String,
    pub sk: String,
    pub kind: Kind,
    pub form: crate::model::inbox::PublishForm,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::model::inbox::Receipt>,
    pub expiredat: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn stored<T: Serialize>(v: T) -> String {
        let av: AttributeValue = serde_dynamo::to_attribute_value(v).unwrap();
        av.as_s().unwrap().clone()
    }

    #[test]
    fn fixed_values_store_their_names() {
        for k in Kind::ALL {
            assert_eq!(stored(k), k.as_str());
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::parse("XX"), None);
        for a in [AudienceKind::Users, AudienceKind::Everyone] {
            assert_eq!(stored(a), a.as_str());
        }
        for s in [PublicationStatus::Publishing, PublicationStatus::Published] {
            assert_eq!(stored(s), s.as_str());
        }
    }
}
