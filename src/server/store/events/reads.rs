//! The read side of the events' tables (docs/events.md): single records, the console's
//! lists (by day, by conversation, the outbox) and the counts of the Overview page.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{ActionRecord, ConversationState, EventRecord};
use crate::server::store::fanout;
use crate::server::store::item::{self, decode, s};
use crate::server::store::many;
use crate::server::store::query::{self, Cond, Start};
use crate::server::store::schema::{
    EVENTS_BY_CONVERSATION_INDEX, EVENTS_BY_DAY_INDEX, MW_CONVERSATION_STATE, MW_IDEMPOTENCY,
};
use crate::server::store::{Store, StoreError};

/// The record under a key, whatever its kind.
pub async fn get_event(store: &Store, key: &str) -> Result<Option<EventRecord>, StoreError> {
    item::get(store, MW_IDEMPOTENCY.base, "event_id", key).await
}

pub async fn get_action(store: &Store, key: &str) -> Result<Option<ActionRecord>, StoreError> {
    item::get(store, MW_IDEMPOTENCY.base, "event_id", key).await
}

/// The side effects of `keys` that exist, in no particular order (one request per 100).
pub async fn get_actions(
    store: &Store,
    keys: Vec<String>,
) -> Result<Vec<ActionRecord>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let keys = keys
        .into_iter()
        .map(|k| many::Item::from([("event_id".to_string(), s(k))]))
        .collect();
    many::batch_get(store, MW_IDEMPOTENCY.base, keys)
        .await?
        .into_iter()
        .map(|i| serde_dynamo::from_item(i).map_err(|e| StoreError::corrupt(&table, e)))
        .collect()
}

/// A conversation's state (strongly consistent), or an empty one at version 0.
pub async fn get_state(
    store: &Store,
    conversation_id: &str,
) -> Result<ConversationState, StoreError> {
    let found: Option<ConversationState> = item::get(
        store,
        MW_CONVERSATION_STATE.base,
        "conversation_id",
        conversation_id,
    )
    .await?;
    Ok(found.unwrap_or_else(|| ConversationState {
        conversation_id: conversation_id.to_string(),
        ..ConversationState::default()
    }))
}

pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// One page of an index partition of Table A, newest first, on the shared query helper.
async fn index_page<T: serde::de::DeserializeOwned>(
    store: &Store,
    index: &'static str,
    pk: (&'static str, &str),
    key_attrs: Vec<&'static str>,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<T>, StoreError> {
    let spec = query::Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(index),
        pk: (pk.0, s(pk.1)),
        sk: None,
        filters: Vec::new(),
        ascending: false,
        key_attrs,
        projection: None,
    };
    let start = cursor.map_or(Start::First, Start::After);
    let page = query::page(store, &spec, start, limit.max(1) as usize).await?;
    let items = page
        .items
        .into_iter()
        .map(|i| decode(i, &spec.table))
        .collect::<Result<Vec<T>, _>>()?;
    Ok(Page {
        items,
        next_cursor: page.next,
    })
}

/// Events of one day, newest first, across the day's shards (and the unsharded day a
/// release before this one wrote).
pub async fn events_of_day(
    store: &Store,
    day: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<EventRecord>, StoreError> {
    let shards: Vec<fanout::Shard> = super::day_keys(day)
        .into_iter()
        .map(|(id, key)| fanout::Shard::new(id, day_spec(store, key, None)))
        .collect();
    // One binding for the day: every shard's query differs by its partition only.
    let binding = day_spec(store, day.to_string(), None).binding();
    let size = limit.max(1) as usize;
    let page = fanout::page(store, &shards, "created_sk", &binding, cursor, size).await?;
    let table = store.table(MW_IDEMPOTENCY.base);
    let items = page
        .items
        .into_iter()
        .map(|(_, i)| decode(i, &table))
        .collect::<Result<Vec<EventRecord>, _>>()?;
    Ok(Page {
        items,
        next_cursor: page.next,
    })
}

/// One partition of `event-day-index` (`key`: a day's shard, or an unsharded day), newest
/// first, from `from_sk` when given.
fn day_spec(store: &Store, key: String, from: Option<(&str, &str)>) -> query::Spec {
    query::Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(EVENTS_BY_DAY_INDEX),
        pk: ("event_day", s(key)),
        sk: from.map(|(lo, hi)| ("created_sk", Cond::Between(s(lo), s(hi)))),
        filters: Vec::new(),
        ascending: false,
        key_attrs: vec!["event_id", "event_day", "created_sk"],
        projection: None,
    }
}

