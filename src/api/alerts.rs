//! The alerts that fire now, for the Overview page.

use leptos::prelude::*;

use crate::model::alerts::FiringAlert;
use crate::model::AppError;

#[server]
pub async fn load_firing_alerts() -> Result<Vec<FiringAlert>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    ctx::state()?.alerts.firing().await
}
