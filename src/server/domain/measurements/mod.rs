//! Measurements' rules: the ids a device sends ([`ids`]).

pub mod ids;
