//! The rules: plain functions over plain types, and the types identifiers are checked into
//! where they enter. Nothing here reads or writes DynamoDB, keeps state or waits; every
//! module is unit-tested without I/O. The workflows that apply them are `server::services`.

pub mod audit;
pub mod conversations;
pub mod events;
pub mod fields;
pub mod idempotency;
pub mod inbox;
pub mod limits;
pub mod measurements;
pub mod redact;
