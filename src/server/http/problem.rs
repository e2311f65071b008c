//! `application/problem+json` (RFC 9457) for every REST error.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use utoipa::{ToResponse, ToSchema};

use crate::model::AppError;

#[derive(Debug)]
pub struct Problem {
    pub status: StatusCode,
    /// Short, stable, machine-readable: `invalid-request`, `unauthorized`, ...
    pub kind: &'static str,
    pub title: &'static str,
    pub detail: String,
    /// Extension members (`field`, `retry_after`, ...).
    pub extra: Map<String, Value>,
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl Problem {
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Problem {
            status,
            kind,
            title,
            detail: detail.into(),
            extra: Map::new(),
            headers: Vec::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    pub fn header(mut self, name: header::HeaderName, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.push((name, v));
        }
        self
    }

    pub fn invalid(field: &str, detail: impl Into<String>) -> Self {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "Invalid request",
            detail,
        )
        .with("field", field)
    }

    pub fn unauthorized(detail: &str) -> Self {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Unauthorized",
            detail,
        )
        .header(header::WWW_AUTHENTICATE, "Bearer")
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Problem::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden", detail)
    }
}

impl From<AppError> for Problem {
    fn from(e: AppError) -> Self {
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let detail = e.to_string();
        match e {
            AppError::Invalid { field, .. } => Problem::invalid(&field, detail),
            AppError::Unauthenticated => Problem::unauthorized(&detail),
            AppError::Forbidden | AppError::Refused(_) => Problem::forbidden(detail),
            AppError::NotFound => Problem::new(status, "not-found", "Not found", detail),
            AppError::Conflict(_) => Problem::new(status, "conflict", "Conflict", detail),
            AppError::InProgress { retry_after_secs } => {
                Problem::new(status, "in-progress", "Request in progress", detail)
                    .header(header::RETRY_AFTER, &retry_after_secs.to_string())
                    .with("retry_after", retry_after_secs)
            }
            AppError::Unavailable { retry_after_secs } => {
                Problem::new(status, "unavailable", "Service unavailable", detail)
                    .header(header::RETRY_AFTER, &retry_after_secs.to_string())
                    .with("retry_after", retry_after_secs)
            }
            AppError::TooManyRequests => {
                Problem::new(status, "too-many-requests", "Too many requests", detail)
            }
            AppError::Limited {
                retry_after_secs, ..
            } => Problem::new(status, "too-many-requests", "Too many requests", detail)
                .header(header::RETRY_AFTER, &retry_after_secs.to_string())
                .with("retry_after", retry_after_secs),
            AppError::TooLarge(_) => {
                Problem::new(status, "payload-too-large", "Payload too large", detail)
            }
            AppError::Internal { reference } => {
                Problem::new(status, "internal", "Internal error", detail)
                    .with("reference", reference)
            }
            AppError::ServerFn(_) => {
                Problem::new(status, "invalid-request", "Invalid request", detail)
            }
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert(
            "type".into(),
            json!(format!("urn:ops-console:problem:{}", self.kind)),
        );
        body.insert("title".into(), json!(self.title));
        body.insert("status".into(), json!(self.status.as_u16()));
        body.insert("detail".into(), json!(self.detail));
        body.extend(self.extra);
        let mut res = (self.status, Value::Object(body).to_string()).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        for (name, value) in self.headers {
            res.headers_mut().insert(name, value);
        }
        res
    }
}

impl From<crate::server::store::StoreError> for Problem {
    fn from(e: crate::server::store::StoreError) -> Self {
        AppError::from(e).into()
    }
}

/// `application/problem+json` (RFC 9457); `field` names the bad input.
#[derive(ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDoc {
    #[schema(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub field: Option<String>,
}

/// Every error answer.
#[derive(ToResponse)]
#[response(
    description = "A problem (RFC 9457)",
    content_type = "application/problem+json"
)]
pub struct ProblemResponse(pub ProblemDoc);
