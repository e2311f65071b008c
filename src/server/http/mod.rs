//! HTTP outside Leptos: the REST API, sign-in/out, health, middleware.

pub mod api;
pub mod conversations;
pub mod find;
pub mod idempotency;
pub mod inbox;
pub mod login;
pub mod measurements;
pub mod middleware;
pub mod openapi;
pub mod problem;
