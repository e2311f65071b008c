//! The rules: plain functions over plain types, and the few paths that apply them.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod conversations;
pub mod events;
pub mod fields;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod limits;
pub mod measurements;
pub mod redact;
pub mod users;
