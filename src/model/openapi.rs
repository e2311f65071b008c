//! The REST API, as the API page shows it (read from the OpenAPI document).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub ty: String,
    pub required: bool,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    pub method: String,
    pub path: String,
    pub tag: String,
    pub description: String,
    /// `None`: no key needed; empty: any key.
    pub scope: Option<String>,
    pub params: Vec<Field>,
    pub body: Option<String>,
    pub responses: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    pub name: String,
    pub description: String,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiDoc {
    pub title: String,
    pub version: String,
    pub description: String,
    pub operations: Vec<Operation>,
    pub schemas: Vec<Schema>,
}
