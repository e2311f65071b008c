//! `inbox-<env>` (design doc 3): one table for tenant settings, inbox configuration, user
//! and public messages, read receipts and counters. Keys as the design has them:
//!
//! | record            | pk                                  | sk                   | kind |
//! |-------------------|-------------------------------------|----------------------|------|
//! | tenant settings   | `t#<tenant>`                        | `st#tenant_settings` | TS   |
//! | inbox config      | `t#<tenant>`                        | `si#<inbox>`         | IC   |
//! | user message      | `t#<tenant>U#<uid>#<inbox>`         | `m#<message_id>`     | UM   |
//! | public message    | `t#<tenant>G#$public#<inbox>`       | `m#<message_id>`     | UM   |
//! | stats             | either partition                    | `c#*`, `c#<category>`| US   |
//! | read receipt      | the user's partition                | `m#<message_id>`     | RR   |
//!
//! Ours besides: publications (`t#<tenant>` / `pub#<inbox>#<message_id>`, kind PB), their
//! read counters (`t#<tenant>R#<inbox>#<message_id>#<shard>` / `r`, kind PR), publish jobs (`t#<tenant>` / `job#<key>`, kind PJ, so a
//! publish that stopped half-way resumes with the same message id), the tenant registry
//! (`tenants` / `<tenant>`, kind TR), and what the stream consumer keeps (`x#…` removals
//! already counted; stream positions are in the settings table).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod stream;
mod writes;

pub use writes::*;

use super::items::{n, s};
use super::query::{self, Cond, Spec, Start};
use super::schema::INBOX;
use super::{Store, StoreError};

pub const PUBLIC_UID: &str = "$public";
pub const ALL: &str = "*";
pub const SETTINGS_SK: &str = "st#tenant_settings";
pub const REGISTRY_PK: &str = "tenants";
/// Stream positions (kept in the settings table, under this prefix).
pub const CHECKPOINT_PK: &str = "inbox-stream";
/// Stats and registry items outlive every message: their TTL is pushed this far on each
/// change, so they expire only long after the last message they count.
pub const KEEP_DAYS: i64 = 3 * 365;

pub fn tenant_pk(tenant: &str) -> String {
    format!("t#{tenant}")
}
pub fn inbox_sk(inbox: &str) -> String {
    format!("si#{inbox}")
}
pub fn user_pk(tenant: &str, uid: &str, inbox: &str) -> String {
    format!("t#{tenant}U#{uid}#{inbox}")
}
pub fn public_pk(tenant: &str, inbox: &str) -> String {
    format!("t#{tenant}G#{PUBLIC_UID}#{inbox}")
}
pub fn message_sk(id: &str) -> String {
    format!("m#{id}")
}
pub fn stats_sk(category: &str) -> String {
    format!("c#{category}")
}
pub fn publication_sk(inbox: &str, id: &str) -> String {
    format!("pub#{inbox}#{id}")
}
pub fn job_sk(key: &str) -> String {
    format!("job#{key}")
}
pub fn removal_pk(pk: &str) -> String {
    format!("x#{pk}")
}

/// How many counter items a publication's reads are spread over.
pub const READ_SHARDS: u32 = 16;
pub const READ_SHARD_SK: &str = "r";

