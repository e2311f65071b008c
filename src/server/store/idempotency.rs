//! `idempotency_keys-<env>` and `idempotency_stats-<env>`: every condition the engine
//! relies on is written here.
//!
//! - claim: one conditional `PutItem`; on failure DynamoDB hands back the existing item
//!   (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), so a duplicate costs one request;
//! - take over / retry: an `UpdateItem` conditioned on the nonce (and status) the caller saw;
//! - finish: an `UpdateItem` conditioned on `claim_nonce = mine AND status = started`.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use serde::{Deserialize, Serialize};

pub use super::items::Claim;
use super::items::{self, n, s};
use super::schema::{IDEMPOTENCY_KEYS, IDEMPOTENCY_STATS, IDEMPOTENCY_WATCH_INDEX};
use super::{cursor, Store, StoreError};

pub const STARTED: &str = "started";
pub const SUCCEEDED: &str = "succeeded";
pub const FAILED: &str = "failed";

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
    pub status: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_at: Option<i64>,
}

impl KeyItem {
    pub fn id_for(tenant: &str, scope: &str, key_hash: &str) -> String {
        format!("{tenant}#{scope}#{key_hash}")
    }

    pub fn is_expired(&self, now_secs: i64) -> bool {
        self.expires_at <= now_secs
    }
}

fn decode(item: HashMap<String, AttributeValue>, table: &str) -> Result<KeyItem, StoreError> {
    items::decode(item, table)
}

/// Writes a fresh `started` claim unless a live item holds the key.
pub async fn claim(
    store: &Store,
    item: &KeyItem,
    now_secs: i64,
) -> Result<Claim<KeyItem>, StoreError> {
    items::claim(store, IDEMPOTENCY_KEYS.base, "id", item, now_secs).await
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
    pub seen_status: &'a str,
    pub new_nonce: &'a str,
    pub fingerprint: &'a str,
    pub now_ms: i64,
    pub stale_at: i64,
}

pub async fn reclaim(store: &Store, r: &Reclaim<'_>) -> Result<Guarded, StoreError> {
    guarded_update(
        store,
        r.id,
        "SET #status = :started, claim_nonce = :new, fingerprint = :fp, started_at = :now, \
         updated_at = :now, stale_at = :stale, watch = :started, watch_at = :stale \
         ADD attempt_count :one \
         REMOVE completed_at, response_json, response_status, response_headers, stop_reason",
        "claim_nonce = :seen AND #status = :seen_status",
        vec![
            (":started", s(STARTED)),
            (":new", s(r.new_nonce)),
            (":fp", s(r.fingerprint)),
            (":now", n(r.now_ms)),
            (":stale", n(r.stale_at)),
            (":one", n(1)),
            (":seen", s(r.seen_nonce)),
            (":seen_status", s(r.seen_status)),
        ],
        vec![("#status", "status")],
        |item| item.claim_nonce == r.new_nonce && item.status == STARTED,
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
    let mut set = vec![
        "#status = :status",
        "completed_at = :now",
        "updated_at = :now",
    ];
    let mut values = vec![
        (":status", s(if f.succeeded { SUCCEEDED } else { FAILED })),
        (":now", n(f.now_ms)),
        (":mine", s(f.nonce)),
        (":started", s(STARTED)),
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
        format!("SET {} REMOVE watch, watch_at", set.join(", "))
    } else {
        set.push("watch = :failed");
        set.push("watch_at = :now");
        values.push((":failed", s(FAILED)));
        format!("SET {}", set.join(", "))
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
                && item.status == if f.succeeded { SUCCEEDED } else { FAILED }
                && item.completed_at == Some(f.now_ms)
        },
    )
    .await
}

pub async fn get(store: &Store, id: &str) -> Result<Option<KeyItem>, StoreError> {
    super::items::get(store, IDEMPOTENCY_KEYS.base, "id", id).await
}

/// Expires a key now (an admin's decision): the next call with it runs afresh.
pub async fn expire_now(store: &Store, id: &str, now_secs: i64) -> Result<bool, StoreError> {
    let result = store
        .client()
        .update_item()
        .table_name(store.table(IDEMPOTENCY_KEYS.base))
        .key("id", s(id))
        .update_expression("SET expires_at = :now REMOVE watch, watch_at")
        .condition_expression("attribute_exists(id) AND expires_at > :now")
        .expression_attribute_values(":now", n(now_secs))
        .send()
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}

pub struct WatchPage {
    pub items: Vec<KeyItem>,
    pub next_cursor: Option<String>,
}

