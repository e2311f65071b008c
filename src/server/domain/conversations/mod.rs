//! Conversations' rules: contact details ([`contact`]).

pub mod contact;
