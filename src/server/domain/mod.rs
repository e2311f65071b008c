//! The rules: plain functions over plain types, and the few paths that apply them.

pub mod accounts;
pub mod auth;
pub mod conversations;
pub mod event_views;
pub mod events;
pub mod fields;
pub mod idempotency;
pub mod idempotency_health;
pub mod inbox;
pub mod ingest;
pub mod kill_switches;
pub mod limits;
pub mod measurements;
pub mod redact;
pub mod sessions;
