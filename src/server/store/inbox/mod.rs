//! `inbox-<env>` (docs/inbox.md; every item in docs/data-model.md): one table for tenant
//! settings, inbox configuration, user and public messages, read receipts and counters:
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
//! Besides: publications (`t#<tenant>` / `pub#<inbox>#<message_id>`, kind PB), their read
//! counters (`t#<tenant>R#<inbox>#<message_id>#<shard>` / `r`, kind PR), publish jobs
//! (`t#<tenant>` / `job#<key>`, kind PJ, so a publish that stopped half-way resumes with
//! the same message id), drafts (`t#<tenant>` / `draft#<owner>#<key>`, kind DR), the
//! tenant registry (`tenants` / `<tenant>`, kind TR), and what the stream consumer keeps
//! (`x#…` removals already counted, kind RM; stream positions are in the settings table).
//!
//! The items are in `records.rs`, the reads in `reads.rs`, the writes in `writes.rs` and
//! `drafts.rs`, the stream consumer in `stream/`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde_json::Value;

mod drafts;
mod reads;
mod records;
pub mod stream;
mod writes;

pub use drafts::*;
pub use reads::*;
pub use records::*;
pub use writes::*;

use super::item::s;
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

/// A JSON view of any inbox item (for `verify` and the stream consumer).
pub fn as_json(item: &HashMap<String, AttributeValue>) -> Value {
    serde_dynamo::from_item(item.clone()).unwrap_or(Value::Null)
}
