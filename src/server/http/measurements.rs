//! The measurements API (docs/measurements.md): one measurement or a batch, idempotent per
//! measurement id and per request (`X-Idempotency-Key`), ordered per user, every attempt
//! audited. Also the console's CSV export of the attempt audit (`measurements/csv.rs`).

mod csv;

use crate::model::api_keys::ApiScope;
use crate::server::services::idempotency::is_correlation_id;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::extract::{read_body, JsonBody, MeasurementsWrite, Scoped};
use super::idempotency;
use super::problem::Problem;
use crate::model::AppError;
use crate::server::contract::from_json;
use crate::server::contract::measurements::{
    BatchReport, Measurement, MeasurementBatch, MeasurementResult,
};
use crate::server::domain::measurements::payload::parse;
use crate::server::ids::random_hex;
use crate::server::services::measurements::batch::MAX_BATCH;
use crate::server::services::measurements::{Context, Outcome};
use crate::server::state::AppState;

const ADMIN: ApiScope = ApiScope::MeasurementsAdmin;

/// The idempotency layer wraps the methods each route serves (a method it does not serve
/// is a 405 before anything is claimed).
pub fn routes(state: &AppState) -> Router<AppState> {
    let keyed = || from_fn_with_state(state.clone(), idempotency::optional_key);
    Router::new()
        .route("/api/v1/measurements", post(one).route_layer(keyed()))
        .route(
            "/api/v1/measurements/batch",
            post(many).route_layer(keyed()),
        )
}

/// The console's CSV export (signed-in staff; pages' guard checks the session).
pub fn pages() -> Router<AppState> {
    Router::new().route("/measurements/audit.csv", get(csv::audit_csv))
}

fn context(auth: &Scoped<MeasurementsWrite>, headers: &HeaderMap) -> Result<Context, Problem> {
    let correlation_id = match headers.get("x-correlation-id").map(|v| v.to_str()) {
        None => random_hex(8),
        Some(Ok(c)) if is_correlation_id(c) => c.to_string(),
        Some(_) => {
            return Err(Problem::invalid(
                "X-Correlation-Id",
                "X-Correlation-Id is 1 to 64 visible ASCII characters.",
            ))
        }
    };
    let force_override = match headers.get("x-force-override").map(|v| v.to_str()) {
        None => false,
        Some(Ok(v)) if v.eq_ignore_ascii_case("true") => true,
        Some(Ok(v)) if v.eq_ignore_ascii_case("false") => false,
        Some(_) => {
            return Err(Problem::invalid(
                "X-Force-Override",
                "X-Force-Override is true or false.",
            ))
        }
    };
    Ok(Context {
        correlation_id,
        force_override,
        admin: auth.principal.has_scope(ADMIN),
    })
}

/// Headers every answer carries: the correlation id, and a warning without a request key.
fn decorate(mut res: Response, ctx: &Context, headers: &HeaderMap) -> Response {
    if let Ok(v) = HeaderValue::from_str(&ctx.correlation_id) {
        res.headers_mut().insert("x-correlation-id", v);
    }
    if !headers.contains_key(idempotency::HEADER) && !headers.contains_key(idempotency::X_HEADER) {
        res.headers_mut().insert(
            header::WARNING,
            HeaderValue::from_static(
                "199 - \"No X-Idempotency-Key: a retried request is deduplicated by measurement_id only\"",
            ),
        );
    }
    res
}

