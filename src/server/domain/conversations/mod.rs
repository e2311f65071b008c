//! Conversations' rules: a conversation's table key ([`ids`]) and contact details
//! ([`contact`]).

pub mod contact;
pub mod ids;
