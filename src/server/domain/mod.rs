//! The rules: plain functions over plain types, and the types identifiers are checked into
//! where they enter. Nothing here reads or writes DynamoDB, keeps state or waits; every
//! module is unit-tested without I/O. The workflows that apply them are `server::services`.

/// What every checked text type shares: it reads as the `str` it holds (`Deref`), displays
/// as it, and debugs as it (so a fingerprint or a log of a struct holding it reads as it
/// did when it was a `String`). The type's own module says how one is made. Declared before
/// the modules, so every one of them can use it.
macro_rules! text_type {
    ($name:ident) => {
        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

pub mod audit;
pub mod conversations;
pub mod events;
pub mod fields;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod limits;
pub mod measurements;
pub mod redact;
pub mod users;