/// Keys that need watching, from the sparse index: `started` ones already stale
/// (oldest first), or `failed` ones (newest first). Expired keys are left out.
pub async fn list_watch(
    store: &Store,
    status: &str,
    now_ms: i64,
    cursor_in: Option<&str>,
    limit: i32,
) -> Result<WatchPage, StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let keys = ["id", "watch", "watch_at"];
    let start = cursor_in.map(|c| cursor::decode(c, &keys)).transpose()?;
    let mut req = store
        .client()
        .query()
        .table_name(&table)
        .index_name(IDEMPOTENCY_WATCH_INDEX)
        .expression_attribute_values(":w", s(status))
        .expression_attribute_values(":now_s", n(now_ms / 1000))
        .filter_expression("expires_at > :now_s")
        .set_exclusive_start_key(start)
        .limit(limit);
    req = if status == STARTED {
        req.key_condition_expression("watch = :w AND watch_at <= :now")
            .expression_attribute_values(":now", n(now_ms))
            .scan_index_forward(true)
    } else {
        req.key_condition_expression("watch = :w")
            .scan_index_forward(false)
    };
    let out = req.send().await.map_err(StoreError::request("Query"))?;
    let items = out
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|i| decode(i, &table))
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = cursor::next(out.last_evaluated_key.as_ref());
    Ok(WatchPage { items, next_cursor })
}

/// One page of the sweep: finds expired keys and deletes each one that is still expired
/// (a key re-claimed meanwhile is kept). Returns (examined, deleted, next page).
pub async fn sweep_page(
    store: &Store,
    now_secs: i64,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<(usize, usize, Option<HashMap<String, AttributeValue>>), StoreError> {
    let table = store.table(IDEMPOTENCY_KEYS.base);
    let out = store
        .client()
        .scan()
        .table_name(&table)
        .filter_expression("expires_at <= :now")
        .expression_attribute_values(":now", n(now_secs))
        .projection_expression("id")
        .set_exclusive_start_key(start)
        .limit(200)
        .send()
        .await
        .map_err(StoreError::request("Scan"))?;
    let ids: Vec<String> = out
        .items
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| i.get("id").and_then(|v| v.as_s().ok()).cloned())
        .collect();
    let examined = out.scanned_count as usize;
    let mut tasks = tokio::task::JoinSet::new();
    for id in ids {
        let store = store.clone();
        let table = table.clone();
        tasks.spawn(async move {
            store
                .client()
                .delete_item()
                .table_name(table)
                .key("id", s(id))
                .condition_expression("expires_at <= :now")
                .expression_attribute_values(":now", n(now_secs))
                .send()
                .await
                .is_ok()
        });
    }
    let mut deleted = 0;
    while let Some(done) = tasks.join_next().await {
        if matches!(done, Ok(true)) {
            deleted += 1;
        }
    }
    Ok((examined, deleted, out.last_evaluated_key))
}

/// The counters kept per scope and hour.
pub const COUNTERS: &[&str] = &[
    "requests",
    "fresh",
    "replayed",
    "in_progress",
    "takeovers",
    "retries",
    "failures",
    "mismatches",
    "lost_ownership",
];

pub const ALL_SCOPES: &str = "#all";

/// Adds `deltas` to one (scope, hour) bucket, and notes the scope as active that hour.
pub async fn add_stats(
    store: &Store,
    scope: &str,
    hour: &str,
    deltas: &BTreeMap<&'static str, u64>,
    expires_at: i64,
) -> Result<(), StoreError> {
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut adds = Vec::new();
    let mut req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(scope))
        .key("hour", s(hour));
    for (i, (name, value)) in deltas.iter().filter(|(_, v)| **v > 0).enumerate() {
        adds.push(format!("#c{i} :c{i}"));
        req = req
            .expression_attribute_names(format!("#c{i}"), *name)
            .expression_attribute_values(format!(":c{i}"), n(value));
    }
    if adds.is_empty() {
        return Ok(());
    }
    req.update_expression(format!("SET expires_at = :exp ADD {}", adds.join(", ")))
        .expression_attribute_values(":exp", n(expires_at))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(ALL_SCOPES))
        .key("hour", s(hour))
        .update_expression("SET expires_at = :exp ADD scopes :scope")
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":scope", AttributeValue::Ss(vec![scope.to_string()]))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

/// One bucket as read back.
#[derive(Clone, Debug, Default)]
pub struct Bucket {
    pub hour: String,
    pub counts: BTreeMap<String, u64>,
    pub scopes: Vec<String>,
}

/// The buckets of one scope (or [`ALL_SCOPES`]) from `from_hour` on, oldest first.
pub async fn read_stats(
    store: &Store,
    scope: &str,
    from_hour: &str,
) -> Result<Vec<Bucket>, StoreError> {
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .client()
            .query()
            .table_name(&table)
            .key_condition_expression("#scope = :scope AND #hour >= :from")
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_names("#hour", "hour")
            .expression_attribute_values(":scope", s(scope))
            .expression_attribute_values(":from", s(from_hour))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        for item in page.items.unwrap_or_default() {
            let mut bucket = Bucket::default();
            for (k, v) in item {
                match (k.as_str(), v) {
                    ("hour", AttributeValue::S(h)) => bucket.hour = h,
                    ("scopes", AttributeValue::Ss(set)) => bucket.scopes = set,
                    (name, AttributeValue::N(num)) if COUNTERS.contains(&name) => {
                        bucket
                            .counts
                            .insert(name.to_string(), num.parse().unwrap_or(0));
                    }
                    _ => {}
                }
            }
            out.push(bucket);
        }
        match page.last_evaluated_key {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    Ok(out)
}