/// One conversation's events, newest first.
pub async fn events_of_conversation(
    store: &Store,
    conversation_id: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<EventRecord>, StoreError> {
    let keys = vec!["event_id", "conversation_id", "created_sk"];
    let pk = ("conversation_id", conversation_id);
    index_page(store, EVENTS_BY_CONVERSATION_INDEX, pk, keys, cursor, limit).await
}

/// Items read per page while counting events.
const COUNT_PAGE: usize = 1000;

/// What a count of one day's recent events read, newest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventSample {
    pub events: u64,
    /// Duplicate deliveries of those events.
    pub duplicates: u64,
    /// Every event since the bound was read; false: it stopped at its limit.
    pub exact: bool,
    /// The `created_sk` of the newest and of the oldest event read.
    pub newest_sk: Option<String>,
    pub oldest_sk: Option<String>,
}

/// Events received since `from_sk` (a `created_sk` lower bound) on `day`, newest first and
/// at most `limit` of them, one sample per shard of the day (`limit` divided among them):
/// how many, and how many duplicate deliveries they had. A busy hour is not read whole on
/// every view of a page: each sample says where it stopped.
pub async fn count_events_since(
    store: &Store,
    day: &str,
    from_sk: &str,
    limit: usize,
) -> Result<Vec<EventSample>, StoreError> {
    if from_sk > end_of_day_sk(day).as_str() {
        // Nothing of `day` is that late (and BETWEEN refuses a reversed range).
        return Ok(Vec::new());
    }
    let keys = super::day_keys(day);
    let per_shard = limit.div_ceil(keys.len()).max(1);
    let end = end_of_day_sk(day);
    // Every shard at once.
    let samples = keys.into_iter().map(|(_, key)| {
        let spec = query::Spec {
            projection: Some(vec!["duplicates"]),
            ..day_spec(store, key, Some((from_sk, &end)))
        };
        async move { count_shard(store, &spec, per_shard).await }
    });
    futures_util::future::try_join_all(samples).await
}

/// One partition's newest events, at most `limit`.
async fn count_shard(
    store: &Store,
    spec: &query::Spec,
    limit: usize,
) -> Result<EventSample, StoreError> {
    let mut sample = EventSample {
        exact: true,
        ..EventSample::default()
    };
    let mut cursor = None::<String>;
    loop {
        let start = cursor.as_deref().map_or(Start::First, Start::After);
        let want = COUNT_PAGE
            .min(limit.saturating_sub(sample.events as usize))
            .max(1);
        let page = query::page(store, spec, start, want).await?;
        for item in &page.items {
            sample.events += 1;
            if let Some(AttributeValue::N(d)) = item.get("duplicates") {
                sample.duplicates += d.parse::<u64>().unwrap_or(0);
            }
            if let Some(AttributeValue::S(sk)) = item.get("created_sk") {
                sample.newest_sk.get_or_insert_with(|| sk.clone());
                sample.oldest_sk = Some(sk.clone());
            }
        }
        match page.next {
            Some(_) if sample.events as usize >= limit => {
                sample.exact = false;
                return Ok(sample);
            }
            Some(next) => cursor = Some(next),
            None => return Ok(sample),
        }
    }
}

/// Above every `created_sk` of `day`: those begin with the day's `YYYY-MM-DDT` and a digit,
/// and `~` sorts after every digit. (The helper has no `>=` condition; a range to the end
/// of the day reads the same items.)
fn end_of_day_sk(day: &str) -> String {
    format!("{day}T~")
}
