//! Capacity units as AWS bills them, and the write units each partition takes per second.
//!
//! DynamoDB Local computes the units of a single-item write or a read as AWS bills them
//! (`ReturnConsumedCapacity = INDEXES`: the item's size rounded up to 1 KB for a write,
//! 4 KB for a read, one more for each index copy: a 1.5 KB put is 2 units). The proxy asks
//! for them on every data request, keeps the totals by operation, and hands the client its
//! answer as it would have been without them.
//!
//! For `TransactWriteItems` DynamoDB Local reports one item's units per table, twice,
//! whatever the number of items (five small puts to one table: 2 units). AWS bills each
//! item of a transaction twice its size rounded up to 1 KB, so the proxy counts each item
//! itself ([`transaction_units`]) and keeps the larger figure. An item's size is known for
//! a `Put`; for an `Update`, a `Delete` or a `ConditionCheck` it counts the key and the
//! values the request carries, a lower bound (the item itself is not read). Index copies
//! of a transaction's items are not counted.
//!
//! The partition limit is a token bucket per partition (table and partition key) of
//! `per_s` units a second, holding one second's worth. A request is admitted while its
//! partitions are not in debt; its units are charged after DynamoDB Local answered (only
//! then are they known), so a partition can go into debt and is throttled until it has
//! paid. Index copies are charged to the table's partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{json, Value};

use crate::Units;

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

#[derive(Default)]
struct State {
    by_op: BTreeMap<String, Units>,
    partitions: HashMap<String, Bucket>,
}

#[derive(Default)]
pub(crate) struct Capacity(Mutex<State>);

fn is_write(op: &str) -> bool {
    matches!(
        op,
        "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems"
    )
}

/// Adds `ReturnConsumedCapacity = INDEXES` to a data request; whether the client had asked
/// for the units itself (then they stay in its answer).
pub(crate) fn ask(body: &mut Value) -> bool {
    let asked = body
        .get("ReturnConsumedCapacity")
        .and_then(Value::as_str)
        .is_some_and(|v| v != "NONE");
    if !asked {
        body["ReturnConsumedCapacity"] = json!("INDEXES");
    }
    asked
}

/// The units of one `ConsumedCapacity` entry.
fn entry_units(e: &Value) -> f64 {
    e["CapacityUnits"].as_f64().unwrap_or_else(|| {
        e["WriteCapacityUnits"].as_f64().unwrap_or(0.0)
            + e["ReadCapacityUnits"].as_f64().unwrap_or(0.0)
    })
}

impl Capacity {
    /// Records the units an answer of `op` reports, and takes them out of the answer
    /// unless the client asked. Returns the write units by table.
    pub(crate) fn record(
        &self,
        op: &str,
        request: &Value,
        answer: &mut Value,
        client_asked: bool,
    ) -> Vec<(String, f64)> {
        let entries: Vec<Value> = match answer.get("ConsumedCapacity") {
            Some(Value::Array(a)) => a.clone(),
            Some(v @ Value::Object(_)) => vec![v.clone()],
            _ => Vec::new(),
        };
        if !client_asked {
            if let Some(o) = answer.as_object_mut() {
                o.remove("ConsumedCapacity");
            }
        }
        let mut by_table: Vec<(String, f64)> = entries
            .iter()
            .map(|e| {
                let table = e["TableName"].as_str().unwrap_or_default().to_string();
                (table, entry_units(e))
            })
            .collect();
        if op == "TransactWriteItems" {
            for (table, units) in transaction_units(request) {
                match by_table.iter_mut().find(|(t, _)| *t == table) {
                    Some((_, reported)) => *reported = reported.max(units),
                    None => by_table.push((table, units)),
                }
            }
        }
        let total: f64 = by_table.iter().map(|(_, u)| u).sum();
        if let Ok(mut st) = self.0.lock() {
            let u = st.by_op.entry(op.to_string()).or_default();
            u.calls += 1;
            if is_write(op) {
                u.write += total;
            } else {
                u.read += total;
            }
        }
        if is_write(op) {
            by_table
        } else {
            Vec::new()
        }
    }

    /// Counts a call whose answer carried no units (an error).
    pub(crate) fn record_call(&self, op: &str) {
        if let Ok(mut st) = self.0.lock() {
            st.by_op.entry(op.to_string()).or_default().calls += 1;
        }
    }

    pub(crate) fn units(&self) -> BTreeMap<String, Units> {
        self.0.lock().map(|st| st.by_op.clone()).unwrap_or_default()
    }

    /// Which of `partitions` are in debt under a limit of `per_s` units a second.
    pub(crate) fn over(&self, partitions: &[String], per_s: u32) -> Vec<usize> {
        if per_s == 0 {
            return Vec::new();
        }
        let Ok(mut st) = self.0.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        let rate = f64::from(per_s);
        partitions
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let b = st.partitions.entry(p.clone()).or_insert(Bucket {
                    tokens: rate,
                    refilled: now,
                });
                let elapsed = now.duration_since(b.refilled).as_secs_f64();
                b.tokens = (b.tokens + elapsed * rate).min(rate);
                b.refilled = now;
                (b.tokens < 0.0).then_some(i)
            })
            .collect()
    }

    /// Charges each partition its units.
    pub(crate) fn charge(&self, charges: &[(String, f64)], per_s: u32) {
        if per_s == 0 {
            return;
        }
        let Ok(mut st) = self.0.lock() else {
            return;
        };
        let now = Instant::now();
        let rate = f64::from(per_s);
        for (p, units) in charges {
            let b = st.partitions.entry(p.clone()).or_insert(Bucket {
                tokens: rate,
                refilled: now,
            });
            b.tokens -= units;
        }
    }
}

