//! A table spec as DynamoDB's request types, and a table as DynamoDB describes it: shared
//! by the bootstrap and the index changes.

use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TableDescription,
};

use super::{AttrType, KeyAttr, Projected, TableSpec};
use crate::server::store::{Store, StoreError};

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

pub(super) fn key_schema(
    pk: KeyAttr,
    sk: Option<KeyAttr>,
) -> Result<Vec<KeySchemaElement>, StoreError> {
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

pub(super) fn attribute_definitions(
    spec: &TableSpec,
) -> Result<Vec<AttributeDefinition>, StoreError> {
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

/// An index's projection, as DynamoDB is asked for it.
pub(super) fn projection(p: &Projected) -> Projection {
    match p {
        Projected::All => Projection::builder()
            .projection_type(ProjectionType::All)
            .build(),
        Projected::Include(attrs) => Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(attrs.iter().map(|a| a.to_string()).collect()))
            .build(),
    }
}

pub(super) fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Schema {
        table: String::new(),
        detail: e.to_string(),
    }
}
