//! The audit trail's rules: the day and time range a reader asks for ([`window`]), and
//! what the conversation field may name ([`partition`]).

pub mod partition;
pub mod window;
