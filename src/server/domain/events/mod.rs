//! Inbound helpdesk events (docs/events.md). Pure rules: validation and normalization
//! (`incoming`), the canonical event key, and the deterministic decision (`rules`). The
//! I/O is the [`Events`] service's (`state.events`): the pipeline (`ingest`, `effects`)
//! and the pages' read models (`views`).

mod effects;
mod incoming;
pub mod ingest;
mod rules;
pub mod views;

pub use incoming::{collapse, parse, Incoming, CHANNELS, MAX_TEXT_BYTES};
pub use ingest::{ActionOutcome, Events, Faults, IngestError, Outcome};
pub use rules::{
    apply, decide, Decision, PlannedAction, Switches, ASK_ORDER_NUMBER, NEED_ORDER_NUMBER,
    ORDER_STATUS,
};

#[cfg(test)]
mod tests;
