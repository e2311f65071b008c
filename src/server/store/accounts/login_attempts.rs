//! `login_attempts-<env>`: recent failed sign-ins per user name (existing or not).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::items::{self, n, s};
use crate::server::store::schema::LOGIN_ATTEMPTS;
use crate::server::store::{Store, StoreError};

/// We keep this many recent failures; the lockout rule needs far fewer.
const KEEP: usize = 20;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AttemptsItem {
    pub name: String,
    #[serde(default)]
    pub failures: Vec<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_until: Option<DateTime<Utc>>,
    pub expires_at: i64,
}

pub async fn get(store: &Store, name: &str) -> Result<AttemptsItem, StoreError> {
    let item: Option<AttemptsItem> = items::get(store, LOGIN_ATTEMPTS.base, "name", name).await?;
    Ok(item.unwrap_or_default())
}

/// Appends one failure atomically (concurrent failures are all counted) and returns the
/// failures now recorded.
pub async fn record_failure(
    store: &Store,
    name: &str,
    now: DateTime<Utc>,
    expires_at: i64,
) -> Result<Vec<DateTime<Utc>>, StoreError> {
    let table = store.table(LOGIN_ATTEMPTS.base);
    let out = store
        .client()
        .update_item()
        .table_name(&table)
        .key("name", s(name))
        .update_expression(
            "SET failures = list_append(if_not_exists(failures, :empty), :f), expires_at = :exp",
        )
        .expression_attribute_values(":empty", aws_sdk_dynamodb::types::AttributeValue::L(vec![]))
        .expression_attribute_values(
            ":f",
            aws_sdk_dynamodb::types::AttributeValue::L(vec![s(now.to_rfc3339())]),
        )
        .expression_attribute_values(":exp", n(expires_at))
        .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    let item: AttemptsItem = serde_dynamo::from_item(out.attributes.unwrap_or_default())
        .map_err(|e| StoreError::corrupt(&table, e))?;
    if item.failures.len() > KEEP {
        // Trim the oldest; a lost race here only keeps a few more entries.
        let drop = item.failures.len() - KEEP;
        let remove: Vec<String> = (0..drop).map(|i| format!("failures[{i}]")).collect();
        let _ = store
            .client()
            .update_item()
            .table_name(&table)
            .key("name", s(name))
            .update_expression(format!("REMOVE {}", remove.join(", ")))
            .send()
            .await;
    }
    Ok(item.failures)
}

pub async fn lock(
    store: &Store,
    name: &str,
    until: DateTime<Utc>,
    expires_at: i64,
) -> Result<(), StoreError> {
    store
        .client()
        .update_item()
        .table_name(store.table(LOGIN_ATTEMPTS.base))
        .key("name", s(name))
        .update_expression("SET locked_until = :u, expires_at = :exp")
        .expression_attribute_values(":u", s(until.to_rfc3339()))
        .expression_attribute_values(":exp", n(expires_at))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

pub async fn clear(store: &Store, name: &str) -> Result<(), StoreError> {
    items::delete(store, LOGIN_ATTEMPTS.base, "name", name).await
}
