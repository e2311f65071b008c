pub mod alert;
pub mod attempts;
pub mod audit_table;
pub mod badge;
pub mod links;
pub mod scope_card;

/// `2026-11-22 07:40 UTC`: the same on the server and in the browser, so hydration agrees.
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}
