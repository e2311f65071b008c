//! `/healthz`: this console reaches DynamoDB. It needs no key.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use crate::server::contract::health::Health;
use crate::server::state::AppState;

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "console",
    responses(
        (status = 200, description = "DynamoDB answers", body = Health),
        (status = 503, description = "DynamoDB does not answer", body = Health)
    ),
    security(())
)]
pub(crate) async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    match tokio::time::timeout(Duration::from_secs(3), state.store.ping()).await {
        Ok(Ok(())) => (
            StatusCode::OK,
            Json(Health {
                status: "ok",
                dynamodb: "ok",
            }),
        ),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "health check: DynamoDB failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(Health {
                    status: "unavailable",
                    dynamodb: "error",
                }),
            )
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health {
                status: "unavailable",
                dynamodb: "timeout",
            }),
        ),
    }
}
