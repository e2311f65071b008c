use leptos::prelude::*;

use crate::model::accounts::UserSummary;
use crate::model::AppError;

#[server]
pub async fn list_users() -> Result<Vec<UserSummary>, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let all = state.accounts.users().await?;
    Ok(all.iter().map(|u| u.summary()).collect())
}

/// Changes a user's role (`viewer`, `operator`, `admin`), with a reason for the audit.
#[server]
pub async fn set_user_role(name: String, role: String, reason: String) -> Result<String, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    use crate::server::domain::accounts::Change;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let role = Role::parse(&role)?;
    state
        .accounts
        .change_user(&name, Change::SetRole(role), &reason, &admin.name)
        .await?;
    Ok(format!("{name} is now {role}."))
}

/// Disables (`disabled=true`) or re-enables a user, with a reason for the audit.
#[server]
pub async fn set_user_disabled(
    name: String,
    disabled: String,
    reason: String,
) -> Result<String, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    use crate::server::domain::accounts::Change;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let (change, done) = match disabled.as_str() {
        "true" => (Change::Disable, "disabled"),
        "false" => (Change::Enable, "enabled"),
        _ => return Err(AppError::invalid("disabled", "Expected true or false.")),
    };
    state
        .accounts
        .change_user(&name, change, &reason, &admin.name)
        .await?;
    Ok(format!("{name} is {done}."))
}
