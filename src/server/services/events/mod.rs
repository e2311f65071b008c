//! Inbound helpdesk events (docs/events.md). Pure rules: validation and normalization
//! (`incoming`), the canonical event key, and the deterministic decision (`rules`). The
//! I/O is the [`Events`] service's (`state.events`): the pipeline (`ingest`, `queue`), the
//! dispatcher that delivers from the outbox (`dispatch`), the receiver's settings
//! (`receiver`, `limits`), the operators' outbox moves (`outbox`) and the pages' read models
//! (`pages`).

mod answers;
pub mod breaker;
pub mod controls;
pub mod dispatch;
mod due_parts;
mod failure_rate;
pub mod health;
pub mod ingest;
mod jobs;
mod legacy;
pub mod limits;
mod order;
pub mod outbox;
pub mod pages;
pub mod pause;
mod queue;
mod rate;
pub mod receiver;
pub mod resend;
pub mod round;
pub mod routes;
mod slots;
mod timeline;

pub use ingest::{ActionOutcome, Events, IngestError, Outcome};
