//! Indexes added to tables in use: asked for, not waited on (AWS builds them in the
//! background), and watched until they are ACTIVE.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    CreateGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate, IndexStatus, TableDescription,
};

use super::shapes::{attribute_definitions, build_err, describe, key_schema, projection};
use super::{IndexSpec, TableSpec, ALL};
use crate::server::store::{Store, StoreError};

/// Asks DynamoDB to add an index to a table in use, without waiting for it: AWS backfills
/// it from the table's items, which takes minutes to hours, and the table serves reads
/// and writes meanwhile. Reads from the index answer "busy" until it is ACTIVE
/// ([`indexes_building`]). Two consoles starting at once both ask; the one that loses
/// finds the index listed and is done. Returns whether this call added it.
pub(super) async fn add_gsi(
    store: &Store,
    name: &str,
    spec: &TableSpec,
    gsi: &IndexSpec,
) -> Result<bool, StoreError> {
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
                        .projection(projection(&gsi.projection))
                        .build()
                        .map_err(build_err)?,
                )
                .build(),
        )
        .send()
        .await
        .map_err(StoreError::request("UpdateTable"));
    match asked {
        Ok(_) => Ok(true),
        Err(e) => match describe(store, name).await? {
            Some(desc) if has_index(&desc, gsi.name) => Ok(false),
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

pub(super) fn has_index(desc: &TableDescription, index: &str) -> bool {
    desc.global_secondary_indexes()
        .iter()
        .any(|g| g.index_name() == Some(index))
}
