//! The inbox's rules: its keys ([`keys`]).

pub mod keys;
