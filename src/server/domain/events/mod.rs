//! Helpdesk events' rules: an inbound event validated and normalized, with its canonical
//! form and key ([`incoming`]), and the events' audit records in words ([`sentences`]).

pub mod incoming;
pub mod sentences;

pub use incoming::{collapse, parse, Channel, Incoming, CHANNELS, MAX_TEXT_BYTES};