fn answer(outcome: Outcome, user: &str, override_allowed: bool) -> Response {
    match outcome {
        Outcome::Accepted { result, .. } => (StatusCode::CREATED, Json(result)).into_response(),
        Outcome::Duplicate { result } => {
            let mut res = (StatusCode::OK, Json(result.clone())).into_response();
            if let Ok(v) = HeaderValue::from_str(&result.measurement_id) {
                res.headers_mut().insert("x-duplicate-of", v);
            }
            res
        }
        Outcome::Conflict { original, diff } => Problem::new(
            StatusCode::CONFLICT,
            "duplicate-measurement",
            "Duplicate measurement",
            "Measurement already exists with different payload",
        )
        .with("error", "DuplicateMeasurement")
        .with("message", "Measurement already exists with different payload")
        .with("measurement_id", original.measurement_id.clone())
        .with("original_result", serde_json::to_value(&original).unwrap_or_default())
        .with("payload_diff", diff)
        .with(
            "resolution",
            "Send a new measurement_id for a new measurement, or the original payload to get the original result.",
        )
        .into_response(),
        Outcome::OutOfOrder {
            last_accepted,
            submitted,
            accepted_from,
        } => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "out-of-order-timestamp",
            "Out-of-order timestamp",
            "Timestamp older than last accepted",
        )
        .with("error", "OutOfOrderTimestamp")
        .with("message", "Timestamp older than last accepted")
        .with("last_accepted", last_accepted)
        .with("submitted", submitted)
        .with("user_id", user)
        .with("accepted_from", accepted_from.clone())
        .with(
            "resolution",
            format!(
                "Resubmit with a timestamp at or after {accepted_from} if this is a new reading, \
                 or have an admin store it as it is with X-Force-Override: true{}.",
                if override_allowed {
                    " (needs an API key with measurements:admin)"
                } else {
                    " (turned off here: ALLOW_TIMESTAMP_OVERRIDE)"
                }
            ),
        )
        .with(
            "override",
            json!({"header": "X-Force-Override: true", "scope": ADMIN.as_str(), "allowed": override_allowed}),
        )
        .into_response(),
    }
}

#[utoipa::path(
    post,
    path = "/api/v1/measurements",
    tag = "measurements",
    request_body(content = Measurement, content_type = "application/json"),
    params(
        ("X-Idempotency-Key" = Option<String>, Header, description = "Request-level idempotency (24 h); echoed back"),
        ("X-Correlation-Id" = Option<String>, Header),
        ("X-Force-Override" = Option<String>, Header, description = "true: store an older measurement (measurements:admin, ALLOW_TIMESTAMP_OVERRIDE)")
    ),
    responses(
        (status = 201, description = "Created", body = MeasurementResult),
        (status = 200, description = "The same measurement again: the first answer (X-Duplicate-Of)", body = MeasurementResult)
    ),
    security(("api_key" = ["measurements:write"])),
)]
pub(crate) async fn one(
    State(state): State<AppState>,
    auth: Scoped<MeasurementsWrite>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Response, Problem> {
    let ctx = context(&auth, &headers)?;
    let now = state.clock.now();
    let m = &state.measurements;
    // Read as JSON first: an invalid measurement is audited with what it said.
    let v = read_body(body, 64 * 1024).await?;
    let v = match from_json::<Value>(&v) {
        Ok(v) => v,
        Err(e) => {
            m.record_invalid(&Value::Null, &e, &ctx, now).await?;
            return Err(e.into());
        }
    };
    let s = match parse(&v, now) {
        Ok(s) => s,
        Err(e) => {
            m.record_invalid(&v, &e, &ctx, now).await?;
            return Ok(decorate(Problem::from(e).into_response(), &ctx, &headers));
        }
    };
    let outcome = m.submit(&s, &ctx, now).await?;
    tracing::info!(outcome = outcome.name(), correlation = %ctx.correlation_id, "measurement");
    let override_allowed = m.settings.allow_timestamp_override;
    Ok(decorate(
        answer(outcome, &s.user_id, override_allowed),
        &ctx,
        &headers,
    ))
}

#[utoipa::path(
    post,
    path = "/api/v1/measurements/batch",
    tag = "measurements",
    request_body(content = MeasurementBatch, content_type = "application/json"),
    params(
        ("X-Idempotency-Key" = Option<String>, Header),
        ("X-Correlation-Id" = Option<String>, Header)
    ),
    responses(
        (status = 200, description = "OK", body = BatchReport)
    ),
    security(("api_key" = ["measurements:write"])),
)]
pub(crate) async fn many(
    State(state): State<AppState>,
    auth: Scoped<MeasurementsWrite>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<MeasurementBatch, { 1024 * 1024 }>,
) -> Result<Response, Problem> {
    let ctx = context(&auth, &headers)?;
    let items = &body.measurements;
    if items.is_empty() {
        return Err(Problem::invalid("measurements", "measurements is empty."));
    }
    if items.len() > MAX_BATCH {
        return Err(Problem::from(AppError::TooLarge(format!(
            "A batch holds at most {MAX_BATCH} measurements; this one has {}.",
            items.len()
        )))
        .with("limit", MAX_BATCH));
    }
    let report = state
        .measurements
        .batch(items, &ctx, state.clock.now())
        .await?;
    tracing::info!(items = items.len(), correlation = %ctx.correlation_id, "measurement batch");
    Ok(decorate(Json(report).into_response(), &ctx, &headers))
}
