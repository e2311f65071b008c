//! Deleting what DynamoDB's TTL deletes, where nothing does it: DynamoDB Local keeps expired
//! items for ever, and AWS deletes them late (often days). Reads never trust an expired
//! item (they compare its TTL attribute with now); the sweep only gives the space back.
//! Every delete is conditioned on the item still being expired, so an item renewed
//! meanwhile is kept; two consoles sweeping at once delete each item once.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;

use super::item::n;
use super::many::Item;
use super::schema::{TableSpec, ALL};
use super::{Store, StoreError};

/// Items one page reads.
const PAGE: i32 = 200;

/// One page of the sweep of `spec`'s table: finds expired items and deletes each one that
/// is still expired. Returns (examined, deleted, the next page's start).
pub async fn page(
    store: &Store,
    spec: &TableSpec,
    now_s: i64,
    start: Option<Item>,
) -> Result<(usize, usize, Option<Item>), StoreError> {
    let table = store.table(spec.base);
    let mut keys = vec![spec.pk.name];
    keys.extend(spec.sk.map(|k| k.name));
    let projection: Vec<String> = (0..keys.len()).map(|i| format!("#k{i}")).collect();
    let mut scan = store
        .client()
        .scan()
        .table_name(&table)
        .filter_expression("#ttl <= :now")
        .expression_attribute_names("#ttl", spec.ttl_attr)
        .expression_attribute_values(":now", n(now_s))
        .projection_expression(projection.join(", "))
        .set_exclusive_start_key(start)
        .limit(PAGE);
    for (i, k) in keys.iter().enumerate() {
        scan = scan.expression_attribute_names(format!("#k{i}"), *k);
    }
    let out = scan.send().await.map_err(StoreError::request("Scan"))?;
    let examined = out.scanned_count.max(0) as usize;
    let mut deleted = 0;
    for key in out.items.unwrap_or_default() {
        let result = store
            .client()
            .delete_item()
            .table_name(&table)
            .set_key(Some(key))
            .condition_expression("#ttl <= :now")
            .expression_attribute_names("#ttl", spec.ttl_attr)
            .expression_attribute_values(":now", n(now_s))
            .send()
            .await;
        match result {
            Ok(_) => deleted += 1,
            Err(e) => match e.into_service_error() {
                DeleteItemError::ConditionalCheckFailedException(_) => {}
                other => return Err(StoreError::service("DeleteItem", &other)),
            },
        }
    }
    Ok((
        examined,
        deleted,
        out.last_evaluated_key.filter(|k| !k.is_empty()),
    ))
}

/// Sweeps one table to its end; `progress(examined, deleted)` after each page.
pub async fn table(
    store: &Store,
    spec: &TableSpec,
    now_s: i64,
    mut progress: impl FnMut(usize, usize),
) -> Result<(usize, usize), StoreError> {
    let (mut examined, mut deleted) = (0, 0);
    let mut start = None;
    loop {
        let (e, d, next) = page(store, spec, now_s, start).await?;
        examined += e;
        deleted += d;
        progress(examined, deleted);
        match next {
            Some(k) => start = Some(k),
            None => return Ok((examined, deleted)),
        }
    }
}

/// Sweeps every table; what each gave back.
pub async fn all(
    store: &Store,
    now_s: i64,
) -> Result<Vec<(&'static str, usize, usize)>, StoreError> {
    let mut out = Vec::new();
    for spec in ALL {
        let (e, d) = table(store, spec, now_s, |_, _| {}).await?;
        out.push((spec.base, e, d));
    }
    Ok(out)
}
