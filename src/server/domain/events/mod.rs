//! Helpdesk events' rules: the helpdesk's ids ([`ids`]); an inbound event validated and
//! normalized, with its canonical form and key ([`incoming`]); the decision for it and the side effects it asks for
//! ([`rules`]); the conversation state it leaves ([`state`]); and the events' audit records
//! in words ([`sentences`]).

pub mod decision;
pub mod ids;
pub mod incoming;
pub mod rules;
pub mod sentences;
pub mod state;

pub use incoming::{collapse, parse, Channel, Incoming, CHANNELS, MAX_TEXT_BYTES};

#[cfg(test)]
mod tests;
