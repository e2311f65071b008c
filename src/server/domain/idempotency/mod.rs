//! Idempotency's rules: the keys clients send ([`sent_keys`]).

pub mod sent_keys;
