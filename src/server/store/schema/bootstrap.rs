//! Creating the tables, or completing them: missing indexes and TTL are added, keys are
//! checked, and nothing else is ever changed.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    BillingMode, GlobalSecondaryIndex, IndexStatus, KeyType, LocalSecondaryIndex,
    StreamSpecification, StreamViewType, TableDescription, TableStatus, TimeToLiveSpecification,
    TimeToLiveStatus,
};

use super::indexes::{add_gsi, has_index};
use super::shapes::{attribute_definitions, build_err, describe, key_schema, projection};
use super::{TableSpec, ALL};
use crate::server::store::{Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    /// What was added to an existing table.
    Updated(Vec<String>),
    Unchanged,
}

/// Creates or completes every table; returns what it did to each.
pub async fn bootstrap(store: &Store) -> Result<Vec<(String, Outcome)>, StoreError> {
    let mut report = Vec::new();
    for spec in ALL {
        let outcome = ensure_table(store, spec).await?;
        report.push((store.table(spec.base), outcome));
    }
    Ok(report)
}

async fn ensure_table(store: &Store, spec: &TableSpec) -> Result<Outcome, StoreError> {
    let name = store.table(spec.base);
    let Some(desc) = describe(store, &name).await? else {
        if create(store, &name, spec).await? {
            wait_until(store, &name, Ready::TableAndIndexes).await?;
            ensure_ttl(store, &name, spec.ttl_attr).await?;
            return Ok(Outcome::Created);
        }
        // Another console created it between our describe and create: complete it as theirs.
        return Box::pin(ensure_table(store, spec)).await;
    };
    check_keys(&name, spec, &desc)?;
    // Another console may have just created it: AWS refuses TTL and index changes until
    // the table is ACTIVE (its indexes may still be building).
    let desc = if desc.table_status() == Some(&TableStatus::Active) {
        desc
    } else {
        wait_until(store, &name, Ready::Table).await?
    };
    let mut changes = Vec::new();
    // TTL first: a table busy with a new index may refuse other changes for a while.
    if ensure_ttl(store, &name, spec.ttl_attr).await? {
        changes.push(format!("TTL on {}", spec.ttl_attr));
    }
    // AWS takes one index change on a table at a time, and the table may stay busy for as
    // long as the index backfills: one index per start, the next one at the next start.
    let missing: Vec<_> = spec
        .gsis
        .iter()
        .filter(|g| !has_index(&desc, g.name))
        .collect();
    if let Some((gsi, later)) = missing.split_first() {
        if add_gsi(store, &name, spec, gsi).await? {
            changes.push(format!("index {}", gsi.name));
        }
        for gsi in later {
            tracing::warn!(table = %name, index = gsi.name, "index added at the next start");
            changes.push(format!("index {} at the next start", gsi.name));
        }
    }
    Ok(if changes.is_empty() {
        Outcome::Unchanged
    } else {
        Outcome::Updated(changes)
    })
}

fn check_keys(name: &str, spec: &TableSpec, desc: &TableDescription) -> Result<(), StoreError> {
    let want: Vec<(&str, KeyType)> = std::iter::once((spec.pk.name, KeyType::Hash))
        .chain(spec.sk.map(|k| (k.name, KeyType::Range)))
        .collect();
    let have: Vec<(&str, KeyType)> = desc
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type().clone()))
        .collect();
    if want != have {
        return Err(StoreError::Schema {
            table: name.to_string(),
            detail: format!(
                "its key schema is {have:?}, expected {want:?}; the console never changes a \
                 table's keys"
            ),
        });
    }
    Ok(())
}

