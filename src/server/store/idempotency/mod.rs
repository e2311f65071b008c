//! `idempotency_keys-<env>` (and, in `stats`, `idempotency_stats-<env>`): every condition
//! the engine relies on is written here (docs/idempotency.md, tables in docs/data-model.md).
//!
//! - claim: one conditional `PutItem`; on failure DynamoDB hands back the existing item
//!   (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), so a duplicate costs one request;
//! - take over / retry: an `UpdateItem` conditioned on the nonce (and status) the caller saw;
//! - finish: an `UpdateItem` conditioned on `claim_nonce = mine AND status = started`.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use serde::{Deserialize, Serialize};

pub use super::item::Claim;
use super::item::{self, n, s};
use super::many;
use super::query::{Cond, Spec};
use super::schema::{
    IDEMPOTENCY_CORRELATION_INDEX, IDEMPOTENCY_KEYS, IDEMPOTENCY_WATCH_INDEX,
    IDEMPOTENCY_WATCH_SHARD_INDEX,
};
use super::{cursor, fanout, Store, StoreError};

mod commit;
mod expiry;
mod stats;
pub use commit::*;
pub use expiry::*;
pub use stats::*;

/// Where a key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyStatus {
    /// Claimed; its owner is running the operation (or vanished: see `stale_at`).
    #[serde(rename = "started")]
    Started,
    #[serde(rename = "succeeded")]
    Succeeded,
    /// The attempt failed and had no effect: the next call with the key may run it.
    #[serde(rename = "failed")]
    Failed,
}

impl KeyStatus {
    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Started => "started",
            KeyStatus::Succeeded => "succeeded",
            KeyStatus::Failed => "failed",
        }
    }
}

/// One key. Times are epoch milliseconds, except `expires_at` (epoch seconds, the TTL).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyItem {
    /// `tenant#scope#key_hash`
    pub id: String,
    pub tenant: String,
    pub scope: String,
    pub key_hash: String,
    /// SHA-256 of the request the key was first used with: same key, other request → mismatch.
    pub fingerprint: String,
    pub status: KeyStatus,
    pub claim_nonce: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<u16>,
    /// The stored answer's headers (HTTP layer): a JSON list of `[name, value]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    pub expires_at: i64,
    pub attempt_count: u32,
    /// When a `started` claim may be taken over.
    pub stale_at: i64,
    /// `started` or `failed` while the key needs watching; absent once it succeeded.
    /// Stored as `watch_key`/`watch_sk`, the sharded `watch-shard-index` ([`encode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<KeyStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_at: Option<i64>,
    /// The API key that sent it (REST keys): its SHA-256, which is how the API keys know
    /// it (never the secret), so the key's page can name the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_hash: Option<String>,
    /// The HMAC of the `X-Correlation-Id` the REST request carried, if any (the sparse
    /// `correlation-index`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_hash: Option<String>,
}

impl KeyItem {
    pub fn id_for(tenant: &str, scope: &str, key_hash: &str) -> String {
        format!("{tenant}#{scope}#{key_hash}")
    }

    pub fn is_expired(&self, now_secs: i64) -> bool {
        self.expires_at <= now_secs
    }
}

/// The shards of `watch-shard-index`: a two-step key writes its index copy when it starts
/// and removes it when it ends, two or more write units a key on one partition. At 10,000
/// such keys a second that is 20,000 units a second: 32 shards keep each under two thirds
/// of a partition's 1,000 (docs/dynamodb.md, "No hot partition key").
pub const WATCH_SHARDS: u32 = 32;

/// A watch as stored: `watch_key`, the status on the key's shard (`started#07`), and
/// `watch_sk`, when (15 digits) and the key's id: unique, in time order, as the sharded
/// lists merge by it.
fn watch_values(status: KeyStatus, at: i64, id: &str) -> (AttributeValue, AttributeValue) {
    (
        s(fanout::key(status.as_str(), id, WATCH_SHARDS)),
        s(format!("{at:015}#{id}")),
    )
}

/// A key as stored: its watch in `watch_key`/`watch_sk`, never in the unsharded
/// `watch`/`watch_at` (one partition per status on `watch-index`) a release before wrote.
pub(crate) fn encode(
    key: &KeyItem,
    table: &str,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let mut av: HashMap<String, AttributeValue> =
        serde_dynamo::to_item(key).map_err(|e| StoreError::corrupt(table, e))?;
    av.remove("watch");
    av.remove("watch_at");
    if let (Some(status), Some(at)) = (key.watch, key.watch_at) {
        let (watch_key, watch_sk) = watch_values(status, at, &key.id);
        av.insert("watch_key".into(), watch_key);
        av.insert("watch_sk".into(), watch_sk);
    }
    Ok(av)
}

