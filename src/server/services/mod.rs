//! The services: each area's workflows that read and write (one service type per area on
//! `AppState`, its methods in the area's folder), applying the rules of `server::domain`.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod conversations;
pub mod events;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod measurements;
pub mod users;
