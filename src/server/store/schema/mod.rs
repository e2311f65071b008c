//! Every table the product needs (`tables`), and the bootstrap that creates them
//! (`bootstrap`). Re-running the bootstrap changes nothing; a table that lacks an index or
//! TTL gets it added. docs/data-model.md describes each table's items.

mod bootstrap;
mod drift;
mod indexes;
mod shapes;
mod tables;

pub use bootstrap::{bootstrap, index_names, ttl_attribute, Outcome};
pub use drift::drift;
pub use indexes::{indexes_building, wait_indexes_built};
pub use tables::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrType {
    S,
    N,
}

#[derive(Clone, Copy, Debug)]
pub struct KeyAttr {
    pub name: &'static str,
    pub ty: AttrType,
}

/// A String key attribute.
const fn s(name: &'static str) -> KeyAttr {
    KeyAttr {
        name,
        ty: AttrType::S,
    }
}

/// A Number key attribute.
const fn n(name: &'static str) -> KeyAttr {
    KeyAttr {
        name,
        ty: AttrType::N,
    }
}

#[derive(Debug)]
pub struct IndexSpec {
    pub name: &'static str,
    pub pk: KeyAttr,
    pub sk: Option<KeyAttr>,
    pub projection: Projected,
}

/// What an index holds of each item besides the keys. A write that changes only
/// attributes an index does not hold writes nothing to it.
#[derive(Debug, PartialEq, Eq)]
pub enum Projected {
    All,
    /// These attributes (and the keys).
    Include(&'static [&'static str]),
}

#[derive(Debug)]
pub struct TableSpec {
    /// The name without prefix and environment.
    pub base: &'static str,
    pub pk: KeyAttr,
    pub sk: Option<KeyAttr>,
    pub gsis: &'static [IndexSpec],
    pub lsis: &'static [IndexSpec],
    /// Epoch-seconds attribute DynamoDB's TTL deletes by.
    pub ttl_attr: &'static str,
    /// New and old images, for consumers of deletions.
    pub stream: bool,
}
