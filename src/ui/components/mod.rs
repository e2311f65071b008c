//! Pieces two or more pages share. A page never imports another page.

pub mod alert;
pub mod async_section;
pub mod attempts;
pub mod audit_table;
pub mod badge;
pub mod form;
pub mod links;
pub mod moment;
pub mod pager;
pub mod post_form;
pub mod scope_card;
pub mod scope_table;
pub mod table;

/// `2026-11-22 07:40 UTC`: the same on the server and in the browser, so hydration agrees.
pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}
