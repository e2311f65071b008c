//! The inbox's reads: a partition's live messages, receipts, counters, lists by sort-key
//! prefix, publications' read counts, and the tenant registry.

use std::collections::HashMap;

use super::{
    decode, message_sk, read_shard_pk, table, Kind, MessageItem, Stats, READ_SHARDS, READ_SHARD_SK,
    REGISTRY_PK,
};
use crate::server::store::item::{n, s};
use crate::server::store::many::batch_get;
use crate::server::store::query::{self, Cond, Spec, Start};
use crate::server::store::schema::INBOX;
use crate::server::store::{Store, StoreError};

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
            ("kind", Cond::Eq(s(Kind::Message.as_str()))),
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
    Ok(batch_get(store, INBOX.base, keys)
        .await?
        .iter()
        .filter_map(|item| item.get("sk").and_then(|v| v.as_s().ok()))
        .map(|sk| sk.trim_start_matches("m#").to_string())
        .collect())
}

/// Every stats item of a partition (`c#*` and each category), however many pages.
pub async fn stats(store: &Store, pk: &str) -> Result<Vec<Stats>, StoreError> {
    let req = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("pk = :pk AND begins_with(sk, :c)")
        .expression_attribute_values(":pk", s(pk))
        .expression_attribute_values(":c", s("c#"))
        .consistent_read(true);
    query::every(req)
        .await?
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
    for item in batch_get(store, INBOX.base, keys).await? {
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

/// The tenants that have settings or inboxes, however many pages.
pub async fn tenants(store: &Store) -> Result<Vec<String>, StoreError> {
    let req = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", s(REGISTRY_PK));
    Ok(query::every(req)
        .await?
        .iter()
        .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
        .collect())
}
