//! The company directory (docs/conversations.md, "Searching"): one item per company in
//! `settings-<env>` (`company#<company_id>`), with the company's name and one attribute per
//! project (`p#<project_id>` = the project's name). It lets the Conversations search take a
//! company's name in any case, and suggest companies as a person types. It is written when
//! a conversation is created (so it holds the companies with a conversation in the last
//! `ttl.conversations_days`), and read with one Scan of the settings table, which holds a
//! handful of other items.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{n, s};
use super::many::Item;
use super::schema::SETTINGS;
use super::{tx, Store, StoreError};

const PREFIX: &str = "company#";
const PROJECT: &str = "p#";

/// A company as the directory knows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Company {
    pub company_id: String,
    /// Empty when no conversation named it.
    pub name: String,
    /// Project id → name (empty when unnamed).
    pub projects: BTreeMap<String, String>,
}

/// What one conversation says about its company.
pub struct Entry<'a> {
    pub company_id: &'a str,
    pub company_name: Option<&'a str>,
    pub project_id: &'a str,
    pub project_name: Option<&'a str>,
    /// Epoch seconds: the directory entry lives as long as the conversation.
    pub expires_at: i64,
}

/// Files `e`'s company and project: names are overwritten by the latest conversation's,
/// and the lifetime set to its. One `UpdateItem`, harmless to repeat.
pub async fn note(store: &Store, e: &Entry<'_>) -> Result<(), StoreError> {
    let mut set = vec!["company_id = :c", "#p = :pn", "expires_at = :e"];
    let mut values = vec![
        (":c", s(e.company_id)),
        (":pn", s(e.project_name.unwrap_or_default())),
        (":e", n(e.expires_at)),
    ];
    if let Some(name) = e.company_name.filter(|n| !n.trim().is_empty()) {
        set.push("company_name = :n");
        values.push((":n", s(name)));
    }
    let expr = format!("SET {}", set.join(", "));
    let table = store.table(SETTINGS.base);
    tx::retrying(|| {
        let mut req = store
            .client()
            .update_item()
            .table_name(&table)
            .key("pk", s(format!("{PREFIX}{}", e.company_id)))
            .update_expression(&expr)
            .expression_attribute_names("#p", format!("{PROJECT}{}", e.project_id));
        for (k, v) in &values {
            req = req.expression_attribute_values(*k, v.clone());
        }
        async move {
            req.send()
                .await
                .map(|_| ())
                .map_err(StoreError::request("UpdateItem"))
        }
    })
    .await
}

/// Every company in the directory that has not expired at `now` (epoch seconds), by id.
pub async fn list(store: &Store, now: i64) -> Result<Vec<Company>, StoreError> {
    let table = store.table(SETTINGS.base);
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .client()
            .scan()
            .table_name(&table)
            .filter_expression("begins_with(pk, :p) AND expires_at > :now")
            .expression_attribute_values(":p", s(PREFIX))
            .expression_attribute_values(":now", n(now))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Scan"))?;
        out.extend(page.items.unwrap_or_default().iter().map(company));
        match page.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    out.sort_by(|a, b| a.company_id.cmp(&b.company_id));
    Ok(out)
}

fn company(item: &Item) -> Company {
    let text = |v: &AttributeValue| v.as_s().cloned().unwrap_or_default();
    let mut c = Company::default();
    for (k, v) in item {
        match k.as_str() {
            "company_id" => c.company_id = text(v),
            "company_name" => c.name = text(v),
            _ => {
                if let Some(p) = k.strip_prefix(PROJECT) {
                    c.projects.insert(p.to_string(), text(v));
                }
            }
        }
    }
    c
}