/// The write units of a `TransactWriteItems` request as AWS bills them, by table: each
/// item twice its size rounded up to 1 KB (see the module's note on what size is known).
pub(crate) fn transaction_units(request: &Value) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for item in request["TransactItems"].as_array().into_iter().flatten() {
        let Some((_, action)) = item.as_object().and_then(|o| o.iter().next()) else {
            continue;
        };
        let table = action["TableName"].as_str().unwrap_or_default().to_string();
        let size = match action.get("Item") {
            Some(Value::Object(attrs)) => item_size(attrs),
            _ => {
                let key = action["Key"].as_object().map_or(0, item_size);
                let values = action["ExpressionAttributeValues"]
                    .as_object()
                    .map_or(0, |v| v.values().map(value_size).sum());
                key + values
            }
        };
        let units = 2.0 * size.div_ceil(1024).max(1) as f64;
        match out.iter_mut().find(|(t, _)| *t == table) {
            Some((_, u)) => *u += units,
            None => out.push((table, units)),
        }
    }
    out
}

/// An item's size as DynamoDB counts it: each attribute's name and value.
fn item_size(attrs: &serde_json::Map<String, Value>) -> usize {
    attrs.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

/// A typed value's size (`{"S": …}`, `{"N": …}`, `{"M": …}` …) as DynamoDB counts it.
fn value_size(v: &Value) -> usize {
    let Some((t, inner)) = v.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match (t.as_str(), inner) {
        ("S", Value::String(s)) => s.len(),
        // Base64 in JSON: the bytes are three quarters of the text.
        ("B", Value::String(b)) => b.len() * 3 / 4,
        ("N", Value::String(n)) => n.trim_start_matches('-').len().div_ceil(2) + 1,
        ("BOOL", _) | ("NULL", _) => 1,
        ("SS", Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::len).sum(),
        ("NS", Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(|n| n.len().div_ceil(2) + 1)
            .sum(),
        ("BS", Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(|b| b.len() * 3 / 4)
            .sum(),
        ("L", Value::Array(a)) => 3 + a.iter().map(|e| 1 + value_size(e)).sum::<usize>(),
        ("M", Value::Object(m)) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_size(e))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// Spreads each table's write units evenly over the partitions of that table's items
/// (`partitions` as `(table, partition)`, one per item written).
pub(crate) fn per_partition(
    by_table: &[(String, f64)],
    partitions: &[(String, String)],
) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (table, units) in by_table {
        let mine: Vec<&String> = partitions
            .iter()
            .filter(|(t, _)| t == table)
            .map(|(_, p)| p)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let each = units / mine.len() as f64;
        out.extend(mine.into_iter().map(|p| (p.clone(), each)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_totalled_by_operation_and_leave_an_answer_nobody_asked_for_them_in() {
        let c = Capacity::default();
        let mut answer = json!({"ConsumedCapacity": [
            {"TableName": "t", "CapacityUnits": 3.0},
            {"TableName": "u", "CapacityUnits": 1.0},
        ]});
        let by_table = c.record("TransactWriteItems", &json!({}), &mut answer, false);
        assert_eq!(
            by_table,
            vec![("t".to_string(), 3.0), ("u".to_string(), 1.0)]
        );
        assert!(answer.get("ConsumedCapacity").is_none());
        let mut read =
            json!({"Items": [], "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}});
        assert!(c.record("Query", &json!({}), &mut read, true).is_empty());
        assert!(read.get("ConsumedCapacity").is_some(), "the client asked");
        let units = c.units();
        assert_eq!(units["TransactWriteItems"].write, 4.0);
        assert_eq!(units["Query"].read, 0.5);
        let mut body = json!({"TableName": "t"});
        assert!(!ask(&mut body));
        assert_eq!(body["ReturnConsumedCapacity"], "INDEXES");
    }

    #[test]
    fn a_transaction_is_billed_per_item_twice_its_size_where_local_reports_one_per_table() {
        let c = Capacity::default();
        let big = "x".repeat(1500);
        let request = json!({"TransactItems": [
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}},
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}, "body": {"S": big}}}},
            {"Update": {"TableName": "t", "Key": {"pk": {"S": "c"}},
                "UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": "u", "Key": {"pk": {"S": "d"}},
                "ConditionExpression": "attribute_exists(pk)"}},
        ]});
        // What DynamoDB Local answers for it: 2 units for each table.
        let mut answer = json!({"ConsumedCapacity": [
            {"TableName": "t", "CapacityUnits": 2.0},
            {"TableName": "u", "CapacityUnits": 2.0},
        ]});
        let by_table = c.record("TransactWriteItems", &request, &mut answer, false);
        // t: 2 (small) + 4 (1.5 KB) + 2 (update); u: 2 (the check).
        assert_eq!(
            by_table,
            vec![("t".to_string(), 8.0), ("u".to_string(), 2.0)]
        );
        assert_eq!(c.units()["TransactWriteItems"].write, 10.0);
    }

    #[test]
    fn a_partition_in_debt_is_over_until_it_has_paid() {
        let c = Capacity::default();
        let p = vec!["t|pk=\"a\"".to_string()];
        assert!(c.over(&p, 10).is_empty());
        c.charge(&[(p[0].clone(), 15.0)], 10);
        assert_eq!(c.over(&p, 10), vec![0], "10 - 15 < 0");
        assert!(c.over(&p, 0).is_empty(), "no limit");
        let spread = per_partition(
            &[("t".to_string(), 4.0)],
            &[
                ("t".to_string(), "a".to_string()),
                ("t".to_string(), "b".to_string()),
            ],
        );
        assert_eq!(spread, vec![("a".to_string(), 2.0), ("b".to_string(), 2.0)]);
    }
}