/// Returns false when someone else created the table between our describe and create.
async fn create(store: &Store, name: &str, spec: &TableSpec) -> Result<bool, StoreError> {
    let mut req = store
        .client()
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(spec.pk, spec.sk)?))
        .set_attribute_definitions(Some(attribute_definitions(spec)?));
    for gsi in spec.gsis {
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(gsi.name)
                .set_key_schema(Some(key_schema(gsi.pk, gsi.sk)?))
                .projection(projection(&gsi.projection))
                .build()
                .map_err(build_err)?,
        );
    }
    for lsi in spec.lsis {
        req = req.local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name(lsi.name)
                .set_key_schema(Some(key_schema(lsi.pk, lsi.sk)?))
                .projection(projection(&lsi.projection))
                .build()
                .map_err(build_err)?,
        );
    }
    if spec.stream {
        req = req.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(build_err)?,
        );
    }
    match req.send().await {
        Ok(_) => Ok(true),
        Err(e) => {
            let e = e.into_service_error();
            if e.is_resource_in_use_exception() {
                Ok(false)
            } else {
                Err(StoreError::Request {
                    op: "CreateTable",
                    detail: aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
                })
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ready {
    /// The table takes changes (a new index may still be building).
    Table,
    /// The table and every index can be used: a new table's indexes come with it.
    TableAndIndexes,
}

/// Waits until the table is `ready`, for up to 60 s; returns its description then.
async fn wait_until(
    store: &Store,
    name: &str,
    ready: Ready,
) -> Result<TableDescription, StoreError> {
    for _ in 0..600 {
        if let Some(desc) = describe(store, name).await? {
            let table_ready = desc.table_status() == Some(&TableStatus::Active);
            let indexes_ready = ready == Ready::Table
                || desc
                    .global_secondary_indexes()
                    .iter()
                    .all(|g| g.index_status() == Some(&IndexStatus::Active));
            if table_ready && indexes_ready {
                return Ok(desc);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(StoreError::Schema {
        table: name.to_string(),
        detail: "not ACTIVE after 60 s".into(),
    })
}

/// TTL as DynamoDB describes it: its status and attribute, when it has them.
async fn describe_ttl(
    store: &Store,
    name: &str,
) -> Result<Option<(TimeToLiveStatus, String)>, StoreError> {
    let out = store
        .client()
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    Ok(out.time_to_live_description().and_then(|d| {
        Some((
            d.time_to_live_status()?.clone(),
            d.attribute_name()?.to_string(),
        ))
    }))
}

/// The attribute TTL is on (or being turned on) for, if any.
async fn ttl_attribute_or_enabling(
    store: &Store,
    name: &str,
) -> Result<Option<String>, StoreError> {
    Ok(describe_ttl(store, name).await?.and_then(|(status, attr)| {
        matches!(
            status,
            TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling
        )
        .then_some(attr)
    }))
}

/// Returns true when TTL had to be turned on.
async fn ensure_ttl(store: &Store, name: &str, attr: &str) -> Result<bool, StoreError> {
    if ttl_attribute_or_enabling(store, name).await?.as_deref() == Some(attr) {
        return Ok(false);
    }
    let asked = store
        .client()
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(attr)
                .build()
                .map_err(build_err)?,
        )
        .send()
        .await
        .map_err(StoreError::request("UpdateTimeToLive"));
    match asked {
        Ok(_) => Ok(true),
        // Another console starting at the same moment turned it on first ("TimeToLive is
        // already enabled", or a change already in progress).
        Err(e) => match ttl_attribute_or_enabling(store, name).await? {
            Some(on) if on == attr => Ok(false),
            _ => Err(e),
        },
    }
}

/// TTL status per table, for tests and `bootstrap --check`.
pub async fn ttl_attribute(store: &Store, name: &str) -> Result<Option<String>, StoreError> {
    Ok(describe_ttl(store, name)
        .await?
        .and_then(|(status, attr)| (status == TimeToLiveStatus::Enabled).then_some(attr)))
}

/// Names of a table's global secondary indexes, for tests.
pub async fn index_names(store: &Store, name: &str) -> Result<Vec<String>, StoreError> {
    Ok(describe(store, name)
        .await?
        .map(|d| {
            d.global_secondary_indexes()
                .iter()
                .filter_map(|g| g.index_name().map(str::to_string))
                .chain(
                    d.local_secondary_indexes()
                        .iter()
                        .filter_map(|l| l.index_name().map(str::to_string)),
                )
                .collect()
        })
        .unwrap_or_default())
}
