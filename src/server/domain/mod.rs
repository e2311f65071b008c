//! The rules: plain functions over plain types, and the few paths that apply them.

pub mod accounts;
pub mod auth;
pub mod idempotency;
pub mod idempotency_health;
pub mod kill_switches;
pub mod redact;
pub mod sessions;
