//! Server functions: thin. Each takes the app state, checks the caller, parses input into
//! domain types, calls the domain, and maps the error.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod conversations;
pub mod events;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod measurements;
pub mod openapi;
pub mod outbox;
pub mod resend;
pub mod shell;
#[cfg(feature = "ssr")]
pub mod submission;
pub mod users;