/// One shard of a publication's read counter (kind PR): its own partition, so the readers
/// of one broadcast spread over `READ_SHARDS` partitions.
pub fn read_shard_pk(tenant: &str, inbox: &str, id: &str, shard: u32) -> String {
    format!("t#{tenant}R#{inbox}#{id}#{shard:02}")
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantSettings {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub title: String,
    /// Default message lifetime, e.g. `30d`.
    pub ttl: String,
    pub tenant_key: String,
    pub updated_at: String,
    pub expiredat: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InboxConfig {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub title: String,
    pub description: String,
    /// `default` and per message type (category): `{"default": "30d", "billing": "7d"}`.
    pub ttl: std::collections::BTreeMap<String, String>,
    pub tenant_key: String,
    pub inbox_key: String,
    pub updated_at: String,
    pub expiredat: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Audience {
    /// `users` or `everyone`.
    pub kind: String,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Taxonomy::is_empty")]
    pub taxonomy: Taxonomy,
    pub readat: i64,
    pub expiredat: i64,
    pub tenant_key: String,
    pub inbox_key: String,
    pub uid: String,
}

/// Counters (kind US).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub pk: String,
    pub sk: String,
    #[serde(default)]
    pub published: i64,
    #[serde(default)]
    pub read: i64,
    /// Whose counters these are (design doc 3's fields).
    #[serde(default)]
    pub tenant_key: String,
    #[serde(default)]
    pub inbox_key: String,
    #[serde(default)]
    pub uid: String,
}

/// A publication (kind PB): what was published to whom, and how many read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Publication {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub id: String,
    pub inbox_key: String,
    pub audience_kind: String,
    pub label: String,
    pub recipients: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub title: String,
    /// `publishing` until every recipient has it, then `published`.
    pub status: String,
    pub created_at: String,
    pub expiredat: i64,
}

/// A message someone is composing in the console (kind DR): kept for a day, published at
/// most once (its key is the publish's idempotency key).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub form: crate::model::inbox::PublishForm,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::model::inbox::Receipt>,
    pub expiredat: i64,
}

pub fn draft_sk(owner: &str, key: &str) -> String {
    format!("draft#{owner}#{key}")
}

/// Writes a draft unless it was published. False: it was.
pub async fn put_draft(store: &Store, d: &DraftItem) -> Result<bool, StoreError> {
    let req = store
        .client()
        .put_item()
        .table_name(table(store))
        .set_item(Some(item(store, d)?))
        .condition_expression("attribute_not_exists(receipt)");
    super::tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("PutItem", &other)),
            },
        }
    })
    .await
}

/// Notes the receipt of a published draft (writing it again changes nothing).
pub async fn set_draft_receipt(
    store: &Store,
    pk: &str,
    sk: &str,
    receipt: &crate::model::inbox::Receipt,
) -> Result<(), StoreError> {
    let value = serde_dynamo::to_attribute_value(receipt)
        .map_err(|e| StoreError::corrupt(&table(store), e))?;
    let req = store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(sk))
        .update_expression("SET receipt = :r")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":r", value);
    super::tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(()),
            // The draft expired meanwhile: the publish stands, the receipt has nowhere to go.
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_) => Ok(()),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// A publish job (kind PJ): the message id a publish request got.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub message_id: String,
    pub inbox_key: String,
    pub expiredat: i64,
}

fn table(store: &Store) -> String {
    store.table(INBOX.base)
}

fn item<T: Serialize>(store: &Store, v: &T) -> Result<HashMap<String, AttributeValue>, StoreError> {
    serde_dynamo::to_item(v).map_err(|e| StoreError::corrupt(&table(store), e))
}

fn decode<T: serde::de::DeserializeOwned>(
    store: &Store,
    v: HashMap<String, AttributeValue>,
) -> Result<T, StoreError> {
    serde_dynamo::from_item(v).map_err(|e| StoreError::corrupt(&table(store), e))
}

pub async fn get<T: serde::de::DeserializeOwned>(
    store: &Store,
    pk: &str,
    sk: &str,
) -> Result<Option<T>, StoreError> {
    let out = store
        .client()
        .get_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(sk))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    out.item.map(|i| decode(store, i)).transpose()
}

