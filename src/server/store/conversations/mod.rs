//! `conversations-<env>` (docs/conversations.md; the item in docs/data-model.md,
//! "conversations"): one item per conversation under the recipient's phone or email.
//! Besides the attributes the Channel Router knows, three of our own: `entry_ids` (a string
//! set, so an append is conditioned on its entry id), `message_count`, and `item_bytes`
//! (so an append that would pass DynamoDB's 400 KB item limit is refused by its own
//! condition, with nothing written).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

mod item;
mod search;

pub use item::{Conversation, Message, Status};
pub use search::*;

use super::item::{self as one, item_size, n, s, value_size};
use super::query::Item;
use super::schema::CONVERSATIONS;
use super::{Store, StoreError};

/// DynamoDB's item limit, and the share of it appends may use: the rest is kept for the
/// bounded fields later updates set (status, hand-off reason, function call, ...).
pub const ITEM_LIMIT_BYTES: i64 = 400 * 1024;
pub const APPEND_BUDGET_BYTES: i64 = ITEM_LIMIT_BYTES - 12 * 1024;

pub enum Created {
    New,
    Exists(Box<Conversation>),
}

fn decode(table: &str, item: Item) -> Result<Conversation, StoreError> {
    one::decode(item, table)
}

/// A conversation's key.
fn key(primary_channel: &str, conversation_id: &str) -> Item {
    HashMap::from([
        ("primary_channel".to_string(), s(primary_channel)),
        ("conversation_id".to_string(), s(conversation_id)),
    ])
}

/// The item of a whole conversation, with its own size in `item_bytes`.
fn sized_item(table: &str, c: &Conversation) -> Result<Item, StoreError> {
    let mut item: Item = serde_dynamo::to_item(c).map_err(|e| StoreError::corrupt(table, e))?;
    // The size counts itself: its name plus a number of up to 7 digits.
    let size = item_size(&item) as i64 + "item_bytes".len() as i64 + 5;
    item.insert("item_bytes".into(), n(size));
    Ok(item)
}

/// Creates the conversation unless it exists; then returns what is there (one request).
pub async fn create(store: &Store, c: &Conversation) -> Result<Created, StoreError> {
    let table = store.table(CONVERSATIONS.base);
    let result = store
        .client()
        .put_item()
        .table_name(&table)
        .set_item(Some(sized_item(&table, c)?))
        .condition_expression("attribute_not_exists(conversation_id)")
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match result {
        Ok(_) => Ok(Created::New),
        Err(e) => match e.into_service_error() {
            PutItemError::ConditionalCheckFailedException(c) => match c.item {
                Some(old) => Ok(Created::Exists(Box::new(decode(&table, old)?))),
                None => Err(StoreError::corrupt(&table, "conflict without the item")),
            },
            other => Err(StoreError::service("PutItem", &other)),
        },
    }
}

pub async fn get(
    store: &Store,
    primary_channel: &str,
    conversation_id: &str,
) -> Result<Option<Conversation>, StoreError> {
    let table = store.table(CONVERSATIONS.base);
    let out = store
        .client()
        .get_item()
        .table_name(&table)
        .set_key(Some(key(primary_channel, conversation_id)))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    out.item.map(|i| decode(&table, i)).transpose()
}

#[derive(Debug, PartialEq)]
pub enum Appended {
    Added {
        message_count: i64,
    },
    /// This entry id is already in the conversation: nothing was written.
    Duplicate,
    Missing,
    /// The item would pass the limit: `used` bytes now, `needed` more.
    Full {
        used: i64,
        needed: i64,
    },
}

