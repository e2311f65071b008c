//! The read side of design doc 1's tables: single records, the console's lists (by day,
//! by conversation, the outbox) and the counts of the health page.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{ActionRecord, ConversationState, EventRecord};
use crate::server::store::items::{self, decode, s};
use crate::server::store::schema::{
    EVENTS_BY_CONVERSATION_INDEX, EVENTS_BY_DAY_INDEX, MW_CONVERSATION_STATE, MW_IDEMPOTENCY,
    OUTBOX_INDEX,
};
use crate::server::store::{cursor, query, Store, StoreError};

/// The record under a key, whatever its kind.
pub async fn get_event(store: &Store, key: &str) -> Result<Option<EventRecord>, StoreError> {
    items::get(store, MW_IDEMPOTENCY.base, "event_id", key).await
}

pub async fn get_action(store: &Store, key: &str) -> Result<Option<ActionRecord>, StoreError> {
    items::get(store, MW_IDEMPOTENCY.base, "event_id", key).await
}

/// A conversation's state (strongly consistent), or an empty one at version 0.
pub async fn get_state(
    store: &Store,
    conversation_id: &str,
) -> Result<ConversationState, StoreError> {
    let found: Option<ConversationState> = items::get(
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

async fn query_index<T: serde::de::DeserializeOwned>(
    store: &Store,
    index: &str,
    pk_name: &str,
    pk: &str,
    key_names: &[&str],
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<T>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let start = cursor.map(|c| cursor::decode(c, key_names)).transpose()?;
    let out = store
        .client()
        .query()
        .table_name(&table)
        .index_name(index)
        .key_condition_expression("#pk = :pk")
        .expression_attribute_names("#pk", pk_name)
        .expression_attribute_values(":pk", s(pk))
        .scan_index_forward(false)
        .limit(limit)
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(StoreError::request("Query"))?;
    let items = out
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|i| decode(i, &table))
        .collect::<Result<Vec<T>, _>>()?;
    Ok(Page {
        items,
        next_cursor: cursor::next(out.last_evaluated_key.as_ref()),
    })
}

/// Events of one day, newest first.
pub async fn events_of_day(
    store: &Store,
    day: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<EventRecord>, StoreError> {
    query_index(
        store,
        EVENTS_BY_DAY_INDEX,
        "event_day",
        day,
        &["event_id", "event_day", "created_sk"],
        cursor,
        limit,
    )
    .await
}

/// One conversation's events, newest first.
pub async fn events_of_conversation(
    store: &Store,
    conversation_id: &str,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<EventRecord>, StoreError> {
    query_index(
        store,
        EVENTS_BY_CONVERSATION_INDEX,
        "conversation_id",
        conversation_id,
        &["event_id", "conversation_id", "created_sk"],
        cursor,
        limit,
    )
    .await
}

/// Side effects waiting in the outbox, newest first.
pub async fn outbox(
    store: &Store,
    cursor: Option<&str>,
    limit: i32,
) -> Result<Page<ActionRecord>, StoreError> {
    query_index(
        store,
        OUTBOX_INDEX,
        "outbox",
        "pending",
        &["event_id", "outbox", "outbox_sk"],
        cursor,
        limit,
    )
    .await
}

/// Events received since `from_sk` (a `created_sk` lower bound) on `day`: how many, and
/// how many duplicate deliveries they had.
pub async fn count_events_since(
    store: &Store,
    day: &str,
    from_sk: &str,
) -> Result<(u64, u64), StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let (mut events, mut duplicates) = (0u64, 0u64);
    let mut start = None;
    loop {
        let out = store
            .client()
            .query()
            .table_name(&table)
            .index_name(EVENTS_BY_DAY_INDEX)
            .key_condition_expression("event_day = :d AND created_sk >= :from")
            .expression_attribute_values(":d", s(day))
            .expression_attribute_values(":from", s(from_sk))
            .projection_expression("duplicates")
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        for item in out.items.unwrap_or_default() {
            events += 1;
            if let Some(AttributeValue::N(d)) = item.get("duplicates") {
                duplicates += d.parse::<u64>().unwrap_or(0);
            }
        }
        match out.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return Ok((events, duplicates)),
        }
    }
}

/// Side effects waiting in the outbox.
pub async fn count_outbox(store: &Store) -> Result<u64, StoreError> {
    let spec = query::Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(OUTBOX_INDEX),
        pk: ("outbox", s("pending")),
        sk: None,
        filters: Vec::new(),
        ascending: true,
        key_attrs: vec!["event_id", "outbox", "outbox_sk"],
        projection: None,
    };
    Ok(query::count(store, &spec, usize::MAX, None).await?.n)
}
