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
//! With AWS's partitions modelled (`Faults::partitions`), a write's units are the proxy's
//! own count instead, index copies included (the `partitions` module).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::Units;

#[derive(Default)]
struct State {
    by_op: BTreeMap<String, Units>,
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
    /// Records the units an answer of `op` reports (or `billed`, the proxy's own count),
    /// and takes them out of the answer unless the client asked. Returns the units by
    /// table.
    pub(crate) fn record(
        &self,
        op: &str,
        request: &Value,
        answer: &mut Value,
        client_asked: bool,
        billed: Option<f64>,
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
        let total: f64 = billed.unwrap_or_else(|| by_table.iter().map(|(_, u)| u).sum());
        if let Ok(mut st) = self.0.lock() {
            let u = st.by_op.entry(op.to_string()).or_default();
            u.calls += 1;
            if is_write(op) {
                u.write += total;
            } else {
                u.read += total;
            }
        }
        by_table
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
pub(crate) fn item_size(attrs: &serde_json::Map<String, Value>) -> usize {
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
        let by_table = c.record("TransactWriteItems", &json!({}), &mut answer, false, None);
        assert_eq!(
            by_table,
            vec![("t".to_string(), 3.0), ("u".to_string(), 1.0)]
        );
        assert!(answer.get("ConsumedCapacity").is_none());
        let mut read =
            json!({"Items": [], "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}});
        c.record("Query", &json!({}), &mut read, true, None);
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
        let by_table = c.record("TransactWriteItems", &request, &mut answer, false, None);
        // t: 2 (small) + 4 (1.5 KB) + 2 (update); u: 2 (the check).
        assert_eq!(
            by_table,
            vec![("t".to_string(), 8.0), ("u".to_string(), 2.0)]
        );
        assert_eq!(c.units()["TransactWriteItems"].write, 10.0);
    }
}
