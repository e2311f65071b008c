pub mod idempotency;
pub mod kill_switches;
pub mod login;
pub mod not_built;
pub mod not_found;
pub mod overview;
pub mod users;
