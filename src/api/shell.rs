use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::accounts::CurrentUser;
use crate::model::AppError;

/// What the layout needs on every page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// `dev`, `staging` or `prod`.
    pub environment: String,
    pub user: Option<CurrentUser>,
}

#[server]
pub async fn load_shell_info() -> Result<ShellInfo, AppError> {
    use crate::server::ctx;
    let state = ctx::state()?;
    Ok(ShellInfo {
        environment: state.config.env.to_string(),
        user: ctx::current_user(),
    })
}
