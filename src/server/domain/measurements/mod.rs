//! Measurements' rules: the ids a device sends ([`ids`]), and a measurement checked and
//! normalized into the payload its hash covers ([`payload`]).

pub mod ids;
pub mod payload;
