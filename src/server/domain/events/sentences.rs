//! The events' audit records in words: decisions and delivery attempts (the Audit page puts
//! each line together in `audit::sentences`).

use serde_json::Value;

/// An attempt's record in words: "“Route billing” not delivered (attempt 2): receiver
/// answered 503". `None` for a result that is not an attempt's.
pub fn attempt(action_type: &str, target: &str, n: i64, result: &str) -> Option<String> {
    let effect = format!("“{} {target}”", capitalised(&action_type.replace('_', " ")));
    let (verb, why) = if let Some(why) = result.strip_prefix("success: ") {
        ("delivered", why)
    } else if let Some(why) = result.strip_prefix("fail: ") {
        ("not delivered", why)
    } else if let Some(why) = result.strip_prefix("dead letter: ") {
        ("became a dead letter", why)
    } else if result == "held: safe_mode" {
        return Some(format!("{effect} held by safe mode, not sent"));
    } else {
        return None;
    };
    Some(format!("{effect} {verb} (attempt {n}): {why}"))
}

/// A decision's record: "Decided “order status” for orders (92 % sure)".
pub fn decision(p: &Value) -> String {
    let intent = p
        .get("intent")
        .and_then(Value::as_str)
        .unwrap_or("unknown intent");
    let mut line = format!("Decided “{}”", intent.replace('_', " "));
    if let Some(team) = p.get("team").and_then(Value::as_str) {
        line.push_str(&format!(" for {team}"));
    }
    if let Some(c) = p.get("confidence").and_then(Value::as_f64) {
        line.push_str(&format!(" ({:.0} % sure)", c * 100.0));
    }
    if p.get("safe_mode").and_then(Value::as_bool) == Some(true) {
        line.push_str(", in safe mode");
    }
    line
}

/// `s` with its first letter in upper case.
pub fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
