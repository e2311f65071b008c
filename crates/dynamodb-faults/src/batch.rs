//! Partial batches: AWS processes part of a `BatchWriteItem` or `BatchGetItem` and hands
//! the rest back (`UnprocessedItems`, `UnprocessedKeys`) when partitions are busy. The
//! proxy forwards part of the batch and answers with the rest as unprocessed.

use serde_json::{json, Map, Value};

/// A batch split in two: what is forwarded, and what is handed back unprocessed (in the
/// shape of the answer's `UnprocessedItems` or `UnprocessedKeys`).
pub(crate) struct Split {
    pub(crate) forwarded: Value,
    pub(crate) held: Value,
}

/// Splits a batch request (`BatchWriteItem` or `BatchGetItem`) by `hold(table, i)` for the
/// `i`th entry of each table. `None` when nothing is held back, or everything would be
/// (AWS then refuses the whole call).
pub(crate) fn split(
    op: &str,
    body: &Value,
    mut hold: impl FnMut(&str, usize) -> bool,
) -> Option<Split> {
    let tables = body["RequestItems"].as_object()?;
    let mut forwarded = Map::new();
    let mut held = Map::new();
    for (table, spec) in tables {
        let entries: Vec<Value> = match op {
            "BatchWriteItem" => spec.as_array().cloned().unwrap_or_default(),
            _ => spec["Keys"].as_array().cloned().unwrap_or_default(),
        };
        let (mut keep, mut back) = (Vec::new(), Vec::new());
        for (i, e) in entries.into_iter().enumerate() {
            if hold(table, i) {
                back.push(e);
            } else {
                keep.push(e);
            }
        }
        let rebuild = |list: Vec<Value>| match op {
            "BatchWriteItem" => Value::Array(list),
            _ => {
                let mut s = spec.clone();
                s["Keys"] = Value::Array(list);
                s
            }
        };
        if !keep.is_empty() {
            forwarded.insert(table.clone(), rebuild(keep));
        }
        if !back.is_empty() {
            held.insert(table.clone(), rebuild(back));
        }
    }
    if held.is_empty() || forwarded.is_empty() {
        return None;
    }
    let mut fwd = body.clone();
    fwd["RequestItems"] = Value::Object(forwarded);
    Some(Split {
        forwarded: fwd,
        held: Value::Object(held),
    })
}

/// The answer to the forwarded part, with the held part added to what it left
/// unprocessed.
pub(crate) fn merge(op: &str, mut answer: Value, held: Value) -> Value {
    let field = if op == "BatchWriteItem" {
        "UnprocessedItems"
    } else {
        "UnprocessedKeys"
    };
    let mut unprocessed = answer[field].as_object().cloned().unwrap_or_default();
    if let Value::Object(held) = held {
        for (table, spec) in held {
            match (op, unprocessed.get_mut(&table)) {
                ("BatchWriteItem", Some(Value::Array(list))) => {
                    list.extend(spec.as_array().cloned().unwrap_or_default());
                }
                (_, Some(existing)) => {
                    let mut keys = existing["Keys"].as_array().cloned().unwrap_or_default();
                    keys.extend(spec["Keys"].as_array().cloned().unwrap_or_default());
                    existing["Keys"] = Value::Array(keys);
                }
                (_, None) => {
                    unprocessed.insert(table, spec);
                }
            }
        }
    }
    answer[field] = Value::Object(unprocessed);
    if op != "BatchWriteItem" && answer.get("Responses").is_none() {
        answer["Responses"] = json!({});
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_batch_is_split_and_the_rest_comes_back_unprocessed() {
        let body = json!({"RequestItems": {"t": [
            {"PutRequest": {"Item": {"pk": {"S": "a"}}}},
            {"PutRequest": {"Item": {"pk": {"S": "b"}}}},
            {"DeleteRequest": {"Key": {"pk": {"S": "c"}}}},
        ]}});
        let s = split("BatchWriteItem", &body, |_, i| i == 1).unwrap();
        assert_eq!(
            s.forwarded["RequestItems"]["t"].as_array().unwrap().len(),
            2
        );
        let answer = merge("BatchWriteItem", json!({"UnprocessedItems": {}}), s.held);
        assert_eq!(
            answer["UnprocessedItems"]["t"][0]["PutRequest"]["Item"]["pk"]["S"],
            "b"
        );
        assert!(split("BatchWriteItem", &body, |_, _| false).is_none());
        assert!(
            split("BatchWriteItem", &body, |_, _| true).is_none(),
            "all held: refused whole"
        );
    }

    #[test]
    fn a_read_batch_keeps_its_projection_with_the_keys_handed_back() {
        let body = json!({"RequestItems": {"t": {
            "Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "b"}}],
            "ConsistentRead": true,
        }}});
        let s = split("BatchGetItem", &body, |_, i| i == 0).unwrap();
        let answer = merge(
            "BatchGetItem",
            json!({"Responses": {"t": [{"pk": {"S": "b"}}]}, "UnprocessedKeys": {}}),
            s.held,
        );
        assert_eq!(answer["UnprocessedKeys"]["t"]["Keys"][0]["pk"]["S"], "a");
        assert_eq!(answer["UnprocessedKeys"]["t"]["ConsistentRead"], true);
    }
}
