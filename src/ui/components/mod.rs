pub mod alert;
pub mod badge;

/// `2026-11-22 07:40 UTC`: the same on the server and in the browser, so hydration agrees.
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}
