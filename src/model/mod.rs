//! Types shared by the UI and the server functions. Everything here compiles to wasm.

pub mod accounts;
pub mod conversations;
mod error;
pub mod events;
pub mod idempotency;
pub mod inbox;
pub mod measurements;
pub mod openapi;
pub mod switches;

pub use error::AppError;