/// Appends one message unless its `entry_id` is there already. One `UpdateItem`:
/// concurrent appends are serialized by DynamoDB and none is lost.
pub async fn append(
    store: &Store,
    primary_channel: &str,
    conversation_id: &str,
    message: &Message,
    now_iso: &str,
) -> Result<Appended, StoreError> {
    let table = store.table(CONVERSATIONS.base);
    let m = serde_dynamo::to_attribute_value::<_, AttributeValue>(message)
        .map_err(|e| StoreError::corrupt(&table, e))?;
    // The list element, its entry id in the set, and the counters' growth.
    let needed = (value_size(&m) + 1 + message.entry_id.len() + 4) as i64;
    let result = store
        .client()
        .update_item()
        .table_name(&table)
        .set_key(Some(key(primary_channel, conversation_id)))
        .update_expression(
            "SET messages = list_append(if_not_exists(messages, :empty), :m), updated_at = :now \
             ADD entry_ids :eids, message_count :one, item_bytes :needed",
        )
        .condition_expression(
            "attribute_exists(conversation_id) AND NOT contains(entry_ids, :eid) \
             AND item_bytes <= :max_before",
        )
        .expression_attribute_values(":empty", AttributeValue::L(vec![]))
        .expression_attribute_values(":m", AttributeValue::L(vec![m]))
        .expression_attribute_values(":now", s(now_iso))
        .expression_attribute_values(":eids", AttributeValue::Ss(vec![message.entry_id.clone()]))
        .expression_attribute_values(":eid", s(&message.entry_id))
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":needed", n(needed))
        .expression_attribute_values(":max_before", n(APPEND_BUDGET_BYTES - needed))
        .return_values(ReturnValue::UpdatedNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match result {
        Ok(out) => Ok(Appended::Added {
            message_count: out
                .attributes
                .as_ref()
                .and_then(|a| number(a, "message_count"))
                .unwrap_or(0),
        }),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(c) => {
                Ok(append_refused(c.item, &message.entry_id, needed))
            }
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}

/// A Number attribute of an item, if it is one.
fn number(item: &Item, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
}

/// Which of an append's conditions failed, told from the item as it was (`None`: there
/// was no item). An item without its size counts as full.
fn append_refused(old: Option<Item>, entry_id: &str, needed: i64) -> Appended {
    let Some(old) = old else {
        return Appended::Missing;
    };
    let has_entry = matches!(old.get("entry_ids"),
        Some(AttributeValue::Ss(ids)) if ids.iter().any(|id| id == entry_id));
    if has_entry {
        return Appended::Duplicate;
    }
    let used = number(&old, "item_bytes").unwrap_or(ITEM_LIMIT_BYTES);
    Appended::Full { used, needed }
}

/// Attributes an update may set. `None` leaves one as it is.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    pub conversation_status: Option<Status>,
    pub task_complete: Option<i64>,
    pub hand_off_to_human: Option<bool>,
    pub hand_off_to_human_reason: Option<String>,
    pub function_call: Option<bool>,
    pub function_call_type: Option<String>,
    pub thread_id: Option<String>,
    pub email_id: Option<String>,
    pub processing_time_ms: Option<i64>,
    pub processor_version: Option<String>,
}

pub enum Updated {
    Done(Box<Conversation>),
    Missing,
    /// The status did not allow the move; here is what it is.
    Refused {
        current_status: Status,
    },
}

