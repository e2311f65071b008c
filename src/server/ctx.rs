//! What a server function or page render knows about its request: the app state and the
//! signed-in user (put on the request by the session middleware).

use axum::http::request::Parts;
use leptos::prelude::use_context;

use crate::model::users::{CurrentUser, Role};
use crate::model::AppError;
use crate::server::state::AppState;
use crate::server::telemetry::internal;

pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| internal(&"AppState missing from the request context"))
}

pub fn current_user() -> Option<CurrentUser> {
    use_context::<Parts>().and_then(|p| p.extensions.get::<CurrentUser>().cloned())
}

/// The signed-in user, if their role allows `needed`: 401 without a session, 403 with too
/// small a role. Every server function starts here.
pub fn require(needed: Role) -> Result<CurrentUser, AppError> {
    let user = current_user().ok_or(AppError::Unauthenticated)?;
    if user.role.allows(needed) {
        Ok(user)
    } else {
        Err(AppError::Forbidden)
    }
}
