//! Users' rules with no I/O: a change to a user in words, for the history.

/// A change's audit record in words: "sam's role changed from viewer to operator".
pub fn change_in_words(p: &serde_json::Value, reason: &str) -> String {
    let name = p
        .get("user")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?");
    let role = |k: &str| {
        p.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    match p.get("change").and_then(serde_json::Value::as_str) {
        Some("add") => format!("User {name} added as {}", role("role").unwrap_or_default()),
        Some("set_role") => format!(
            "{name}'s role changed from {} to {}{reason}",
            role("from").unwrap_or_default(),
            role("to").unwrap_or_default()
        ),
        Some("disable") => format!("User {name} disabled{reason}"),
        Some("enable") => format!("User {name} enabled{reason}"),
        Some("reset_password") => format!("{name}'s password reset{reason}"),
        Some(other) => format!("User {name}: {}{reason}", other.replace('_', " ")),
        None => format!("User {name} changed{reason}"),
    }
}
