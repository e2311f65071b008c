//! The audit trail's rules: the day and time range a reader asks for ([`window`]).

pub mod window;
