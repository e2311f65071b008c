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
}

fn write(table: Option<&Value>, target: Target) -> Option<Write> {
    Some(Write {
        table: table?.as_str()?.to_string(),
        target,
    })
}

/// The items a request of operation `op` writes, in request order (a transaction's
/// actions keep their indexes).
pub(crate) fn writes(op: &str, body: &Value) -> Vec<Write> {
    match op {
        "PutItem" => write(body.get("TableName"), Target::Item(body["Item"].clone()))
            .into_iter()
            .collect(),
        "UpdateItem" | "DeleteItem" => {
            write(body.get("TableName"), Target::Key(body["Key"].clone()))
                .into_iter()
                .collect()
        }
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
                        write(inner.get("TableName"), target)
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
                                let target = if let Some(p) = r.get("PutRequest") {
                                    Target::Item(p["Item"].clone())
                                } else {
                                    Target::Key(r.get("DeleteRequest")?["Key"].clone())
                                };
                                Some(Write {
                                    table: table.clone(),
                                    target,
                                })
                            })
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The key attribute names of each table, learnt from `DescribeTable`.
#[derive(Default)]
pub(crate) struct Schemas(Mutex<HashMap<String, Vec<String>>>);

impl Schemas {
    pub(crate) fn get(&self, table: &str) -> Option<Vec<String>> {
        self.0.lock().ok()?.get(table).cloned()
    }

    pub(crate) fn learn(&self, table: &str, describe_table_answer: &Value) {
        let names: Vec<String> = describe_table_answer["Table"]["KeySchema"]
            .as_array()
            .map(|ks| {
                ks.iter()
                    .filter_map(|k| k["AttributeName"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if !names.is_empty() {
            if let Ok(mut m) = self.0.lock() {
                m.insert(table.to_string(), names);
            }
        }
    }
}

/// `table|name=value|...`: one string per item, whichever way the request named it.
pub(crate) fn identity(w: &Write, key_names: &[String]) -> String {
    let source = match &w.target {
        Target::Key(v) | Target::Item(v) => v,
    };
    let mut id = w.table.clone();
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

/// Client request tokens of the transactions that succeeded, with a hash of the request.
#[derive(Default)]
pub(crate) struct Tokens(Mutex<HashMap<String, (u64, Instant)>>);

pub(crate) enum TokenSeen {
    New,
    /// The same request succeeded before: answer success, write nothing.
    Replay,
    /// The token came with another request.
    Mismatch,
}

fn request_hash(body: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    body["TransactItems"].to_string().hash(&mut h);
    h.finish()
}

impl Tokens {
    pub(crate) fn check(&self, body: &Value) -> TokenSeen {
        let Some(token) = body["ClientRequestToken"].as_str() else {
            return TokenSeen::New;
        };
        let Ok(m) = self.0.lock() else {
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

    pub(crate) fn succeeded(&self, body: &Value) {
        let Some(token) = body["ClientRequestToken"].as_str() else {
            return;
        };
        if let Ok(mut m) = self.0.lock() {
            if m.len() > 100_000 {
                m.retain(|_, (_, at)| at.elapsed() < TOKEN_WINDOW);
            }
            m.insert(token.to_string(), (request_hash(body), Instant::now()));
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
    fn a_token_that_succeeded_answers_again_without_writing() {
        let tokens = Tokens::default();
        let body =
            json!({"ClientRequestToken": "t1", "TransactItems": [{"Put": {"TableName": "t"}}]});
        assert!(matches!(tokens.check(&body), TokenSeen::New));
        tokens.succeeded(&body);
        assert!(matches!(tokens.check(&body), TokenSeen::Replay));
        let other = json!({"ClientRequestToken": "t1", "TransactItems": []});
        assert!(matches!(tokens.check(&other), TokenSeen::Mismatch));
    }
}
