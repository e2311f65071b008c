//! Many items at once: every item of a (small) table, and batched gets of known keys.
//! Never a page's read: pages query one partition ([`super::query`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;

use super::item::decode;
use super::{Store, StoreError};

/// Every item of one table, as JSON (a Scan: for operator tools and the chaos harness's
/// checks, never for a page).
pub async fn scan_json(store: &Store, base: &str) -> Result<Vec<serde_json::Value>, StoreError> {
    scan_all(store, base).await
}

/// Every item of one table, decoded: a consistent Scan of every page. Only for tables of
/// a handful of items (the console's users) and for operator tools, never for a page.
pub async fn scan_all<T: DeserializeOwned>(
    store: &Store,
    base: &str,
) -> Result<Vec<T>, StoreError> {
    let table = store.table(base);
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .client()
            .scan()
            .table_name(&table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Scan"))?;
        for item in page.items.unwrap_or_default() {
            out.push(decode(item, &table)?);
        }
        match page.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => start = Some(k),
            None => return Ok(out),
        }
    }
}

/// An item as the SDK holds it.
pub type Item = HashMap<String, AttributeValue>;

/// Strongly consistent reads of up to 100 keys of one table in one request (more when
/// DynamoDB hands some back unprocessed). Items come back in no particular order.
pub async fn batch_get(
    store: &Store,
    base: &str,
    keys: Vec<Item>,
) -> Result<Vec<Item>, StoreError> {
    use aws_sdk_dynamodb::types::KeysAndAttributes;
    let table = store.table(base);
    let mut found = Vec::new();
    for chunk in keys.chunks(100) {
        let mut request = HashMap::from([(
            table.clone(),
            KeysAndAttributes::builder()
                .set_keys(Some(chunk.to_vec()))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::corrupt(&table, e))?,
        )]);
        for attempt in 0..10u64 {
            let out = store
                .client()
                .batch_get_item()
                .set_request_items(Some(request.clone()))
                .send()
                .await
                .map_err(StoreError::request("BatchGetItem"))?;
            found.extend(out.responses.unwrap_or_default().into_values().flatten());
            match out.unprocessed_keys.filter(|u| !u.is_empty()) {
                Some(left) if attempt < 9 => {
                    request = left;
                    tokio::time::sleep(std::time::Duration::from_millis(5 << attempt)).await;
                }
                // DynamoDB keeps handing them back: its partitions are busy, not our data
                // wrong; a retry later will do (503 with Retry-After).
                Some(_) => {
                    return Err(StoreError::Busy {
                        op: "BatchGetItem",
                        cause: super::Busy::Throttled,
                        detail: format!("{table}: reads kept coming back unprocessed"),
                    })
                }
                None => break,
            }
        }
    }
    Ok(found)
}
