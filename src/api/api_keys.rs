//! The API keys page's server functions: the keys, creating one (shown once) and revoking
//! one.

use leptos::prelude::*;

use crate::model::api_keys::ApiKeysView;
use crate::model::users::OneTime;
use crate::model::AppError;

/// The API keys page: the keys (never the keys themselves), the scopes a key may carry,
/// and a fresh key for the page's forms.
#[server]
pub async fn load_api_keys() -> Result<ApiKeysView, AppError> {
    use crate::model::api_keys::ApiScope;
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let keys = state.api_keys.api_keys().await?;
    Ok(ApiKeysView {
        keys: keys.iter().map(key_summary).collect(),
        scopes: ApiScope::ALL.map(|s| s.as_str().to_string()).to_vec(),
        form_key: crate::server::ids::random_hex(16),
    })
}

#[cfg(feature = "ssr")]
fn key_summary(
    k: &crate::server::store::api_keys::ApiKeyItem,
) -> crate::model::api_keys::ApiKeySummary {
    let iso =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let epoch = |s: i64| {
        chrono::DateTime::from_timestamp(s, 0)
            .map(iso)
            .unwrap_or_default()
    };
    crate::model::api_keys::ApiKeySummary {
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

/// Creates an API key with the ticked scopes (`scopes[<scope>]=on`), living `days` (the
/// default lifetime when empty); the key is shown once.
#[server]
pub async fn create_api_key(
    name: String,
    scopes: Option<std::collections::BTreeMap<String, String>>,
    days: String,
    idempotency_key: String,
) -> Result<OneTime, AppError> {
    use crate::api::submission::Submission;
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::api_keys::{check_new_key, parse_scopes};
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let ticked: Vec<String> = scopes.unwrap_or_default().into_keys().collect();
    let name = check_new_key(&name)?;
    let scopes = parse_scopes(&ticked)?;
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
            .text("scopes", &ticked.join(","))
            .text("days", &days.to_string()),
    };
    let done = format!("API key {name} was created ({}).", ticked.join(", "));
    super::users::once_with_secret(sub, done, || async {
        state
            .api_keys
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
    use crate::api::submission::{self, Submission};
    use crate::model::kill_switches::Reason;
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
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
    submission::once(&state, sub, |_| async {
        state
            .api_keys
            .revoke_api_key(&key_hash, &reason, &admin.name)
            .await?;
        Ok(serde_json::json!({ "ok": true }))
    })
    .await?;
    Ok("The API key is revoked: requests with it are refused from now on.".into())
}