/// A key as read, whichever way its watch was stored.
fn decode(mut item: HashMap<String, AttributeValue>, table: &str) -> Result<KeyItem, StoreError> {
    let sharded = (item.remove("watch_key"), item.remove("watch_sk"));
    if let (Some(AttributeValue::S(key)), Some(AttributeValue::S(sk))) = sharded {
        let status = key.split('#').next().unwrap_or_default().to_string();
        let at = sk.split('#').next().unwrap_or_default().to_string();
        item.insert("watch".into(), AttributeValue::S(status));
        item.insert("watch_at".into(), AttributeValue::N(at));
    }
    item::decode(item, table)
}

/// Writes a fresh `started` claim unless a live item holds the key.
pub async fn claim(
    store: &Store,
    key: &KeyItem,
    now_secs: i64,
) -> Result<Claim<KeyItem>, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let av = encode(key, &table)?;
    match item::put_item_unless_live(store, &table, "id", av, now_secs).await? {
        None => Ok(Claim::Won),
        Some(old) if !old.is_empty() => Ok(Claim::Exists(Box::new(decode(old, &table)?))),
        Some(_) => Err(StoreError::Request {
            op: "PutItem",
            detail: "conditional check failed without the existing item".into(),
        }),
    }
}

/// The result of a conditional update: the item after it, or the item that was there
/// instead (`None` when it is gone).
pub enum Guarded {
    Done(Box<KeyItem>),
    Lost(Option<Box<KeyItem>>),
}

/// A conditional update of one key. `applied` recognises the item this very update
/// leaves behind: when the condition fails on such an item, an earlier attempt of this
/// update was applied and only its answer was lost (the SDK resends requests whose answer
/// does not come), so it counts as done.
async fn guarded_update(
    store: &Store,
    id: &str,
    update: &str,
    condition: &str,
    values: Vec<(&str, AttributeValue)>,
    names: Vec<(&str, &str)>,
    applied: impl Fn(&KeyItem) -> bool,
) -> Result<Guarded, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let mut req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("id", s(id))
        .update_expression(update)
        .condition_expression(condition)
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    for (k, v) in values {
        req = req.expression_attribute_values(k, v);
    }
    for (k, v) in names {
        req = req.expression_attribute_names(k, v);
    }
    let table = &table;
    let applied = &applied;
    super::tx::retrying(|| {
        let req = req.clone();
        async move {
            match req.send().await {
                Ok(out) => Ok(Guarded::Done(Box::new(decode(
                    out.attributes.unwrap_or_default(),
                    table,
                )?))),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(ccf) => {
                        let found = ccf
                            .item
                            .filter(|i| !i.is_empty())
                            .map(|i| decode(i, table).map(Box::new))
                            .transpose()?;
                        Ok(match found {
                            Some(item) if applied(&item) => Guarded::Done(item),
                            other => Guarded::Lost(other),
                        })
                    }
                    other => Err(StoreError::service("UpdateItem", &other)),
                },
            }
        }
    })
    .await
}

/// A new claim on an existing item: a stale `started` one (takeover) or a `failed` one
/// (retry). Wins only if the item still has the nonce and status the caller saw.
pub struct Reclaim<'a> {
    pub id: &'a str,
    pub seen_nonce: &'a str,
    pub seen_status: KeyStatus,
    pub new_nonce: &'a str,
    pub fingerprint: &'a str,
    pub now_ms: i64,
    pub stale_at: i64,
}

pub async fn reclaim(store: &Store, r: &Reclaim<'_>) -> Result<Guarded, StoreError> {
    let (watch_key, watch_sk) = watch_values(KeyStatus::Started, r.stale_at, r.id);
    guarded_update(
        store,
        r.id,
        "SET #status = :started, claim_nonce = :new, fingerprint = :fp, started_at = :now, \
         updated_at = :now, stale_at = :stale, watch_key = :wk, watch_sk = :wsk \
         ADD attempt_count :one \
         REMOVE completed_at, response_json, response_status, response_headers, stop_reason, \
         watch, watch_at",
        "claim_nonce = :seen AND #status = :seen_status",
        vec![
            (":wk", watch_key),
            (":wsk", watch_sk),
            (":started", s(KeyStatus::Started.as_str())),
            (":new", s(r.new_nonce)),
            (":fp", s(r.fingerprint)),
            (":now", n(r.now_ms)),
            (":stale", n(r.stale_at)),
            (":one", n(1)),
            (":seen", s(r.seen_nonce)),
            (":seen_status", s(r.seen_status.as_str())),
        ],
        vec![("#status", "status")],
        |item| item.claim_nonce == r.new_nonce && item.status == KeyStatus::Started,
    )
    .await
}

