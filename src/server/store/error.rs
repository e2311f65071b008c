//! What went wrong talking to DynamoDB, classified by what the caller can do about it.
//! AWS answers "not now" in three ways that a retry later fixes (a throttle, a transaction
//! holding the item, a 5xx or a lost connection); those become [`StoreError::Busy`], which
//! the API answers with 503 and `Retry-After`. Everything else is a bug or bad data.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

/// Why DynamoDB could not do it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// Over a partition's, an item's or the table's rate.
    Throttled,
    /// Another transaction held one of the items.
    Conflict,
    /// No answer, or a 5xx. For a write this is ambiguous: it may have been applied.
    Unreachable,
    /// A read from an index that is still being built (added to an existing table; AWS
    /// backfills it, which can take hours on a large table).
    IndexBuilding,
}

impl Busy {
    pub fn as_str(self) -> &'static str {
        match self {
            Busy::Throttled => "throttled",
            Busy::Conflict => "conflict",
            Busy::Unreachable => "unreachable",
            Busy::IndexBuilding => "index building",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("DynamoDB {op} could not be done now ({}): {detail}", cause.as_str())]
    Busy {
        op: &'static str,
        cause: Busy,
        detail: String,
    },
    #[error("DynamoDB {op} failed: {detail}")]
    Request { op: &'static str, detail: String },
    #[error("an item in {table} does not have the shape we write: {detail}")]
    Corrupt { table: String, detail: String },
    #[error("the cursor is not one this page handed out")]
    BadCursor,
    #[error("table {table}: {detail}")]
    Schema { table: String, detail: String },
}

/// Error codes DynamoDB (and the AWS SDKs) use for "over the rate".
const THROTTLED: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "Throttling",
];

/// Error codes for "a transaction is in the way".
const CONFLICT: &[&str] = &[
    "TransactionConflictException",
    "TransactionInProgressException",
];

/// Error codes for DynamoDB's own failures.
const SERVER: &[&str] = &[
    "InternalServerError",
    "ServiceUnavailable",
    "InternalFailure",
];

/// What a service error's code says, if it says "not now".
pub(crate) fn busy_code(code: Option<&str>) -> Option<Busy> {
    match code {
        Some(c) if THROTTLED.contains(&c) => Some(Busy::Throttled),
        Some(c) if CONFLICT.contains(&c) => Some(Busy::Conflict),
        Some(c) if SERVER.contains(&c) => Some(Busy::Unreachable),
        // An error without a code is one the service never answered (a timeout, a reset
        // connection, a response that could not be read).
        None => Some(Busy::Unreachable),
        Some(_) => None,
    }
}

/// What an error says, code and message: `busy_code`, and a read from an index still
/// being built (a `ValidationException` that a retry later fixes).
fn busy_error(e: &impl ProvideErrorMetadata) -> Option<Busy> {
    let backfilling = e.code() == Some("ValidationException")
        && e.message().is_some_and(|m| m.contains("backfilling"));
    if backfilling {
        Some(Busy::IndexBuilding)
    } else {
        busy_code(e.code())
    }
}

impl StoreError {
    /// Maps a failed request, sorting "not now" from the rest.
    pub(crate) fn request<E, R>(op: &'static str) -> impl FnOnce(SdkError<E, R>) -> StoreError
    where
        E: std::error::Error + ProvideErrorMetadata + 'static,
        R: std::fmt::Debug,
    {
        move |e| {
            let detail = DisplayErrorContext(&e).to_string();
            let cause = match &e {
                SdkError::ServiceError(s) => busy_error(s.err()),
                SdkError::ConstructionFailure(_) => None,
                _ => Some(Busy::Unreachable),
            };
            match cause {
                Some(cause) => StoreError::Busy { op, cause, detail },
                None => StoreError::Request { op, detail },
            }
        }
    }

    /// A service error (after `into_service_error`) the caller had no use for.
    pub(crate) fn service(
        op: &'static str,
        e: &(impl std::error::Error + ProvideErrorMetadata + 'static),
    ) -> StoreError {
        let detail = DisplayErrorContext(e).to_string();
        match busy_error(e) {
            Some(cause) => StoreError::Busy { op, cause, detail },
            None => StoreError::Request { op, detail },
        }
    }

    pub(crate) fn corrupt(table: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            table: table.to_string(),
            detail: e.to_string(),
        }
    }

    /// "Not now" of this kind.
    pub fn busy(&self) -> Option<Busy> {
        match self {
            StoreError::Busy { cause, .. } => Some(*cause),
            _ => None,
        }
    }

    /// A throttle or a conflict: DynamoDB did nothing, so doing it again is safe.
    pub fn is_retryable(&self) -> bool {
        matches!(self.busy(), Some(Busy::Throttled | Busy::Conflict))
    }

    /// The DynamoDB operation that failed, when it is known.
    pub fn operation(&self) -> Option<&'static str> {
        match self {
            StoreError::Busy { op, .. } | StoreError::Request { op, .. } => Some(op),
            _ => None,
        }
    }
}

/// What each storage failure means to a caller: a forged or stale cursor is a 400, a busy
/// table a 503 with `Retry-After`, anything else a 500 with a reference.
impl From<StoreError> for crate::model::AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::BadCursor => crate::model::AppError::invalid(
                "cursor",
                "This page link is not valid any more; start again from the first page.",
            ),
            StoreError::Busy { op, cause, detail } => {
                tracing::warn!(op, cause = cause.as_str(), %detail, "DynamoDB busy; answered 503");
                // An index being built is minutes away, not a moment.
                let retry_after_secs = if cause == Busy::IndexBuilding { 60 } else { 1 };
                crate::model::AppError::Unavailable { retry_after_secs }
            }
            other => crate::server::telemetry::internal(&other),
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;

    use super::*;
    use crate::model::AppError;

    fn answer(code: &str, message: &str) -> ErrorMetadata {
        ErrorMetadata::builder().code(code).message(message).build()
    }

    #[test]
    fn a_read_from_an_index_being_built_is_busy_for_a_minute_and_other_refusals_are_not() {
        let backfilling = answer(
            "ValidationException",
            "Cannot read from backfilling global secondary index: correlation-index",
        );
        assert_eq!(busy_error(&backfilling), Some(Busy::IndexBuilding));
        let invalid = answer(
            "ValidationException",
            "One or more parameter values were invalid",
        );
        assert_eq!(busy_error(&invalid), None);
        assert_eq!(
            busy_error(&answer("ThrottlingException", "Rate exceeded")),
            Some(Busy::Throttled)
        );
        let app = AppError::from(StoreError::Busy {
            op: "Query",
            cause: Busy::IndexBuilding,
            detail: String::new(),
        });
        assert!(
            matches!(
                app,
                AppError::Unavailable {
                    retry_after_secs: 60
                }
            ),
            "{app:?}"
        );
    }
}
