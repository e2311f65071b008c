//! Which items a request writes, by identity (table and key), and the state DynamoDB keeps
//! about them: the transactions in flight holding them, and the client request tokens of
//! the transactions that succeeded.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where a write names its item: by key, or by the whole item (a `Put`).
pub(crate) enum Target {
    Key(Value),
    Item(Value),
}

/// One item a request writes (or, for a `ConditionCheck`, holds).
pub(crate) struct Write {
    pub(crate) table: String,
    pub(crate) target: Target,
    /// `Put`, `Update`, `Delete` or `ConditionCheck`.
    pub(crate) kind: &'static str,
    /// The action as the request states it (its expressions and values).
    pub(crate) action: Value,
}

fn write(
    table: Option<&Value>,
    target: Target,
    kind: &'static str,
    action: &Value,
) -> Option<Write> {
    Some(Write {
        table: table?.as_str()?.to_string(),
        target,
        kind,
        action: action.clone(),
    })
}

fn kind_of(name: &str) -> &'static str {
    match name {
        "Put" | "PutItem" | "PutRequest" => "Put",
        "Update" | "UpdateItem" => "Update",
        "Delete" | "DeleteItem" | "DeleteRequest" => "Delete",
        _ => "ConditionCheck",
    }
}

/// The items a request of operation `op` writes, in request order (a transaction's
/// actions keep their indexes).
pub(crate) fn writes(op: &str, body: &Value) -> Vec<Write> {
    match op {
        "PutItem" => write(
            body.get("TableName"),
            Target::Item(body["Item"].clone()),
            "Put",
            body,
        )
        .into_iter()
        .collect(),
        "UpdateItem" | "DeleteItem" => write(
            body.get("TableName"),
            Target::Key(body["Key"].clone()),
            kind_of(op),
            body,
        )
        .into_iter()
        .collect(),
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .map(|actions| {
                actions
                    .iter()
                    .filter_map(|a| {
                        let (kind, inner) = a.as_object()?.iter().next()?;
                        let target = if kind == "Put" {
                            Target::Item(inner["Item"].clone())
                        } else {
                            Target::Key(inner["Key"].clone())
                        };
                        write(inner.get("TableName"), target, kind_of(kind), inner)
                    })
                    .collect()
            })
            .unwrap_or_default(),
        "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .map(|tables| {
                tables
                    .iter()
                    .flat_map(|(table, requests)| {
                        requests
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                            .into_iter()
                            .filter_map(move |r| {
                                let (target, kind, action) = if let Some(p) = r.get("PutRequest") {
                                    (Target::Item(p["Item"].clone()), "Put", p.clone())
                                } else {
                                    let d = r.get("DeleteRequest")?;
                                    (Target::Key(d["Key"].clone()), "Delete", d.clone())
                                };
                                Some(Write {
                                    table: table.clone(),
                                    target,
                                    kind,
                                    action,
                                })
                            })
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Makes every condition of a write true, as a console whose conditional writes were
/// broken would send it: each `ConditionExpression` of the request, and of its
/// transaction's items, becomes `(<it>) OR attribute_not_exists(<a name never written>)`,
/// so that its names and values stay in use (DynamoDB refuses unused ones). True when the
/// request had one.
pub(crate) fn ignore_conditions(body: &mut Value) -> bool {
    fn one(v: &mut Value) -> bool {
        let Some(c) = v.get("ConditionExpression").and_then(Value::as_str) else {
            return false;
        };
        v["ConditionExpression"] =
            Value::String(format!("({c}) OR attribute_not_exists(never_written_attr)"));
        true
    }
    let mut any = one(body);
    for item in body
        .get_mut("TransactItems")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for kind in ["Put", "Update", "Delete", "ConditionCheck"] {
            if let Some(v) = item.get_mut(kind) {
                any |= one(v);
            }
        }
    }
    any
}

/// What the proxy knows of a table: its key attribute names (partition key first) and its
/// indexes.
#[derive(Clone, Debug, Default)]
pub(crate) struct TableSchema {
    pub(crate) keys: Vec<String>,
    pub(crate) indexes: Vec<Index>,
}

/// A global or local secondary index.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Index {
    pub(crate) name: String,
    pub(crate) global: bool,
    /// Its key attribute names, partition key first.
    pub(crate) keys: Vec<String>,
    pub(crate) projection: Projection,
}

/// Which attributes an index copies.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

/// Key attribute names of a `KeySchema`, partition key first.
fn key_names(key_schema: &Value) -> Vec<String> {
    let mut keys: Vec<(String, bool)> = key_schema
        .as_array()
        .map(|ks| {
            ks.iter()
                .filter_map(|k| {
                    Some((
                        k["AttributeName"].as_str()?.to_string(),
                        k["KeyType"].as_str().unwrap_or("HASH") != "HASH",
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    keys.sort_by_key(|(_, range)| *range);
    keys.into_iter().map(|(k, _)| k).collect()
}

fn indexes(described: &Value, global: bool) -> Vec<Index> {
    described
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let p = &i["Projection"];
            let projection = match p["ProjectionType"].as_str() {
                Some("KEYS_ONLY") => Projection::KeysOnly,
                Some("INCLUDE") => Projection::Include(
                    p["NonKeyAttributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                ),
                _ => Projection::All,
            };
            Some(Index {
                name: i["IndexName"].as_str()?.to_string(),
                global,
                keys: key_names(&i["KeySchema"]),
                projection,
            })
        })
        .collect()
}

/// The tables' schemas, learnt from `DescribeTable`.
#[derive(Default)]
pub(crate) struct Schemas(Mutex<HashMap<String, TableSchema>>);

impl Schemas {
    /// The table's key attribute names, partition key first.
    pub(crate) fn get(&self, table: &str) -> Option<Vec<String>> {
        Some(self.0.lock().ok()?.get(table)?.keys.clone())
    }

    /// The table's keys and indexes.
    pub(crate) fn schema(&self, table: &str) -> Option<TableSchema> {
        self.0.lock().ok()?.get(table).cloned()
    }

    /// Whether `index` is a global index of `table` (known tables only).
    pub(crate) fn is_global_index(&self, table: &str, index: &str) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|m| {
                m.get(table)
                    .map(|s| s.indexes.iter().any(|g| g.global && g.name == index))
            })
            .unwrap_or(false)
    }

    pub(crate) fn learn(&self, table: &str, describe_table_answer: &Value) {
        let t = &describe_table_answer["Table"];
        let keys = key_names(&t["KeySchema"]);
        let mut all = indexes(&t["GlobalSecondaryIndexes"], true);
        all.extend(indexes(&t["LocalSecondaryIndexes"], false));
        if !keys.is_empty() {
            if let Ok(mut m) = self.0.lock() {
                m.insert(table.to_string(), TableSchema { keys, indexes: all });
            }
        }
    }
}

/// `table|name=value|...`: one string per item, whichever way the request named it.
pub(crate) fn identity(w: &Write, key_names: &[String]) -> String {
    let source = match &w.target {
        Target::Key(v) | Target::Item(v) => v,
    };
    identity_of(&w.table, source, key_names)
}

/// The identity of the item of `table` whose key (or whole item) is `source`.
pub(crate) fn identity_of(table: &str, source: &Value, key_names: &[String]) -> String {
    let mut id = table.to_string();
    for name in key_names {
        id.push('|');
        id.push_str(name);
        id.push('=');
        id.push_str(&source[name.as_str()].to_string());
    }
    id
}

/// The items held by transactions in flight.
#[derive(Default)]
pub(crate) struct Holds(Mutex<HashMap<String, u64>>);

/// Releases a transaction's items when dropped.
pub(crate) struct Held<'a> {
    holds: &'a Holds,
    ids: Vec<String>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.holds.0.lock() {
            for id in &self.ids {
                m.remove(id);
            }
        }
    }
}

impl Holds {
    /// Holds every item of a transaction, or says which of them another one holds.
    pub(crate) fn hold(&self, ids: &[String], owner: u64) -> Result<Held<'_>, Vec<usize>> {
        let mut m = self.0.lock().map_err(|_| Vec::new())?;
        let busy: Vec<usize> = ids
            .iter()
            .enumerate()
            .filter(|(_, id)| m.contains_key(*id))
            .map(|(i, _)| i)
            .collect();
        if !busy.is_empty() {
            return Err(busy);
        }
        for id in ids {
            m.insert(id.clone(), owner);
        }
        Ok(Held {
            holds: self,
            ids: ids.to_vec(),
        })
    }

    /// Which of `ids` an in-flight transaction holds.
    pub(crate) fn busy(&self, ids: &[String]) -> Vec<usize> {
        let Ok(m) = self.0.lock() else {
            return Vec::new();
        };
        ids.iter()
            .enumerate()
            .filter(|(_, id)| m.contains_key(*id))
            .map(|(i, _)| i)
            .collect()
    }
}

/// How long DynamoDB remembers a successful transaction's client request token.
pub(crate) const TOKEN_WINDOW: Duration = Duration::from_secs(600);

/// Client request tokens of the transactions that succeeded, with a hash of the request,
/// and those of the transactions still running.
#[derive(Default)]
pub(crate) struct Tokens {
    done: Mutex<HashMap<String, (u64, Instant)>>,
    /// Running transactions' tokens, with what each stands for as the client sent it (the
    /// proxy adds parameters of its own before forwarding).
    running: Mutex<HashMap<String, u64>>,
}

pub(crate) enum TokenSeen {
    New,
    /// The same request succeeded before: answer success, write nothing.
    Replay,
    /// The token came with another request.
    Mismatch,
    /// A transaction with this token is still running.
    InProgress,
}

/// A running transaction's token, forgotten as running when dropped.
pub(crate) struct Running<'a> {
    tokens: &'a Tokens,
    token: Option<String>,
}

impl Running<'_> {
    /// Leaves the token running after this guard is gone (a late write holds it until it
    /// lands, then calls [`Tokens::release_running`]).
    pub(crate) fn keep(mut self) {
        self.token = None;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let (Some(t), Ok(mut r)) = (&self.token, self.tokens.running.lock()) {
            r.remove(t);
        }
    }
}

/// What a token stands for: every parameter of the request but the token itself, as AWS
/// compares them ("a request with the same client token but a change in other
/// parameters" is refused with `IdempotentParameterMismatchException`).
fn request_hash(body: &Value) -> u64 {
    let mut params = body.clone();
    if let Some(o) = params.as_object_mut() {
        o.remove("ClientRequestToken");
    }
    let mut h = DefaultHasher::new();
    params.to_string().hash(&mut h);
    h.finish()
}

impl Tokens {
    /// Marks the transaction of `body` running; `None` when one with its token already is.
    pub(crate) fn start(&self, body: &Value) -> Option<Running<'_>> {
        let token = body["ClientRequestToken"].as_str().map(str::to_string);
        if let (Some(t), Ok(mut r)) = (&token, self.running.lock()) {
            if r.contains_key(t) {
                return None;
            }
            r.insert(t.clone(), request_hash(body));
        }
        Some(Running {
            tokens: self,
            token,
        })
    }

    /// A guard for a write without a token.
    pub(crate) fn none(&self) -> Running<'_> {
        Running {
            tokens: self,
            token: None,
        }
    }

    /// The transaction with this token (left running by [`Running::keep`]) has ended.
    pub(crate) fn release_running(&self, token: &str) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(token);
        }
    }

    pub(crate) fn check(&self, body: &Value) -> TokenSeen {
        let Some(token) = body["ClientRequestToken"].as_str() else {
            return TokenSeen::New;
        };
        if self.running.lock().is_ok_and(|r| r.contains_key(token)) {
            return TokenSeen::InProgress;
        }
        let Ok(m) = self.done.lock() else {
            return TokenSeen::New;
        };
        match m.get(token) {
            Some((h, at)) if at.elapsed() < TOKEN_WINDOW => {
                if *h == request_hash(body) {
                    TokenSeen::Replay
                } else {
                    TokenSeen::Mismatch
                }
            }
            _ => TokenSeen::New,
        }
    }

    /// The transaction of `body` succeeded: its token answers a replay of the request the
    /// client sent (as it was when it started) from now on.
    pub(crate) fn succeeded(&self, body: &Value) {
        let Some(token) = body["ClientRequestToken"].as_str() else {
            return;
        };
        let sent = self
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(token).copied())
            .unwrap_or_else(|| request_hash(body));
        if let Ok(mut m) = self.done.lock() {
            if m.len() > 100_000 {
                m.retain(|_, (_, at)| at.elapsed() < TOKEN_WINDOW);
            }
            m.insert(token.to_string(), (sent, Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_transaction_names_each_item_whichever_way_it_writes_it() {
        let body = json!({"TransactItems": [
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}, "v": {"N": "1"}}}},
            {"Update": {"TableName": "t", "Key": {"pk": {"S": "a"}}}},
            {"ConditionCheck": {"TableName": "u", "Key": {"pk": {"S": "b"}}}},
        ]});
        let names = vec!["pk".to_string()];
        let ids: Vec<String> = writes("TransactWriteItems", &body)
            .iter()
            .map(|w| identity(w, &names))
            .collect();
        assert_eq!(
            ids[0], ids[1],
            "a Put and an Update of one item are one item"
        );
        assert_ne!(ids[1], ids[2]);
        let holds = Holds::default();
        let held = holds.hold(&ids[..1], 1).unwrap();
        assert_eq!(holds.hold(&ids[1..], 2).err(), Some(vec![0]));
        drop(held);
        assert!(holds.hold(&ids[1..], 2).is_ok());
    }

    #[test]
    fn a_broken_console_s_conditions_are_made_true_keeping_their_names() {
        let mut body = json!({"TransactItems": [
            {"Put": {"TableName": "t", "ConditionExpression": "attribute_not_exists(pk)"}},
            {"Update": {"TableName": "t", "ConditionExpression": "v = :v"}},
            {"Update": {"TableName": "t"}},
        ]});
        assert!(ignore_conditions(&mut body));
        assert_eq!(
            body["TransactItems"][1]["Update"]["ConditionExpression"],
            "(v = :v) OR attribute_not_exists(never_written_attr)"
        );
        assert!(body["TransactItems"][2]["Update"]
            .get("ConditionExpression")
            .is_none());
        assert!(!ignore_conditions(&mut json!({"TableName": "t"})));
    }

    #[test]
    fn a_token_that_succeeded_answers_again_without_writing() {
        let tokens = Tokens::default();
        let body =
            json!({"ClientRequestToken": "t1", "TransactItems": [{"Put": {"TableName": "t"}}]});
        assert!(matches!(tokens.check(&body), TokenSeen::New));
        tokens.succeeded(&body);
        assert!(matches!(tokens.check(&body), TokenSeen::Replay));
        let other = json!({"ClientRequestToken": "t1", "TransactItems": []});
        assert!(matches!(tokens.check(&other), TokenSeen::Mismatch));
        // The same items with another parameter: not the same request either.
        let mut asks_more = body.clone();
        asks_more["ReturnConsumedCapacity"] = json!("TOTAL");
        assert!(matches!(tokens.check(&asks_more), TokenSeen::Mismatch));
    }

    #[test]
    fn a_token_whose_transaction_runs_is_in_progress_until_it_ends() {
        let tokens = Tokens::default();
        let body = json!({"ClientRequestToken": "t2", "TransactItems": []});
        let running = tokens.start(&body).expect("not running yet");
        assert!(matches!(tokens.check(&body), TokenSeen::InProgress));
        assert!(tokens.start(&body).is_none());
        drop(running);
        assert!(matches!(tokens.check(&body), TokenSeen::New));
    }
}
