//! The console's pages, by path: what the router serves and where links may lead.

/// The path of every page inside the console's frame (the router in `app.rs` serves each;
/// a test holds the two together). A sign-in goes on only to one of these.
pub const PAGE_PATHS: [&str; 20] = [
    "/",
    "/kill-switches",
    "/kill-switches/automation",
    "/kill-switches/approvals",
    "/conversations",
    "/conversations/view",
    "/events",
    "/events/conversation",
    "/outbox",
    "/outbox/receiver",
    "/audit",
    "/inbox",
    "/inbox/user",
    "/inbox/settings",
    "/idempotency",
    "/idempotency/key",
    "/measurements",
    "/users",
    "/api-keys",
    "/api",
];

/// A query value, percent-encoded (everything but letters, digits and `-_.~`).
pub fn query_value(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
