use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::accounts::CurrentUser;
use crate::model::switches::KillSwitches;
use crate::model::AppError;

/// What the layout needs on every page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// `dev`, `staging` or `prod`.
    pub environment: String,
    pub user: Option<CurrentUser>,
    /// The kill switches, for the banner every page shows while automation may act
    /// (signed-in users only; `None` when they could not be read).
    pub switches: Option<KillSwitches>,
}

#[server]
pub async fn load_shell_info() -> Result<ShellInfo, AppError> {
    use crate::server::ctx;
    let state = ctx::state()?;
    let user = ctx::current_user();
    // A page still renders when DynamoDB does not answer: the banner is left out then.
    let switches = match user {
        Some(_) => state.switches.load().await.ok(),
        None => None,
    };
    Ok(ShellInfo {
        environment: state.config.env.to_string(),
        user,
        switches,
    })
}
