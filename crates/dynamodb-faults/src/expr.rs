//! Key conditions and filters of queries, evaluated against an item as DynamoDB evaluates
//! them: what a lagging index's stale copy must satisfy to be in an answer. Only the forms
//! queries are written in here are read: terms joined by `AND`, each a comparison
//! (`=`, `<>`, `<`, `<=`, `>`, `>=`), `BETWEEN`, `IN`, `begins_with`,
//! `attribute_exists` or `attribute_not_exists`. Anything else is not read (`None`).

use std::cmp::Ordering;

use serde_json::Value;

/// Whether `item` satisfies `expr`, with the request's names and values; `None` when the
/// expression is of a form this does not read.
pub(crate) fn holds(expr: &str, request: &Value, item: &Value) -> Option<bool> {
    let mut all = true;
    for term in terms(expr)? {
        all &= term_holds(term.trim(), request, item)?;
    }
    Some(all)
}

/// The value the key condition gives the attribute `name` with `=` (an index's partition
/// key).
pub(crate) fn equal_to<'a>(expr: &str, request: &'a Value, name: &str) -> Option<&'a Value> {
    terms(expr)?.into_iter().find_map(|t| {
        let (lhs, rhs) = t.split_once('=')?;
        let (lhs, rhs) = (lhs.trim(), rhs.trim());
        (!lhs.ends_with(['<', '>']) && resolve(request, lhs) == name)
            .then(|| request["ExpressionAttributeValues"].get(rhs))
            .flatten()
    })
}

/// The conjunction's terms (`BETWEEN a AND b` kept whole); `None` for `OR`, `NOT` or
/// parentheses around terms.
fn terms(expr: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = expr.split_whitespace().collect();
    if words
        .iter()
        .any(|w| w.eq_ignore_ascii_case("OR") || w.eq_ignore_ascii_case("NOT"))
    {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut between = false;
    for w in words {
        if w.eq_ignore_ascii_case("AND") && !between {
            out.push(current.join(" "));
            current.clear();
            continue;
        }
        if w.eq_ignore_ascii_case("AND") {
            between = false;
        }
        if w.eq_ignore_ascii_case("BETWEEN") {
            between = true;
        }
        current.push(w);
    }
    out.push(current.join(" "));
    if out.iter().any(|t| t.is_empty() || t.starts_with('(')) {
        return None;
    }
    Some(out)
}

/// A name in an expression, through `ExpressionAttributeNames`.
pub(crate) fn resolve<'a>(request: &'a Value, name: &'a str) -> &'a str {
    if name.starts_with('#') {
        request["ExpressionAttributeNames"][name]
            .as_str()
            .unwrap_or(name)
    } else {
        name
    }
}

fn value<'a>(request: &'a Value, placeholder: &str) -> Option<&'a Value> {
    request["ExpressionAttributeValues"].get(placeholder.trim())
}

/// Compares two attribute values of one type (numbers as numbers); `None` across types.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a["N"].as_str(), b["N"].as_str()) {
        return x.parse::<f64>().ok()?.partial_cmp(&y.parse::<f64>().ok()?);
    }
    for t in ["S", "B"] {
        if let (Some(x), Some(y)) = (a[t].as_str(), b[t].as_str()) {
            return Some(x.cmp(y));
        }
    }
    (a == b).then_some(Ordering::Equal)
}

fn call_args<'a>(term: &'a str, function: &str) -> Option<Vec<&'a str>> {
    let inner = term.strip_prefix(function)?.trim_start();
    let inner = inner.strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(str::trim).collect())
}

