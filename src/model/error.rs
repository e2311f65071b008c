//! The one error type every server function returns. It crosses the wire as JSON, so it
//! carries only what is safe to show a user; the detail stays in the server's log.

use leptos::prelude::{FromServerFnError, ServerFnErrorErr};
use leptos::server_fn::codec::JsonEncoding;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// The input is wrong; `field` names the form field or JSON member.
    #[error("{message}")]
    Invalid { field: String, message: String },
    #[error("Please sign in to continue.")]
    Unauthenticated,
    #[error("Your role does not allow this.")]
    Forbidden,
    /// Not allowed, for the reason given.
    #[error("{0}")]
    Refused(String),
    #[error("Not found.")]
    NotFound,
    /// Someone else changed the thing first; the message says what it is now.
    #[error("{0}")]
    Conflict(String),
    /// The same request is still being processed; try again shortly.
    #[error("This request is still being processed; try again in {retry_after_secs} s.")]
    InProgress { retry_after_secs: u64 },
    #[error("Too many attempts. Try again later.")]
    TooManyRequests,
    /// Past a limit of the person's own (lookups by a typed phone number, email or id);
    /// the message says which limit and when it opens again.
    #[error("{message}")]
    Limited {
        message: String,
        retry_after_secs: u64,
    },
    /// The database is busy or out of reach for a moment; the same request later will do.
    #[error("The service is busy right now; try again in {retry_after_secs} s.")]
    Unavailable { retry_after_secs: u64 },
    /// The request, or what it would make, is larger than allowed; the message says how.
    #[error("{0}")]
    TooLarge(String),
    /// Something failed on our side. `reference` is in the server log next to the cause.
    #[error("Something went wrong on our side (reference {reference}).")]
    Internal { reference: String },
    #[error("{0}")]
    ServerFn(ServerFnErrorErr),
}

impl AppError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        AppError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            AppError::Invalid { .. } => 400,
            AppError::Unauthenticated => 401,
            AppError::Forbidden | AppError::Refused(_) => 403,
            AppError::NotFound => 404,
            AppError::Conflict(_) => 409,
            AppError::InProgress { .. } => 409,
            AppError::TooManyRequests | AppError::Limited { .. } => 429,
            AppError::Unavailable { .. } => 503,
            AppError::TooLarge(_) => 413,
            AppError::Internal { .. } => 500,
            AppError::ServerFn(e) => match e {
                ServerFnErrorErr::Args(_)
                | ServerFnErrorErr::MissingArg(_)
                | ServerFnErrorErr::UnsupportedRequestMethod(_) => 400,
                ServerFnErrorErr::Registration(_) => 404,
                _ => 500,
            },
        }
    }

    /// The field the error is about, when it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            AppError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_client_errors() {
        let e = AppError::from_server_fn_error(ServerFnErrorErr::MissingArg("reason".into()));
        assert_eq!(e.status(), 400);
        assert_eq!(
            AppError::invalid("reason", "A reason is required.").status(),
            400
        );
        assert_eq!(AppError::Forbidden.status(), 403);
    }

    #[test]
    fn round_trips_as_json() {
        let e = AppError::Conflict("changed by someone else".into());
        let back = AppError::de(e.ser());
        assert_eq!(back, e);
    }
}
