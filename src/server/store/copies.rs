//! Items that every request reads, kept with [`COPIES`] copies (docs/dynamodb.md, "Hot
//! items"). A partition serves 3,000 strongly consistent reads a second: one item read by
//! every event would cap the console there. Each change writes the item and every copy in
//! one transaction, so any copy read after the change is acknowledged has it: a request
//! reads one copy at random, strongly consistent, with no staleness.
//!
//! A copy that is not there (an item saved by the release before, or never saved) sends
//! the read to the item itself, and the copies are written then, each only where none is
//! (a change's own copies win): from the item, or from what stands for it when none is
//! stored (a default). A change made by the release before, on the item alone, is found by
//! [`mend`] (each console looks with its dispatch rounds) and written over every copy with
//! an older version.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::item::{n, s};
use super::{tx, Store, StoreError};

pub type Item = HashMap<String, AttributeValue>;

/// Copies of such an item, unless it says otherwise: eight take 24,000 reads a second.
pub const COPIES: u32 = 8;

/// A copy's key: `<key>#copy#<i>`.
pub fn copy_key(key: &str, i: u32) -> String {
    format!("{key}#copy#{i}")
}

/// One of `copies` at random.
fn random_copy(copies: u32) -> u32 {
    u32::from_str_radix(&crate::server::ids::random_hex(2), 16).unwrap_or(0) % copies.max(1)
}

/// Where such an item is: its table (base name), key attribute and key, and how many
/// copies it has.
#[derive(Clone, Copy, Debug)]
pub struct Copied<'a> {
    pub base: &'a str,
    pub key_attr: &'a str,
    pub key: &'a str,
    pub copies: u32,
}

impl Copied<'_> {
    /// Every copy of `item` as a transaction's puts, unconditional: the item's own write
    /// (in the same transaction) decides.
    pub fn puts(&self, store: &Store, item: &Item) -> Result<Vec<TransactWriteItem>, StoreError> {
        let table = store.table(self.base);
        (0..self.copies)
            .map(|i| {
                let mut copy = item.clone();
                copy.insert(self.key_attr.into(), s(copy_key(self.key, i)));
                let put = Put::builder()
                    .table_name(&table)
                    .set_item(Some(copy))
                    .build()
                    .map_err(|e| StoreError::corrupt(&table, e))?;
                Ok(TransactWriteItem::builder().put(put).build())
            })
            .collect()
    }

    /// One item, strongly consistent.
    pub async fn get(&self, store: &Store, key: &str) -> Result<Option<Item>, StoreError> {
        Ok(store
            .client()
            .get_item()
            .table_name(store.table(self.base))
            .key(self.key_attr, s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::request("GetItem"))?
            .item)
    }

    /// One copy at random, if it is there.
    pub async fn get_copy(&self, store: &Store) -> Result<Option<Item>, StoreError> {
        self.get(store, &copy_key(self.key, random_copy(self.copies)))
            .await
    }

    /// The item as a request reads it: one copy at random. Without copies yet, the item
    /// itself (or `absent`, when none is stored: `None` then), and the copies are written.
    pub async fn read(&self, store: &Store, absent: &Item) -> Result<Option<Item>, StoreError> {
        if let Some(copy) = self.get_copy(store).await? {
            return Ok(Some(copy));
        }
        let main = self.get(store, self.key).await?;
        let from = main.clone().unwrap_or_else(|| absent.clone());
        self.write_copies(store, &from).await?;
        Ok(main)
    }

    /// Writes `item` over every copy that is not there or holds an older `version` (an
    /// item without one: only where none is). Answers how many it wrote.
    pub async fn write_copies(&self, store: &Store, item: &Item) -> Result<u32, StoreError> {
        let version = version(item);
        let mut wrote = 0;
        for i in 0..self.copies {
            let mut copy = item.clone();
            copy.insert(self.key_attr.into(), s(copy_key(self.key, i)));
            let req = store
                .client()
                .put_item()
                .table_name(store.table(self.base))
                .set_item(Some(copy))
                .condition_expression("attribute_not_exists(#k) OR version < :v")
                .expression_attribute_names("#k", self.key_attr)
                .expression_attribute_values(":v", n(version));
            wrote += tx::retrying(|| async {
                match req.clone().send().await {
                    Ok(_) => Ok(1),
                    Err(e) => match e.into_service_error() {
                        PutItemError::ConditionalCheckFailedException(_) => Ok(0),
                        other => Err(StoreError::service("PutItem", &other)),
                    },
                }
            })
            .await?;
        }
        Ok(wrote)
    }

    /// Mends the copies after a change made on the item alone (a console of the release
    /// before): when a copy at random holds another version than `stored` (the item as just
    /// read), the item is written over every older copy. Answers how many it wrote.
    pub async fn mend(&self, store: &Store, stored: &Item) -> Result<u32, StoreError> {
        let copy = self.get_copy(store).await?;
        if copy.as_ref().map(version) == Some(version(stored)) {
            return Ok(0);
        }
        let wrote = self.write_copies(store, stored).await?;
        if wrote > 0 && version(stored) == 0 {
            tracing::info!(
                item = self.key,
                wrote,
                "copies written (never saved: the defaults)"
            );
        } else if wrote > 0 {
            tracing::warn!(
                item = self.key,
                version = version(stored),
                wrote,
                "copies mended (a change was made without them)"
            );
        }
        Ok(wrote)
    }
}

/// An item's `version` (0 when it has none).
fn version(item: &Item) -> i64 {
    match item.get("version") {
        Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
        _ => 0,
    }
}