/// Live messages (at `now_s`) of one partition, newest first, strictly older than
/// `before` (a message id); and whether there are more.
pub async fn messages(
    store: &Store,
    pk: &str,
    before: Option<&str>,
    now_s: i64,
    size: usize,
) -> Result<(Vec<MessageItem>, bool), StoreError> {
    // Everything below the cursor; the stats items (`c#…`) sort below every message and
    // are filtered out with anything else that is not a message.
    let hi = before.map(message_sk).unwrap_or_else(|| "m#~".into());
    let spec = Spec {
        table: table(store),
        index: None,
        pk: ("pk", s(pk)),
        sk: Some(("sk", Cond::Lt(s(hi)))),
        filters: vec![
            ("kind", Cond::Eq(s("UM"))),
            ("expiredat", Cond::Between(n(now_s + 1), n(i64::MAX / 2))),
        ],
        ascending: false,
        key_attrs: vec!["pk", "sk"],
        projection: None,
    };
    let page = query::page(store, &spec, Start::First, size).await?;
    let items = page
        .items
        .into_iter()
        .map(|i| decode::<MessageItem>(store, i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((items, page.next.is_some()))
}

/// Which of `ids` (public messages) `user_pk` has receipts for.
pub async fn receipts(
    store: &Store,
    user_pk: &str,
    ids: &[String],
) -> Result<Vec<String>, StoreError> {
    let keys = ids
        .iter()
        .map(|id| {
            HashMap::from([
                ("pk".to_string(), s(user_pk)),
                ("sk".to_string(), s(message_sk(id))),
            ])
        })
        .collect();
    Ok(super::items::batch_get(store, INBOX.base, keys)
        .await?
        .iter()
        .filter_map(|item| item.get("sk").and_then(|v| v.as_s().ok()))
        .map(|sk| sk.trim_start_matches("m#").to_string())
        .collect())
}

/// Every stats item of a partition (`c#*` and each category).
pub async fn stats(store: &Store, pk: &str) -> Result<Vec<Stats>, StoreError> {
    let out = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("pk = :pk AND begins_with(sk, :c)")
        .expression_attribute_values(":pk", s(pk))
        .expression_attribute_values(":c", s("c#"))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    out.items
        .unwrap_or_default()
        .into_iter()
        .map(|i| decode(store, i))
        .collect()
}

/// Items of one partition whose sort key starts with `prefix`, newest (highest) first.
pub async fn list<T: serde::de::DeserializeOwned>(
    store: &Store,
    pk: &str,
    prefix: &str,
    start: Start<'_>,
    size: usize,
) -> Result<(Vec<T>, Option<String>, Option<String>), StoreError> {
    let spec = Spec {
        table: table(store),
        index: None,
        pk: ("pk", s(pk)),
        sk: Some(("sk", Cond::BeginsWith(prefix.to_string()))),
        filters: vec![],
        ascending: false,
        key_attrs: vec!["pk", "sk"],
        projection: None,
    };
    let page = query::page(store, &spec, start, size).await?;
    let items = page
        .items
        .into_iter()
        .map(|i| decode(store, i))
        .collect::<Result<_, _>>()?;
    Ok((items, page.next, page.prev))
}

/// The read counts of publications (`(inbox, message id)`), each the sum of its shards:
/// one `BatchGetItem` per 100 shards.
pub async fn read_counts(
    store: &Store,
    tenant: &str,
    publications: &[(String, String)],
) -> Result<HashMap<(String, String), i64>, StoreError> {
    let mut keys = Vec::new();
    let mut owner = HashMap::new();
    for (inbox, id) in publications {
        for shard in 0..READ_SHARDS {
            let pk = read_shard_pk(tenant, inbox, id, shard);
            owner.insert(pk.clone(), (inbox.clone(), id.clone()));
            keys.push(HashMap::from([
                ("pk".to_string(), s(pk)),
                ("sk".to_string(), s(READ_SHARD_SK)),
            ]));
        }
    }
    let mut counts: HashMap<(String, String), i64> =
        publications.iter().map(|p| (p.clone(), 0)).collect();
    for item in super::items::batch_get(store, INBOX.base, keys).await? {
        let pk = item.get("pk").and_then(|v| v.as_s().ok());
        let read = item
            .get("read")
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(0);
        if let Some(p) = pk.and_then(|pk| owner.get(pk)) {
            *counts.entry(p.clone()).or_default() += read;
        }
    }
    Ok(counts)
}

/// The tenants that have settings or inboxes.
pub async fn tenants(store: &Store) -> Result<Vec<String>, StoreError> {
    let out = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", s(REGISTRY_PK))
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    Ok(out
        .items
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
        .collect())
}

/// A JSON view of any inbox item (for `verify` and the stream consumer).
pub fn as_json(item: &HashMap<String, AttributeValue>) -> Value {
    serde_dynamo::from_item(item.clone()).unwrap_or(Value::Null)
}

/// The benchmark's baseline for a read: a bare `SET readat` on one item, without the
/// condition, the counters or the transaction a real read has.
pub async fn set_readat_unguarded(
    store: &Store,
    pk: &str,
    sk: &str,
    ms: i64,
) -> Result<(), StoreError> {
    store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(sk))
        .update_expression("SET readat = :r")
        .expression_attribute_values(":r", n(ms))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}
