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
//! Ours besides: publications (`t#<tenant>` / `pub#<inbox>#<message_id>`, kind PB, with
//! per-message read counts), publish jobs (`t#<tenant>` / `job#<key>`, kind PJ, so a
//! publish that stopped half-way resumes with the same message id), the tenant registry
//! (`tenants` / `<tenant>`, kind TR), and what the stream consumer keeps (`x#…` removals
//! already counted; stream positions are in the settings table).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, KeysAndAttributes, Put, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    #[serde(default)]
    pub read: i64,
    pub expiredat: i64,
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

/// Writes a settings-like item (tenant settings, inbox config) and registers the tenant.
pub async fn put_config<T: Serialize>(
    store: &Store,
    tenant: &str,
    v: &T,
    keep_until: i64,
) -> Result<(), StoreError> {
    let registry = HashMap::from([
        ("pk".to_string(), s(REGISTRY_PK)),
        ("sk".to_string(), s(tenant)),
        ("kind".to_string(), s("TR")),
        ("expiredat".to_string(), n(keep_until)),
    ]);
    store
        .client()
        .transact_write_items()
        .transact_items(put(store, item(store, v)?, None)?)
        .transact_items(put(store, registry, None)?)
        .send()
        .await
        .map_err(StoreError::request("TransactWriteItems"))?;
    Ok(())
}

fn put(
    store: &Store,
    item: HashMap<String, AttributeValue>,
    condition: Option<&str>,
) -> Result<TransactWriteItem, StoreError> {
    let p = Put::builder()
        .table_name(table(store))
        .set_item(Some(item))
        .set_condition_expression(condition.map(str::to_string))
        .build()
        .map_err(|e| StoreError::corrupt("inbox put", e))?;
    Ok(TransactWriteItem::builder().put(p).build())
}

/// How much a change moves the counters.
#[derive(Clone, Copy, Debug)]
pub struct Delta {
    pub published: i64,
    pub read: i64,
}

/// `ADD published :p, read :r` on a stats item, creating it with its kind if needed.
pub(crate) fn bump(
    store: &Store,
    pk: &str,
    category: &str,
    d: Delta,
    keep_until: i64,
) -> Result<TransactWriteItem, StoreError> {
    let mut adds = Vec::new();
    let mut u = Update::builder()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(stats_sk(category)))
        .expression_attribute_values(":k", s("US"))
        .expression_attribute_values(":e", n(keep_until));
    if d.published != 0 {
        adds.push("published :p");
        u = u.expression_attribute_values(":p", n(d.published));
    }
    if d.read != 0 {
        adds.push("#r :r");
        u = u
            .expression_attribute_names("#r", "read")
            .expression_attribute_values(":r", n(d.read));
    }
    let u = u
        .update_expression(format!(
            "ADD {} SET kind = :k, expiredat = :e",
            adds.join(", ")
        ))
        .build()
        .map_err(|e| StoreError::corrupt("inbox stats", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// The stats updates for one message (or read) in `pk`: `c#*` and its category's.
pub(crate) fn bumps(
    store: &Store,
    pk: &str,
    category: Option<&str>,
    d: Delta,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut out = vec![bump(store, pk, ALL, d, keep_until)?];
    if let Some(c) = category {
        out.push(bump(store, pk, c, d, keep_until)?);
    }
    Ok(out)
}

pub enum JobStart {
    New,
    /// A publish with this key started before: resume with its message id.
    Resume(Job),
}

/// Records the job and its publication together, unless the job exists.
pub async fn start_job(
    store: &Store,
    tenant: &str,
    job: &Job,
    publication: &Publication,
) -> Result<JobStart, StoreError> {
    let result = store
        .client()
        .transact_write_items()
        .transact_items(put(
            store,
            item(store, job)?,
            Some("attribute_not_exists(pk)"),
        )?)
        .transact_items(put(store, item(store, publication)?, None)?)
        .send()
        .await;
    match result {
        Ok(_) => Ok(JobStart::New),
        Err(e) => {
            let e = e.into_service_error();
            if reasons(&e).first().map(String::as_str) == Some("ConditionalCheckFailed") {
                let found: Job = get(store, &tenant_pk(tenant), &job.sk)
                    .await?
                    .ok_or_else(|| StoreError::corrupt(&table(store), "job vanished"))?;
                Ok(JobStart::Resume(found))
            } else {
                Err(StoreError::service("TransactWriteItems", &e))
            }
        }
    }
}

/// The cancellation reason of each action of a cancelled transaction (`None` when it
/// would have succeeded).
pub(crate) fn reasons(e: &TransactWriteItemsError) -> Vec<String> {
    match e {
        TransactWriteItemsError::TransactionCanceledException(c) => c
            .cancellation_reasons()
            .iter()
            .map(|r| r.code().unwrap_or("None").to_string())
            .collect(),
        _ => Vec::new(),
    }
}

pub enum Written {
    Done,
    /// Some actions' conditions failed (their indexes); nothing was written.
    Refused(Vec<usize>),
    /// Another transaction held an item: try again.
    Conflict,
}

/// Runs one transaction and says how it ended.
pub(crate) async fn transact(
    store: &Store,
    actions: Vec<TransactWriteItem>,
) -> Result<Written, StoreError> {
    let result = store
        .client()
        .transact_write_items()
        .set_transact_items(Some(actions))
        .send()
        .await;
    let e = match result {
        Ok(_) => return Ok(Written::Done),
        Err(e) => e.into_service_error(),
    };
    let codes = reasons(&e);
    if codes.iter().any(|c| c == "TransactionConflict") {
        return Ok(Written::Conflict);
    }
    if !codes.is_empty()
        && codes
            .iter()
            .all(|c| c == "None" || c == "ConditionalCheckFailed")
    {
        return Ok(Written::Refused(
            codes
                .iter()
                .enumerate()
                .filter(|(_, c)| *c == "ConditionalCheckFailed")
                .map(|(i, _)| i)
                .collect(),
        ));
    }
    Err(StoreError::service("TransactWriteItems", &e))
}

/// The actions that deliver one message copy and count it.
pub fn deliver(
    store: &Store,
    m: &MessageItem,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut out = vec![put(
        store,
        item(store, m)?,
        Some("attribute_not_exists(pk)"),
    )?];
    let d = Delta {
        published: 1,
        read: 0,
    };
    out.extend(bumps(
        store,
        &m.pk,
        m.taxonomy.category.as_deref(),
        d,
        keep_until,
    )?);
    Ok(out)
}

pub async fn finish_publication(
    store: &Store,
    tenant: &str,
    inbox: &str,
    id: &str,
) -> Result<(), StoreError> {
    store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(tenant_pk(tenant)))
        .key("sk", s(publication_sk(inbox, id)))
        .update_expression("SET #st = :p")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":p", s("published"))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

/// Marks a user message read: `readat` only if absent, with the counters, in one
/// transaction.
pub fn mark_user_message(
    store: &Store,
    m: &MessageItem,
    tenant: &str,
    now_ms: i64,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let now_s = now_ms / 1000;
    let set = Update::builder()
        .table_name(table(store))
        .key("pk", s(&m.pk))
        .key("sk", s(&m.sk))
        .update_expression("SET readat = :now")
        .condition_expression(
            "attribute_exists(pk) AND attribute_not_exists(readat) AND expiredat > :s",
        )
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":s", n(now_s))
        .build()
        .map_err(|e| StoreError::corrupt("inbox read", e))?;
    let mut out = vec![TransactWriteItem::builder().update(set).build()];
    let d = Delta {
        published: 0,
        read: 1,
    };
    out.extend(bumps(
        store,
        &m.pk,
        m.taxonomy.category.as_deref(),
        d,
        keep_until,
    )?);
    out.push(count_publication_read(store, tenant, &m.inbox_key, &m.id)?);
    Ok(out)
}

