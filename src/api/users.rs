//! The Users page's server functions: the users, their roles, disabling, new users and
//! password resets (a one-time password, shown once).

use leptos::prelude::*;

use crate::model::users::{OneTime, UserSummary, UsersView};
use crate::model::AppError;

#[server]
pub async fn list_users() -> Result<Vec<UserSummary>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let all = state.users.users().await?;
    Ok(all.iter().map(|u| u.summary()).collect())
}

/// Changes a user's role (`viewer`, `operator`, `admin`), with a reason for the audit.
#[server]
pub async fn set_user_role(name: String, role: String, reason: String) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::users::Change;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let role = Role::parse(&role)?;
    state
        .users
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
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::users::Change;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let (change, done) = match disabled.as_str() {
        "true" => (Change::Disable, "disabled"),
        "false" => (Change::Enable, "enabled"),
        _ => return Err(AppError::invalid("disabled", "Expected true or false.")),
    };
    state
        .users
        .change_user(&name, change, &reason, &admin.name)
        .await?;
    Ok(format!("{name} is {done}."))
}

/// The Users page: the users and a fresh key for the page's forms.
#[server]
pub async fn load_users() -> Result<UsersView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let users = state.users.users().await?;
    Ok(UsersView {
        users: users.iter().map(|u| u.summary()).collect(),
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Runs a form that makes a secret once (a double click, a refresh or a retry makes it
/// once); the secret is kept out of the stored answer, so only the submission that made it
/// shows it, and a repeat says it was shown.
#[cfg(feature = "ssr")]
pub(crate) async fn once_with_secret<F, Fut>(
    sub: crate::api::submission::Submission<'_>,
    done: String,
    op: F,
) -> Result<OneTime, AppError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<String, AppError>>,
{
    use std::sync::{Arc, Mutex};
    let state = crate::server::ctx::state()?;
    let made: Arc<Mutex<Option<String>>> = Arc::default();
    let cell = made.clone();
    crate::api::submission::once(&state, sub, |_| async move {
        let secret = op().await?;
        if let Ok(mut c) = cell.lock() {
            *c = Some(secret);
        }
        Ok(serde_json::json!({ "ok": true }))
    })
    .await?;
    let secret = made.lock().ok().and_then(|mut c| c.take());
    Ok(match secret {
        Some(secret) => OneTime {
            message: done,
            secret: Some(secret),
        },
        None => OneTime {
            message: format!("{done} It was shown once, to the first submission of this form."),
            secret: None,
        },
    })
}

/// Adds a console user with a one-time password, shown once to the admin who adds them.
#[server]
pub async fn add_user(
    name: String,
    role: String,
    idempotency_key: String,
) -> Result<OneTime, AppError> {
    use crate::api::submission::Submission;
    use crate::model::users::{parse_user_name, Role};
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
    use crate::server::services::users::passwords::new_password;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let name = parse_user_name(&name)?;
    let role = Role::parse(&role).map_err(|_| AppError::invalid("role", "Choose a role."))?;
    let sub = Submission {
        actor: &admin.name,
        scope: "accounts.add_user",
        form_key: &idempotency_key,
        values: KeyInputs::new().id("name", &name).id("role", role.as_str()),
    };
    let done = format!("{name} was added as {role}.");
    once_with_secret(sub, done, || async {
        let password = new_password();
        state
            .users
            .add_user(&name, role, &password, &admin.name)
            .await?;
        Ok(password)
    })
    .await
}

/// Gives a user a new one-time password (their sessions end), with a reason for the audit.
#[server]
pub async fn reset_password(
    name: String,
    reason: String,
    idempotency_key: String,
) -> Result<OneTime, AppError> {
    use crate::api::submission::Submission;
    use crate::model::kill_switches::Reason;
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
    use crate::server::services::users::passwords::new_password;
    use crate::server::services::users::Change;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    Reason::parse(&reason)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "accounts.reset_password",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("name", name.trim())
            .text("reason", &reason),
    };
    let done = format!("{} has a new password; their sessions ended.", name.trim());
    once_with_secret(sub, done, || async {
        let password = new_password();
        state
            .users
            .change_user(
                &name,
                Change::ResetPassword(password.clone()),
                &reason,
                &admin.name,
            )
            .await?;
        Ok(password)
    })
    .await
}