/// Sets `changes` and `updated_at` in one `UpdateItem`. A status change is conditioned on
/// the current status being one of `from` (or already the target), so two processors
/// racing cannot take a conversation along a transition that is not allowed.
pub async fn update(
    store: &Store,
    primary_channel: &str,
    conversation_id: &str,
    changes: &Changes,
    from: Option<&[Status]>,
    now_iso: &str,
) -> Result<Updated, StoreError> {
    let table = store.table(CONVERSATIONS.base);
    let expr = UpdateExpression::of(changes, from, now_iso);
    let result = store
        .client()
        .update_item()
        .table_name(&table)
        .set_key(Some(key(primary_channel, conversation_id)))
        .update_expression(expr.update)
        .condition_expression(expr.condition)
        .set_expression_attribute_names(Some(expr.names))
        .set_expression_attribute_values(Some(expr.values))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match result {
        Ok(out) => match out.attributes {
            Some(item) => Ok(Updated::Done(Box::new(decode(&table, item)?))),
            None => Err(StoreError::corrupt(&table, "update returned no item")),
        },
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(c) => match c.item {
                None => Ok(Updated::Missing),
                Some(old) => Ok(Updated::Refused {
                    current_status: decode(&table, old)?.conversation_status,
                }),
            },
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}

/// An update's expressions: the `SET` list, the condition, and their placeholders.
struct UpdateExpression {
    update: String,
    condition: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl UpdateExpression {
    /// Sets each given change and `updated_at`; the item must exist and, when the status
    /// changes with `from` given, be in one of `from` or at the target already (a retry).
    fn of(changes: &Changes, from: Option<&[Status]>, now_iso: &str) -> UpdateExpression {
        let mut sets = vec!["#updated_at = :updated_at".to_string()];
        let mut names = HashMap::from([("#updated_at".to_string(), "updated_at".to_string())]);
        let mut values = HashMap::from([(":updated_at".to_string(), s(now_iso))]);
        let mut set = |name: &str, v: Option<AttributeValue>| {
            if let Some(v) = v {
                sets.push(format!("#{name} = :{name}"));
                names.insert(format!("#{name}"), name.to_string());
                values.insert(format!(":{name}"), v);
            }
        };
        let c = changes;
        set(
            "conversation_status",
            c.conversation_status.map(|st| s(st.as_str())),
        );
        set("task_complete", c.task_complete.map(n));
        set(
            "hand_off_to_human",
            c.hand_off_to_human.map(AttributeValue::Bool),
        );
        set(
            "hand_off_to_human_reason",
            c.hand_off_to_human_reason.clone().map(s),
        );
        set("function_call", c.function_call.map(AttributeValue::Bool));
        set("function_call_type", c.function_call_type.clone().map(s));
        set("thread_id", c.thread_id.clone().map(s));
        set("email_id", c.email_id.clone().map(s));
        set("processing_time_ms", c.processing_time_ms.map(n));
        set("processor_version", c.processor_version.clone().map(s));
        let mut condition = "attribute_exists(conversation_id)".to_string();
        if let (Some(from), Some(to)) = (from, c.conversation_status) {
            names.insert("#cs".into(), "conversation_status".into());
            values.insert(":to".into(), s(to.as_str()));
            let mut allowed = vec![":to".to_string()];
            for (i, f) in from.iter().enumerate() {
                values.insert(format!(":from{i}"), s(f.as_str()));
                allowed.push(format!(":from{i}"));
            }
            condition = format!("{condition} AND #cs IN ({})", allowed.join(", "));
        }
        UpdateExpression {
            update: format!("SET {}", sets.join(", ")),
            condition,
            names,
            values,
        }
    }
}

/// Writes whole conversations in batches of 25, unconditionally: the bulk loader of the
/// benchmark, which needs 100,000 items faster than one call each. Everything else writes
/// through `create`, `append` and `update`.
pub async fn load_batch(store: &Store, items: &[Conversation]) -> Result<(), StoreError> {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let table = store.table(CONVERSATIONS.base);
    for chunk in items.chunks(25) {
        let mut requests = Vec::with_capacity(chunk.len());
        for c in chunk {
            let put = PutRequest::builder()
                .set_item(Some(sized_item(&table, c)?))
                .build()
                .map_err(|e| StoreError::corrupt(&table, e))?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        let mut pending = HashMap::from([(table.clone(), requests)]);
        for attempt in 0..20u64 {
            let out = store
                .client()
                .batch_write_item()
                .set_request_items(Some(pending))
                .send()
                .await
                .map_err(StoreError::request("BatchWriteItem"))?;
            match out.unprocessed_items.filter(|u| !u.is_empty()) {
                None => break,
                Some(left) if attempt < 19 => {
                    pending = left;
                    tokio::time::sleep(std::time::Duration::from_millis(10 << attempt.min(6)))
                        .await;
                }
                Some(_) => {
                    return Err(StoreError::Busy {
                        op: "BatchWriteItem",
                        cause: crate::server::store::Busy::Throttled,
                        detail: format!("{table}: batch writes kept coming back unprocessed"),
                    })
                }
            }
        }
    }
    Ok(())
}