/// Marks a public message read for one user: their receipt only if absent, with the
/// counters, in one transaction (and only while the message lives).
pub fn mark_public_message(
    store: &Store,
    m: &MessageItem,
    receipt: &Receipt,
    tenant: &str,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let live = ConditionCheck::builder()
        .table_name(table(store))
        .key("pk", s(&m.pk))
        .key("sk", s(&m.sk))
        .condition_expression("attribute_exists(pk) AND expiredat > :s")
        .expression_attribute_values(":s", n(receipt.readat / 1000))
        .build()
        .map_err(|e| StoreError::corrupt("inbox read", e))?;
    let mut out = vec![
        put(
            store,
            item(store, receipt)?,
            Some("attribute_not_exists(pk)"),
        )?,
        TransactWriteItem::builder().condition_check(live).build(),
    ];
    let d = Delta {
        published: 0,
        read: 1,
    };
    out.extend(bumps(
        store,
        &receipt.pk,
        receipt.taxonomy.category.as_deref(),
        d,
        keep_until,
    )?);
    out.push(count_publication_read(store, tenant, &m.inbox_key, &m.id)?);
    Ok(out)
}

fn count_publication_read(
    store: &Store,
    tenant: &str,
    inbox: &str,
    id: &str,
) -> Result<TransactWriteItem, StoreError> {
    let u = Update::builder()
        .table_name(table(store))
        .key("pk", s(tenant_pk(tenant)))
        .key("sk", s(publication_sk(inbox, id)))
        .update_expression("ADD #r :one")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_names("#r", "read")
        .expression_attribute_values(":one", n(1))
        .build()
        .map_err(|e| StoreError::corrupt("inbox publication", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
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
    let mut found = Vec::new();
    for chunk in ids.chunks(100) {
        let keys = chunk
            .iter()
            .map(|id| {
                HashMap::from([
                    ("pk".to_string(), s(user_pk)),
                    ("sk".to_string(), s(message_sk(id))),
                ])
            })
            .collect();
        let mut request = HashMap::from([(
            table(store),
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::corrupt("inbox receipts", e))?,
        )]);
        for _ in 0..10 {
            let out = store
                .client()
                .batch_get_item()
                .set_request_items(Some(request.clone()))
                .send()
                .await
                .map_err(StoreError::request("BatchGetItem"))?;
            for item in out.responses.unwrap_or_default().into_values().flatten() {
                if let Some(AttributeValue::S(sk)) = item.get("sk") {
                    found.push(sk.trim_start_matches("m#").to_string());
                }
            }
            match out.unprocessed_keys.filter(|u| !u.is_empty()) {
                Some(left) => request = left,
                None => break,
            }
        }
    }
    Ok(found)
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