fn term_holds(term: &str, request: &Value, item: &Value) -> Option<bool> {
    let attr = |name: &str| item.get(resolve(request, name));
    if let Some(args) = call_args(term, "begins_with") {
        let (Some(a), Some(p)) = (attr(args.first()?), value(request, args.get(1)?)) else {
            return Some(false);
        };
        return Some(
            matches!((a["S"].as_str(), p["S"].as_str()), (Some(a), Some(p)) if a.starts_with(p)),
        );
    }
    if let Some(args) = call_args(term, "attribute_not_exists") {
        return Some(attr(args.first()?).is_none());
    }
    if let Some(args) = call_args(term, "attribute_exists") {
        return Some(attr(args.first()?).is_some());
    }
    let mut parts = term.splitn(2, char::is_whitespace);
    let name = parts.next()?;
    let rest = parts.next()?.trim();
    let a = attr(name);
    let upper = rest.to_ascii_uppercase();
    if upper.starts_with("BETWEEN ") {
        let (lo, hi) = rest[8..]
            .split_once(" AND ")
            .or_else(|| rest[8..].split_once(" and "))?;
        let (lo, hi) = (value(request, lo)?, value(request, hi)?);
        return Some(a.is_some_and(|a| {
            compare(a, lo).is_some_and(Ordering::is_ge)
                && compare(a, hi).is_some_and(Ordering::is_le)
        }));
    }
    if upper.starts_with("IN ") || upper.starts_with("IN(") {
        let list = rest[2..].trim().strip_prefix('(')?.strip_suffix(')')?;
        let mut any = false;
        for p in list.split(',') {
            let v = value(request, p)?;
            any |= a.is_some_and(|a| compare(a, v) == Some(Ordering::Equal));
        }
        return Some(any);
    }
    let (op, rhs) = ["<>", "<=", ">=", "=", "<", ">"]
        .iter()
        .find_map(|op| rest.strip_prefix(op).map(|r| (*op, r.trim())))?;
    let v = value(request, rhs)?;
    let Some(a) = a else {
        // A comparison with an attribute the item lacks is false, but for `<>`: it is not
        // equal (the outbox's resend filter counts on it).
        return Some(op == "<>");
    };
    let ord = compare(a, v);
    Some(match op {
        "=" => ord == Some(Ordering::Equal),
        "<>" => ord != Some(Ordering::Equal),
        "<" => ord == Some(Ordering::Less),
        "<=" => ord.is_some_and(Ordering::is_le),
        ">" => ord == Some(Ordering::Greater),
        _ => ord.is_some_and(Ordering::is_ge),
    })
}

/// `item` with only the attributes a `ProjectionExpression` names (top-level names).
pub(crate) fn project(item: &Value, request: &Value) -> Value {
    let Some(p) = request["ProjectionExpression"].as_str() else {
        return item.clone();
    };
    let mut out = serde_json::Map::new();
    for name in p.split(',') {
        let name = resolve(request, name.trim());
        if let Some(v) = item.get(name) {
            out.insert(name.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_forms_queries_use_are_read_as_dynamodb_reads_them() {
        let request = json!({
            "ExpressionAttributeNames": {"#pk": "due", "#sk": "outbox_sk", "#f0": "lease_until_ms",
                                         "#f1": "status", "#p": "body"},
            "ExpressionAttributeValues": {":pk": {"S": "due#01"}, ":ska": {"S": "default#0"},
                                          ":skb": {"S": "default#9"}, ":f0": {"N": "1000"},
                                          ":f10": {"S": "queued"}, ":f11": {"S": "retry"},
                                          ":b": {"S": "def"}},
            "ProjectionExpression": "#pk, #sk"
        });
        let item = |sk: &str, lease: u64, status: &str| {
            json!({"due": {"S": "due#01"}, "outbox_sk": {"S": sk},
                   "lease_until_ms": {"N": lease.to_string()}, "status": {"S": status}})
        };
        let key = "#pk = :pk AND #sk BETWEEN :ska AND :skb";
        let filter = "#f0 < :f0 AND #f1 IN (:f10, :f11)";
        assert_eq!(
            holds(key, &request, &item("default#5", 0, "queued")),
            Some(true)
        );
        assert_eq!(
            holds(key, &request, &item("other#5", 0, "queued")),
            Some(false)
        );
        assert_eq!(
            holds(filter, &request, &item("default#5", 999, "retry")),
            Some(true)
        );
        assert_eq!(
            holds(filter, &request, &item("default#5", 1000, "retry")),
            Some(false),
            "leased"
        );
        assert_eq!(
            holds(filter, &request, &item("default#5", 0, "held")),
            Some(false)
        );
        assert_eq!(
            holds("begins_with(#sk, :b)", &request, &item("default#1", 0, "q")),
            Some(true)
        );
        assert_eq!(
            holds("attribute_not_exists(#p)", &request, &item("d", 0, "q")),
            Some(true)
        );
        assert_eq!(
            holds("#f0 >= :f0", &request, &item("d", 1000, "q")),
            Some(true)
        );
        assert_eq!(
            holds("#p <> :b", &request, &item("d", 0, "q")),
            Some(true),
            "missing: not equal"
        );
        assert_eq!(
            holds("#p = :b", &request, &item("d", 0, "q")),
            Some(false),
            "missing"
        );
        assert_eq!(
            holds("#a = :b OR #c = :d", &request, &item("d", 0, "q")),
            None
        );
        assert_eq!(
            equal_to(key, &request, "due"),
            Some(&json!({"S": "due#01"}))
        );
        assert_eq!(
            project(&item("d", 0, "q"), &request),
            json!({"due": {"S": "due#01"}, "outbox_sk": {"S": "d"}})
        );
    }
}
