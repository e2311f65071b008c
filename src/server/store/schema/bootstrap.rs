//! Creating the tables, or completing them: missing indexes and TTL are added, keys are
//! checked, and nothing else is ever changed.

use std::time::Duration;

use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, LocalSecondaryIndex,
    Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};

use super::{AttrType, IndexSpec, KeyAttr, TableSpec, ALL};
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
            wait_active(store, &name).await?;
            ensure_ttl(store, &name, spec.ttl_attr).await?;
            return Ok(Outcome::Created);
        }
        // Another console created it between our describe and create: complete it as theirs.
        wait_active(store, &name).await?;
        return Box::pin(ensure_table(store, spec)).await;
    };
    check_keys(&name, spec, &desc)?;
    let mut changes = Vec::new();
    // TTL first: a table busy with a new index may refuse other changes for a while.
    if ensure_ttl(store, &name, spec.ttl_attr).await? {
        changes.push(format!("TTL on {}", spec.ttl_attr));
    }
    for gsi in spec.gsis {
        if !has_index(&desc, gsi.name) {
            add_gsi(store, &name, spec, gsi).await?;
            changes.push(format!("index {}", gsi.name));
        }
    }
    Ok(if changes.is_empty() {
        Outcome::Unchanged
    } else {
        Outcome::Updated(changes)
    })
}

fn has_index(desc: &TableDescription, index: &str) -> bool {
    desc.global_secondary_indexes()
        .iter()
        .any(|g| g.index_name() == Some(index))
}

pub(super) async fn describe(
    store: &Store,
    name: &str,
) -> Result<Option<TableDescription>, StoreError> {
    match store
        .client()
        .describe_table()
        .table_name(name)
        .send()
        .await
    {
        Ok(out) => Ok(out.table),
        Err(e) => match e.into_service_error() {
            DescribeTableError::ResourceNotFoundException(_) => Ok(None),
            other => Err(StoreError::service("DescribeTable", &other)),
        },
    }
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

fn key_schema(pk: KeyAttr, sk: Option<KeyAttr>) -> Result<Vec<KeySchemaElement>, StoreError> {
    let mut keys = vec![KeySchemaElement::builder()
        .attribute_name(pk.name)
        .key_type(KeyType::Hash)
        .build()
        .map_err(build_err)?];
    if let Some(sk) = sk {
        keys.push(
            KeySchemaElement::builder()
                .attribute_name(sk.name)
                .key_type(KeyType::Range)
                .build()
                .map_err(build_err)?,
        );
    }
    Ok(keys)
}

fn attribute_definitions(spec: &TableSpec) -> Result<Vec<AttributeDefinition>, StoreError> {
    let mut attrs: Vec<KeyAttr> = vec![spec.pk];
    attrs.extend(spec.sk);
    for index in spec.gsis.iter().chain(spec.lsis) {
        attrs.push(index.pk);
        attrs.extend(index.sk);
    }
    let mut defs: Vec<AttributeDefinition> = Vec::new();
    for attr in attrs {
        if defs.iter().any(|d| d.attribute_name() == attr.name) {
            continue;
        }
        defs.push(
            AttributeDefinition::builder()
                .attribute_name(attr.name)
                .attribute_type(scalar(attr.ty))
                .build()
                .map_err(build_err)?,
        );
    }
    Ok(defs)
}

fn scalar(ty: AttrType) -> ScalarAttributeType {
    match ty {
        AttrType::S => ScalarAttributeType::S,
        AttrType::N => ScalarAttributeType::N,
    }
}

fn project_all() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Schema {
        table: String::new(),
        detail: e.to_string(),
    }
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
                .projection(project_all())
                .build()
                .map_err(build_err)?,
        );
    }
    for lsi in spec.lsis {
        req = req.local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name(lsi.name)
                .set_key_schema(Some(key_schema(lsi.pk, lsi.sk)?))
                .projection(project_all())
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

/// Asks DynamoDB to add an index to a table in use, without waiting for it: AWS backfills
/// it from the table's items, which takes minutes to hours, and the table serves reads
/// and writes meanwhile. Reads from the index answer "busy" until it is ACTIVE
/// ([`indexes_building`]). Two consoles starting at once both ask; the one that loses
/// finds the index listed and is done.
async fn add_gsi(
    store: &Store,
    name: &str,
    spec: &TableSpec,
    gsi: &IndexSpec,
) -> Result<(), StoreError> {
    let asked = store
        .client()
        .update_table()
        .table_name(name)
        .set_attribute_definitions(Some(attribute_definitions(spec)?))
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .create(
                    CreateGlobalSecondaryIndexAction::builder()
                        .index_name(gsi.name)
                        .set_key_schema(Some(key_schema(gsi.pk, gsi.sk)?))
                        .projection(project_all())
                        .build()
                        .map_err(build_err)?,
                )
                .build(),
        )
        .send()
        .await
        .map_err(StoreError::request("UpdateTable"));
    match asked {
        Ok(_) => Ok(()),
        Err(e) => match describe(store, name).await? {
            Some(desc) if has_index(&desc, gsi.name) => Ok(()),
            _ => Err(e),
        },
    }
}

/// Every index of every table that is not ACTIVE yet, as `table/index`.
pub async fn indexes_building(store: &Store) -> Result<Vec<String>, StoreError> {
    let mut building = Vec::new();
    for spec in ALL {
        let name = store.table(spec.base);
        let Some(desc) = describe(store, &name).await? else {
            continue;
        };
        for g in desc.global_secondary_indexes() {
            if g.index_status() != Some(&IndexStatus::Active) {
                building.push(format!("{name}/{}", g.index_name().unwrap_or("?")));
            }
        }
    }
    Ok(building)
}

/// Waits until no index is being built, or `limit` has passed.
pub async fn wait_indexes_built(store: &Store, limit: Duration) -> Result<(), StoreError> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let building = indexes_building(store).await?;
        if building.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(StoreError::Schema {
                table: building.join(", "),
                detail: format!("index still being built after {} s", limit.as_secs()),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits for the table and all its indexes to be usable.
async fn wait_active(store: &Store, name: &str) -> Result<(), StoreError> {
    for _ in 0..600 {
        if let Some(desc) = describe(store, name).await? {
            let table_ready = desc.table_status() == Some(&TableStatus::Active);
            let indexes_ready = desc
                .global_secondary_indexes()
                .iter()
                .all(|g| g.index_status() == Some(&IndexStatus::Active));
            if table_ready && indexes_ready {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(StoreError::Schema {
        table: name.to_string(),
        detail: "not ACTIVE after 60 s".into(),
    })
}

/// The attribute TTL is on (or being turned on) for, if any.
async fn ttl_attribute_or_enabling(
    store: &Store,
    name: &str,
) -> Result<Option<String>, StoreError> {
    let current = store
        .client()
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    Ok(current
        .time_to_live_description()
        .filter(|d| {
            matches!(
                d.time_to_live_status(),
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            )
        })
        .and_then(|d| d.attribute_name())
        .map(str::to_string))
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
    let out = store
        .client()
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    Ok(out
        .time_to_live_description()
        .filter(|d| d.time_to_live_status() == Some(&TimeToLiveStatus::Enabled))
        .and_then(|d| d.attribute_name())
        .map(str::to_string))
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
