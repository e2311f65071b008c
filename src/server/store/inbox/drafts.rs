//! Drafts: what someone composes in the console, kept for a day and published at most once.

use super::{item, table, DraftItem};
use crate::server::store::item::{s, update_if};
use crate::server::store::tx::retrying;
use crate::server::store::{Store, StoreError};

pub fn draft_sk(owner: &str, key: &str) -> String {
    format!("draft#{owner}#{key}")
}

/// Writes a draft unless it was published. False: it was.
pub async fn put_draft(store: &Store, d: &DraftItem) -> Result<bool, StoreError> {
    let req = store
        .client()
        .put_item()
        .table_name(table(store))
        .set_item(Some(item(store, d)?))
        .condition_expression("attribute_not_exists(receipt)");
    retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("PutItem", &other)),
            },
        }
    })
    .await
}

/// Notes the receipt of a published draft (writing it again changes nothing).
pub async fn set_draft_receipt(
    store: &Store,
    pk: &str,
    sk: &str,
    receipt: &crate::model::inbox::Receipt,
) -> Result<(), StoreError> {
    let value = serde_dynamo::to_attribute_value(receipt)
        .map_err(|e| StoreError::corrupt(&table(store), e))?;
    let req = store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(sk))
        .update_expression("SET receipt = :r")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":r", value);
    // False: the draft expired meanwhile; the publish stands, the receipt has nowhere to go.
    update_if(req).await?;
    Ok(())
}