/// How an owner ends its claim.
pub struct Finish<'a> {
    pub id: &'a str,
    pub nonce: &'a str,
    pub succeeded: bool,
    pub response_json: Option<&'a str>,
    pub response_status: Option<u16>,
    pub response_headers: Option<&'a str>,
    pub stop_reason: Option<&'a str>,
    pub now_ms: i64,
}

/// Records the owner's result; refused (with the item as it is) when the caller no
/// longer owns the claim, so a late owner can never overwrite a newer result.
pub async fn finish(store: &Store, f: &Finish<'_>) -> Result<Guarded, StoreError> {
    let ended = if f.succeeded {
        KeyStatus::Succeeded
    } else {
        KeyStatus::Failed
    };
    let mut set = vec![
        "#status = :status",
        "completed_at = :now",
        "updated_at = :now",
    ];
    let mut values = vec![
        (":status", s(ended.as_str())),
        (":now", n(f.now_ms)),
        (":mine", s(f.nonce)),
        (":started", s(KeyStatus::Started.as_str())),
    ];
    if let Some(json) = f.response_json {
        set.push("response_json = :json");
        values.push((":json", s(json)));
    }
    if let Some(status) = f.response_status {
        set.push("response_status = :code");
        values.push((":code", n(status)));
    }
    if let Some(headers) = f.response_headers {
        set.push("response_headers = :hdrs");
        values.push((":hdrs", s(headers)));
    }
    if let Some(reason) = f.stop_reason {
        set.push("stop_reason = :reason");
        values.push((":reason", s(reason)));
    }
    let update = if f.succeeded {
        format!(
            "SET {} REMOVE watch, watch_at, watch_key, watch_sk",
            set.join(", ")
        )
    } else {
        let (watch_key, watch_sk) = watch_values(KeyStatus::Failed, f.now_ms, f.id);
        set.push("watch_key = :wk");
        set.push("watch_sk = :wsk");
        values.push((":wk", watch_key));
        values.push((":wsk", watch_sk));
        format!("SET {} REMOVE watch, watch_at", set.join(", "))
    };
    guarded_update(
        store,
        f.id,
        &update,
        "claim_nonce = :mine AND #status = :started",
        values,
        vec![("#status", "status")],
        |item| {
            item.claim_nonce == f.nonce
                && item.status == ended
                && item.completed_at == Some(f.now_ms)
        },
    )
    .await
}

pub async fn get(store: &Store, id: &str) -> Result<Option<KeyItem>, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let out = store
        .client()
        .get_item()
        .table_name(&table)
        .key("id", s(id))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    out.item.map(|i| decode(i, &table)).transpose()
}

/// The keys among `ids` that exist, read together (one `BatchGetItem` per 100 ids).
pub async fn get_many(store: &Store, ids: &[String]) -> Result<Vec<KeyItem>, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let mut out = Vec::new();
    for chunk in ids.chunks(100) {
        let keys = chunk
            .iter()
            .map(|id| HashMap::from([("id".to_string(), s(id))]))
            .collect();
        for item in many::batch_get(store, IDEMPOTENCY_KEYS.base, keys).await? {
            out.push(decode(item, &table)?);
        }
    }
    Ok(out)
}

/// The keys whose requests carried the correlation id of `correlation_hash`, newest first,
/// up to `limit` (one `Query` of the sparse `correlation-index`; like every index, it may
/// lag a write by a moment).
pub async fn by_correlation(
    store: &Store,
    correlation_hash: &str,
    limit: i32,
) -> Result<Vec<KeyItem>, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let out = store
        .client()
        .query()
        .table_name(&table)
        .index_name(IDEMPOTENCY_CORRELATION_INDEX)
        .key_condition_expression("correlation_hash = :c")
        .expression_attribute_values(":c", s(correlation_hash))
        .scan_index_forward(false)
        .limit(limit)
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    out.items
        .unwrap_or_default()
        .into_iter()
        .map(|i| decode(i, &table))
        .collect()
}

