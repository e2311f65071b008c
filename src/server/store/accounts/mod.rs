//! Console users, their sessions, sign-in attempts, and machine clients' API keys.

pub mod api_keys;
pub mod login_attempts;
pub mod sessions;
pub mod users;
