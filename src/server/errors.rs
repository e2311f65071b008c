//! Where server-side failures become what a user may see: the cause goes to the log under
//! a short reference, the user gets the reference.

use crate::model::AppError;
use crate::server::domain::kill_switches::ChangeError;
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::store::{Busy, StoreError};

pub fn internal(cause: &dyn std::fmt::Display) -> AppError {
    let reference = random_hex(4);
    // A cause can quote the data it choked on (a decoding error names the value).
    let cause = redact(&cause.to_string());
    tracing::error!(%reference, error = %cause, "request failed");
    AppError::Internal { reference }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::BadCursor => AppError::invalid(
                "cursor",
                "This page link is not valid any more; start again from the first page.",
            ),
            StoreError::Busy { op, cause, detail } => {
                tracing::warn!(op, cause = cause.as_str(), %detail, "DynamoDB busy; answered 503");
                // An index being built is minutes away, not a moment.
                let retry_after_secs = if cause == Busy::IndexBuilding { 60 } else { 1 };
                AppError::Unavailable { retry_after_secs }
            }
            other => internal(&other),
        }
    }
}

impl From<ChangeError> for AppError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::App(e) => e,
            ChangeError::Store(e) => e.into(),
        }
    }
}