pub struct WatchPage {
    pub items: Vec<KeyItem>,
    pub next_cursor: Option<String>,
}

/// Keys that need watching, from the sparse sharded index: `started` ones already stale
/// (oldest first), or `failed` ones (newest first), every shard read and merged. Expired
/// keys are left out, and so is a copy that a console of the release before left behind
/// when it ended a key (it removed only `watch`).
pub async fn list_watch(
    store: &Store,
    status: KeyStatus,
    now_ms: i64,
    cursor_in: Option<&str>,
    limit: i32,
) -> Result<WatchPage, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let started = status == KeyStatus::Started;
    let spec = |key: String| Spec {
        table: table.clone(),
        index: Some(IDEMPOTENCY_WATCH_SHARD_INDEX),
        pk: ("watch_key", s(&key)),
        sk: started.then(|| ("watch_sk", Cond::Lt(s(format!("{:015}", now_ms + 1))))),
        // The status and, for `started`, the stale time as the item holds them: a console
        // of the release before that took a key over wrote only `watch`/`watch_at`.
        filters: std::iter::once(("expires_at", Cond::Gt(n(now_ms / 1000))))
            .chain([("status", Cond::Eq(s(status.as_str())))])
            .chain(started.then(|| ("stale_at", Cond::Lt(n(now_ms + 1)))))
            .collect(),
        ascending: started,
        key_attrs: vec!["id", "watch_key", "watch_sk"],
        projection: None,
    };
    // The shards alone: no release wrote this index unsharded.
    let shards: Vec<fanout::Shard> = fanout::keys(status.as_str(), WATCH_SHARDS)
        .into_iter()
        .filter(|(id, _)| *id < WATCH_SHARDS)
        .map(|(id, key)| fanout::Shard::new(id, spec(key)))
        .collect();
    let binding = cursor::Binding::new([
        table.as_str(),
        IDEMPOTENCY_WATCH_SHARD_INDEX,
        status.as_str(),
    ]);
    let size = limit.max(1) as usize;
    let page = fanout::page(store, &shards, "watch_sk", &binding, cursor_in, size).await?;
    let items = page
        .items
        .into_iter()
        .map(|(_, i)| decode(i, &table))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WatchPage {
        items,
        next_cursor: page.next,
    })
}

/// Moves the watch of keys that a console of the release before wrote (`watch`/`watch_at`,
/// on the unsharded `watch-index`) to the sharded index; each move is conditioned on the
/// watch it read, so a key changed meanwhile is left to its writer. Run at start and once
/// a minute: during a rolling deployment an old console's key reaches the lists within a
/// minute. Expired keys are left for TTL. How many it moved.
pub async fn mend_watch(store: &Store, now_secs: i64) -> Result<usize, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let mut moved = 0;
    for status in [KeyStatus::Started, KeyStatus::Failed] {
        let mut start = None;
        loop {
            let out = store
                .client()
                .query()
                .table_name(&table)
                .index_name(IDEMPOTENCY_WATCH_INDEX)
                .key_condition_expression("watch = :w")
                .expression_attribute_values(":w", s(status.as_str()))
                .projection_expression("id, watch_at")
                .filter_expression("expires_at > :now")
                .expression_attribute_values(":now", n(now_secs))
                .set_exclusive_start_key(start)
                .limit(100)
                .send()
                .await
                .map_err(StoreError::request("Query"))?;
            for found in out.items.unwrap_or_default() {
                let (Some(AttributeValue::S(id)), Some(AttributeValue::N(at))) =
                    (found.get("id"), found.get("watch_at"))
                else {
                    continue;
                };
                let Ok(at_ms) = at.parse::<i64>() else {
                    continue;
                };
                let (watch_key, watch_sk) = watch_values(status, at_ms, id);
                let req = store
                    .client()
                    .update_item()
                    .table_name(&table)
                    .key("id", s(id))
                    .update_expression(
                        "SET watch_key = :wk, watch_sk = :wsk REMOVE watch, watch_at",
                    )
                    .condition_expression("watch = :w AND watch_at = :at")
                    .expression_attribute_values(":wk", watch_key)
                    .expression_attribute_values(":wsk", watch_sk)
                    .expression_attribute_values(":w", s(status.as_str()))
                    .expression_attribute_values(":at", n(at_ms));
                if item::update_if(req).await? {
                    moved += 1;
                }
            }
            start = out.last_evaluated_key.filter(|k| !k.is_empty());
            if start.is_none() {
                break;
            }
        }
    }
    Ok(moved)
}
