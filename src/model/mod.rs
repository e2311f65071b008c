//! Types shared by the UI and the server functions. Everything here compiles to wasm.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod conversations;
mod error;
pub mod events;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod measurements;
pub mod openapi;
pub mod outbox;
pub mod pages;
pub mod users;

pub use error::AppError;

/// `part` as a percentage of `whole`; `None` when `whole` is 0 (no rate to speak of).
pub fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}
