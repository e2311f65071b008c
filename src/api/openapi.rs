use leptos::prelude::*;

use crate::model::openapi::ApiDoc;
use crate::model::AppError;

/// The REST API's reference, from its OpenAPI document.
#[server]
pub async fn load_api_doc() -> Result<ApiDoc, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    Ok(crate::server::http::openapi::summary())
}
