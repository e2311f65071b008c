use leptos::prelude::*;

use crate::model::accounts::{AccountsView, OneTime, UserSummary};
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

/// The Users page: users, API keys (never the keys themselves), the scopes a key may carry,
/// and a fresh key for the page's forms.
#[server]
pub async fn load_accounts() -> Result<AccountsView, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    use crate::server::domain::accounts::api_keys::SCOPES;
    ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let users = state.accounts.users().await?;
    let keys = state.accounts.api_keys().await?;
    Ok(AccountsView {
        users: users.iter().map(|u| u.summary()).collect(),
        keys: keys.iter().map(key_summary).collect(),
        scopes: SCOPES.iter().map(|s| s.to_string()).collect(),
        form_key: crate::server::ids::random_hex(16),
    })
}

#[cfg(feature = "ssr")]
fn key_summary(
    k: &crate::server::store::accounts::api_keys::ApiKeyItem,
) -> crate::model::accounts::ApiKeySummary {
    let iso =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let epoch = |s: i64| {
        chrono::DateTime::from_timestamp(s, 0)
            .map(iso)
            .unwrap_or_default()
    };
    crate::model::accounts::ApiKeySummary {
        key_hash: k.key_hash.clone(),
        name: k.name.clone(),
        scopes: k.scopes.clone(),
        created_at: iso(k.created_at),
        created_by: k.created_by.clone(),
        expires_at: epoch(k.expires_at),
        last_used_at: k.last_used_at.map(epoch),
        revoked_at: k.revoked_at.map(iso),
        revoked_by: k.revoked_by.clone(),
    }
}

/// Runs a form that makes a secret once (a double click, a refresh or a retry makes it
/// once); the secret is kept out of the stored answer, so only the submission that made it
/// shows it, and a repeat says it was shown.
#[cfg(feature = "ssr")]
async fn once_with_secret<F, Fut>(
    sub: crate::server::forms::Submission<'_>,
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
    crate::server::forms::once(&state, sub, |_| async move {
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
    use crate::model::accounts::{parse_user_name, Role};
    use crate::server::ctx;
    use crate::server::domain::accounts::passwords::new_password;
    use crate::server::domain::idempotency::KeyInputs;
    use crate::server::forms::Submission;
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
            .accounts
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
    use crate::model::accounts::Role;
    use crate::model::switches::Reason;
    use crate::server::ctx;
    use crate::server::domain::accounts::passwords::new_password;
    use crate::server::domain::accounts::Change;
    use crate::server::domain::idempotency::KeyInputs;
    use crate::server::forms::Submission;
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
            .accounts
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

/// Creates an API key with the ticked scopes (`scopes[<scope>]=on`), living `days` (the
/// default lifetime when empty); the key is shown once.
#[server]
pub async fn create_api_key(
    name: String,
    scopes: Option<std::collections::BTreeMap<String, String>>,
    days: String,
    idempotency_key: String,
) -> Result<OneTime, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    use crate::server::domain::accounts::api_keys::check_new_key;
    use crate::server::domain::idempotency::KeyInputs;
    use crate::server::forms::Submission;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let scopes: Vec<String> = scopes.unwrap_or_default().into_keys().collect();
    let name = check_new_key(&name, &scopes)?;
    let days = match days.trim() {
        "" => state.config.ttl.api_key_days,
        d => d
            .parse::<i64>()
            .ok()
            .filter(|d| (1..=3650).contains(d))
            .ok_or_else(|| AppError::invalid("days", "A key lives 1 to 3650 days."))?,
    };
    let sub = Submission {
        actor: &admin.name,
        scope: "accounts.create_api_key",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("name", &name)
            .text("scopes", &scopes.join(","))
            .text("days", &days.to_string()),
    };
    let done = format!("API key {name} was created ({}).", scopes.join(", "));
    once_with_secret(sub, done, || async {
        state
            .accounts
            .create_api_key(&name, &scopes, days, &admin.name)
            .await
    })
    .await
}

/// Revokes an API key at once, with a reason for the audit.
#[server]
pub async fn revoke_api_key(
    key_hash: String,
    reason: String,
    idempotency_key: String,
) -> Result<String, AppError> {
    use crate::model::accounts::Role;
    use crate::model::switches::Reason;
    use crate::server::ctx;
    use crate::server::domain::idempotency::KeyInputs;
    use crate::server::forms::{self, Submission};
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    Reason::parse(&reason)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "accounts.revoke_api_key",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("key", key_hash.trim())
            .text("reason", &reason),
    };
    forms::once(&state, sub, |_| async {
        state
            .accounts
            .revoke_api_key(&key_hash, &reason, &admin.name)
            .await?;
        Ok(serde_json::json!({ "ok": true }))
    })
    .await?;
    Ok("The API key is revoked: requests with it are refused from now on.".into())
}
