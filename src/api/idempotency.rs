use leptos::prelude::*;

use crate::model::idempotency::{Alert, Health, KeyPage, KeySummary};
use crate::model::AppError;

/// Per-scope rates and alerts over `window` (`24h` or `7d`).
#[server]
pub async fn load_idempotency_health(window: String) -> Result<Health, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    state.idempotency.health(&window).await
}

/// Breached alerts of the last 24 h, for Overview: (scope, alert).
#[server]
pub async fn idempotency_alerts() -> Result<Vec<(String, Alert)>, AppError> {
    let health = load_idempotency_health("24h".into()).await?;
    Ok(health
        .scopes
        .into_iter()
        .flat_map(|s| {
            let scope = s.scope;
            s.alerts
                .into_iter()
                .filter(|a| a.breached)
                .map(move |a| (scope.clone(), a))
        })
        .collect())
}

/// `stuck` or `failed` keys, paged.
#[server]
pub async fn list_idempotency_keys(
    which: String,
    cursor: Option<String>,
) -> Result<KeyPage, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    state
        .idempotency
        .watched_keys(&which, cursor.as_deref())
        .await
}

/// One key with its stored answer, redacted for viewers.
#[server]
pub async fn load_idempotency_key(id: String) -> Result<KeySummary, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::health;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let api_keys: Vec<(String, String)> = state
        .api_keys
        .api_keys()
        .await?
        .into_iter()
        .map(|k| (k.key_hash, k.name))
        .collect();
    let key = state.idempotency.key_summary(&id, &api_keys).await?;
    let refs = state.refs.for_answer();
    Ok(health::detail_for_role(key, user.role, &|u| refs.user(u)))
}

/// Admins expire a key so a stuck operation can be run again (audited).
#[server]
pub async fn expire_idempotency_key(id: String, reason: String) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let changed = state
        .idempotency
        .expire_key(&id, &reason, &admin.name, state.config.ttl.audit_days)
        .await?;
    tracing::info!(actor = %admin.name, changed, "idempotency key expired by an admin");
    Ok(if changed {
        "Expired: the next request with this key runs the operation again.".into()
    } else {
        "This key had already expired.".into()
    })
}

/// The machine clients (API key names, revoked ones too) a raw key can be looked up for.
#[server]
pub async fn api_client_names() -> Result<Vec<String>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let mut names: Vec<String> = state
        .api_keys
        .api_keys()
        .await?
        .into_iter()
        .map(|k| k.name)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The keys of the REST requests that carried this `X-Correlation-Id`.
#[server]
pub async fn find_idempotency_by_correlation(
    correlation_id: String,
) -> Result<Vec<KeySummary>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::health;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    if correlation_id.trim().is_empty() {
        return Ok(Vec::new());
    }
    let found = state
        .idempotency
        .find_by_correlation(&correlation_id)
        .await?;
    Ok(found
        .into_iter()
        .map(|k| health::for_role(k, user.role))
        .collect())
}

/// The keys a client's raw `Idempotency-Key` stands for (hashed here, on the server).
#[server]
pub async fn find_idempotency_key(
    raw: String,
    client: String,
) -> Result<Vec<KeySummary>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::health;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    if raw.trim().is_empty() {
        return Ok(Vec::new());
    }
    let principals: Vec<String> = state
        .api_keys
        .api_keys()
        .await?
        .into_iter()
        .filter(|k| k.name == client.trim())
        .map(|k| k.key_hash)
        .collect();
    if principals.is_empty() {
        return Err(AppError::invalid(
            "client",
            "Choose the client that sent the key.",
        ));
    }
    let found = state.idempotency.find_raw_key(&raw, &principals).await?;
    Ok(found
        .into_iter()
        .map(|k| health::for_role(k, user.role))
        .collect())
}
