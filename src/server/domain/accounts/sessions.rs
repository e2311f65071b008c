//! Signing in and out, resolving a session cookie or an API key to a principal.

use chrono::{DateTime, Duration, Utc};

use crate::model::accounts::CurrentUser;
use crate::model::AppError;
use crate::server::config::AuthSection;
use crate::server::domain::accounts::passwords::{
    new_api_key, new_session_id, sha256_hex, verify_against_nothing, verify_password, Lockout,
};
use crate::server::store::accounts::api_keys::{self, ApiKeyItem};
use crate::server::store::accounts::sessions::{self, SessionItem};
use crate::server::store::accounts::{login_attempts, users};
use crate::server::store::audit::AuditItem;
use crate::server::store::Store;

/// Slide the idle expiry at most this often (a write per request would be waste).
const TOUCH_EVERY: Duration = Duration::minutes(1);

#[derive(Debug, PartialEq, Eq)]
pub enum LoginError {
    /// Wrong name or password, unknown or disabled user: one answer for all.
    Invalid,
    Locked {
        until: DateTime<Utc>,
    },
}

fn lockout(cfg: &AuthSection) -> Lockout {
    Lockout {
        limit: cfg.lockout_failures as usize,
        window: Duration::minutes(cfg.lockout_minutes),
    }
}

/// Checks the password and opens a session. Returns the session id (for the cookie).
pub async fn login(
    store: &Store,
    cfg: &AuthSection,
    user_inactive_days: i64,
    name: &str,
    password: &str,
    now: DateTime<Utc>,
) -> Result<Result<(String, CurrentUser), LoginError>, AppError> {
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty() || name.len() > 64 {
        verify_against_nothing(password);
        return Ok(Err(LoginError::Invalid));
    }
    let rule = lockout(cfg);
    let attempts = login_attempts::get(store, &name).await?;
    if let Some(until) = attempts.locked_until.filter(|u| *u > now) {
        return Ok(Err(LoginError::Locked { until }));
    }
    let user = users::get(store, &name, now).await?;
    let ok = match &user {
        Some(u) => verify_password(password, &u.password_hash) && !u.disabled,
        None => {
            verify_against_nothing(password);
            false
        }
    };
    let attempts_expire = (now + rule.window * 2).timestamp();
    let Some(user) = user.filter(|_| ok) else {
        let failures = login_attempts::record_failure(store, &name, now, attempts_expire).await?;
        if let Some(until) = rule.locked_until(&failures, now) {
            login_attempts::lock(store, &name, until, attempts_expire.max(until.timestamp()))
                .await?;
            tracing::warn!("sign-in locked after repeated failures");
            return Ok(Err(LoginError::Locked { until }));
        }
        return Ok(Err(LoginError::Invalid));
    };
    if !attempts.failures.is_empty() {
        login_attempts::clear(store, &name).await?;
    }
    let id = new_session_id();
    let absolute = (now + Duration::days(cfg.session_absolute_days)).timestamp();
    let item = SessionItem {
        id_hash: sha256_hex(id.as_bytes()),
        user: user.name.clone(),
        created_at: now,
        last_seen_at: now,
        absolute_expires_at: absolute,
        expires_at: (now + Duration::hours(cfg.session_idle_hours))
            .timestamp()
            .min(absolute),
    };
    sessions::create(store, &item, now).await?;
    users::record_login(
        store,
        &user.name,
        now,
        (now + Duration::days(user_inactive_days)).timestamp(),
    )
    .await?;
    tracing::info!(user = %user.name, "signed in");
    Ok(Ok((
        id,
        CurrentUser {
            name: user.name,
            role: user.role,
        },
    )))
}

/// The user behind a session id, if the session and the user are both still valid.
pub async fn resolve(
    store: &Store,
    cfg: &AuthSection,
    session_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<CurrentUser>, AppError> {
    if session_id.len() != 64 || !session_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let id_hash = sha256_hex(session_id.as_bytes());
    let Some(session) = sessions::get(store, &id_hash, now).await? else {
        return Ok(None);
    };
    let Some(user) = users::get(store, &session.user, now).await? else {
        return Ok(None);
    };
    // Disabled, or the password changed since this session began: the session is over.
    if user.disabled || user.password_changed_at > session.created_at {
        sessions::delete(store, &id_hash).await?;
        return Ok(None);
    }
    if now - session.last_seen_at >= TOUCH_EVERY {
        let idle = (now + Duration::hours(cfg.session_idle_hours)).timestamp();
        sessions::touch(store, &id_hash, now, idle.min(session.absolute_expires_at)).await?;
    }
    Ok(Some(CurrentUser {
        name: user.name,
        role: user.role,
    }))
}

pub async fn logout(store: &Store, session_id: &str) -> Result<(), AppError> {
    sessions::delete(store, &sha256_hex(session_id.as_bytes())).await?;
    Ok(())
}

/// A machine client, as its API key says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiPrincipal {
    pub name: String,
    pub scopes: Vec<String>,
}

impl ApiPrincipal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Scopes a key may carry.
pub const SCOPES: &[&str] = &[
    "switches:read",
    "switches:write",
    "events:write",
    "conversations:read",
    "conversations:write",
    "inbox:read",
    "inbox:write",
    "measurements:write",
    "measurements:admin",
];

/// Creates a key and returns it; only its hash is kept.
pub async fn create_api_key(
    store: &Store,
    name: &str,
    scopes: &[String],
    ttl_days: i64,
    actor: &str,
    audit_days: i64,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    let name = crate::model::accounts::parse_user_name(name).map_err(|_| {
        AppError::invalid(
            "name",
            "A key name is 2 to 64 characters: letters, digits, '.', '_' or '-'.",
        )
    })?;
    if scopes.is_empty() {
        return Err(AppError::invalid(
            "scopes",
            format!("Give at least one scope: {}.", SCOPES.join(", ")),
        ));
    }
    if let Some(bad) = scopes.iter().find(|s| !SCOPES.contains(&s.as_str())) {
        return Err(AppError::invalid(
            "scopes",
            format!("Unknown scope {bad}; known: {}.", SCOPES.join(", ")),
        ));
    }
    let key = new_api_key();
    let item = ApiKeyItem {
        key_hash: sha256_hex(key.as_bytes()),
        name: name.clone(),
        scopes: scopes.to_vec(),
        created_at: now,
        created_by: actor.to_string(),
        expires_at: (now + Duration::days(ttl_days)).timestamp(),
    };
    api_keys::create(store, &item, now).await?;
    let mut record = AuditItem::new(
        "system#api_keys",
        "api_key_created",
        now,
        &crate::server::ids::random_hex(8),
        audit_days,
    );
    record.actor = actor.to_string();
    record.action_payload_redacted =
        serde_json::json!({"name": name, "scopes": scopes}).to_string();
    crate::server::store::audit::put(store, &record).await?;
    Ok(key)
}

pub async fn resolve_api_key(
    store: &Store,
    key: &str,
    now: DateTime<Utc>,
) -> Result<Option<ApiPrincipal>, AppError> {
    if !key.starts_with(crate::server::domain::accounts::passwords::API_KEY_PREFIX)
        || key.len() > 128
    {
        return Ok(None);
    }
    Ok(api_keys::get(store, &sha256_hex(key.as_bytes()), now)
        .await?
        .map(|k| ApiPrincipal {
            name: k.name,
            scopes: k.scopes,
        }))
}
