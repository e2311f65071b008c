//! HTTP outside Leptos: the REST API for machine clients (bearer API keys with scopes,
//! problem+json errors), sign-in/out, the `Idempotency-Key` layer, middleware. One file
//! per area; the router is here.

pub mod conversations;
pub mod events;
pub mod extract;
pub mod find;
pub mod health;
pub mod idempotency;
pub mod inbox;
pub mod kill_switches;
pub mod measurements;
pub mod middleware;
pub mod openapi;
pub mod problem;
pub mod receiver;
pub mod users;

use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;

use crate::server::state::AppState;
use problem::Problem;

/// Liveness: what a load balancer's health check asks (`deploy::service`, the Dockerfile).
pub const HEALTH_PATH: &str = "/healthz";

/// Every route outside Leptos: health, the OpenAPI document, sign-in/out, the console's
/// searches and CSV export, and the REST API (`/api/v1/...`), each behind its idempotency
/// layer where it has one.
pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route(HEALTH_PATH, get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/api/openapi.json", get(openapi::serve))
        .route("/login", post(users::login))
        .route("/logout", post(users::logout))
        .route("/find", post(find::find))
        .merge(measurements::pages())
        .route("/api/v1/whoami", get(users::whoami))
        .route(
            "/api/v1/kill-switches",
            get(kill_switches::kill_switches)
                .post(kill_switches::change_kill_switch)
                .route_layer(from_fn_with_state(state.clone(), idempotency::require_key)),
        )
        .route(
            "/api/v1/kill-switches/approvals",
            get(kill_switches::kill_switch_approvals),
        )
        .route(
            "/api/v1/kill-switches/schedule",
            get(kill_switches::kill_switch_schedule),
        )
        .route(
            "/api/v1/kill-switches/schedule/cancel",
            post(kill_switches::cancel_scheduled_change)
                .route_layer(from_fn_with_state(state.clone(), idempotency::require_key)),
        )
        .route(
            "/api/v1/kill-switches/trips",
            get(kill_switches::kill_switch_trips),
        )
        .route(
            "/api/v1/kill-switches/triggers",
            post(kill_switches::trigger_by_header),
        )
        .route(
            "/api/v1/kill-switches/triggers/{secret}",
            post(kill_switches::trigger),
        )
        .route("/api/v1/events", post(events::post_event))
        .merge(conversations::routes(state))
        .merge(inbox::routes(state))
        .merge(measurements::routes(state))
        .merge(receiver::routes(state))
        .route("/api/v1/{*rest}", axum::routing::any(not_found))
}

async fn not_found() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such endpoint.",
    )
}
