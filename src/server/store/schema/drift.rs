//! What differs between the tables DynamoDB has and the ones `ALL` specifies (`/readyz`):
//! a missing table, other keys, a missing index or one with other keys, TTL off or on
//! another attribute, a stream missing or without both images.

use aws_sdk_dynamodb::types::{
    IndexStatus, KeySchemaElement, KeyType, StreamViewType, TimeToLiveStatus,
};

use super::shapes::describe;
use super::{IndexSpec, KeyAttr, TableSpec, ALL};
use crate::server::store::{Store, StoreError};

/// Every difference, one sentence each naming the table (and index); empty when none.
/// Every table is asked at once (two control-plane requests each): one check takes as long
/// as its slowest table, not the sum of them.
pub async fn drift(store: &Store) -> Result<Vec<String>, StoreError> {
    let checks = ALL.iter().map(|spec| table_drift(store, spec));
    let found = futures_util::future::try_join_all(checks).await?;
    Ok(found.into_iter().flatten().collect())
}

async fn table_drift(store: &Store, spec: &TableSpec) -> Result<Vec<String>, StoreError> {
    let name = store.table(spec.base);
    let Some(desc) = describe(store, &name).await? else {
        return Ok(vec![format!("table {name} is missing")]);
    };
    let mut out = Vec::new();
    if keys(desc.key_schema()) != want(spec.pk, spec.sk) {
        out.push(format!(
            "table {name} has other keys than {}",
            shown(spec.pk, spec.sk)
        ));
    }
    // An index being created (backfilled) or deleted does not answer queries yet or any
    // more: only an active one counts.
    let gsis: Vec<(&str, &[KeySchemaElement])> = desc
        .global_secondary_indexes()
        .iter()
        .filter(|g| g.index_status() == Some(&IndexStatus::Active))
        .map(|g| (g.index_name().unwrap_or(""), g.key_schema()))
        .collect();
    let lsis: Vec<(&str, &[KeySchemaElement])> = desc
        .local_secondary_indexes()
        .iter()
        .map(|l| (l.index_name().unwrap_or(""), l.key_schema()))
        .collect();
    for (kind, specs, have) in [
        ("index", spec.gsis, &gsis),
        ("local index", spec.lsis, &lsis),
    ] {
        for ix in specs {
            out.extend(index_drift(&name, kind, ix, have));
        }
    }
    let ttl = store
        .client()
        .describe_time_to_live()
        .table_name(&name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    let ttl = ttl.time_to_live_description();
    let ttl_on = matches!(
        ttl.and_then(|d| d.time_to_live_status()),
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
    );
    if !ttl_on || ttl.and_then(|d| d.attribute_name()) != Some(spec.ttl_attr) {
        out.push(format!("table {name}: TTL is not on `{}`", spec.ttl_attr));
    }
    if spec.stream {
        let stream = desc.stream_specification();
        let ok = stream.is_some_and(|s| {
            s.stream_enabled() && s.stream_view_type() == Some(&StreamViewType::NewAndOldImages)
        });
        if !ok {
            out.push(format!("table {name}: no stream with new and old images"));
        }
    }
    Ok(out)
}

fn index_drift(
    table: &str,
    kind: &str,
    ix: &IndexSpec,
    have: &[(&str, &[KeySchemaElement])],
) -> Option<String> {
    match have.iter().find(|(n, _)| *n == ix.name) {
        None => Some(format!(
            "table {table}: {kind} {} is missing (or not active)",
            ix.name
        )),
        Some((_, k)) if keys(k) != want(ix.pk, ix.sk) => Some(format!(
            "table {table}: {kind} {} has other keys than {}",
            ix.name,
            shown(ix.pk, ix.sk)
        )),
        Some(_) => None,
    }
}

fn keys(k: &[KeySchemaElement]) -> Vec<(String, bool)> {
    k.iter()
        .map(|e| {
            (
                e.attribute_name().to_string(),
                *e.key_type() == KeyType::Hash,
            )
        })
        .collect()
}

fn want(pk: KeyAttr, sk: Option<KeyAttr>) -> Vec<(String, bool)> {
    std::iter::once((pk.name.to_string(), true))
        .chain(sk.map(|k| (k.name.to_string(), false)))
        .collect()
}

fn shown(pk: KeyAttr, sk: Option<KeyAttr>) -> String {
    match sk {
        Some(sk) => format!("({}, {})", pk.name, sk.name),
        None => format!("({})", pk.name),
    }
}
