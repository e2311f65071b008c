//! The console's pages, by path: what the router serves and where links may lead.

/// The path of every page inside the console's frame (the router in `app.rs` serves each;
/// a test holds the two together). A sign-in goes on only to one of these.
pub const PAGE_PATHS: [&str; 15] = [
    "/",
    "/kill-switches",
    "/conversations",
    "/conversations/view",
    "/events",
    "/events/conversation",
    "/outbox",
    "/audit",
    "/inbox",
    "/inbox/user",
    "/idempotency",
    "/idempotency/key",
    "/measurements",
    "/users",
    "/api",
];
