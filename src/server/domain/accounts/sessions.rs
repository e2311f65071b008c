//! Signing in and out, and resolving a session cookie to the signed-in user.

use chrono::{DateTime, Duration, Utc};

use super::Accounts;
use crate::model::accounts::CurrentUser;
use crate::model::AppError;
use crate::server::config::AuthSection;
use crate::server::domain::accounts::passwords::{
    new_session_id, sha256_hex, verify_against_nothing, verify_password, Lockout,
};
use crate::server::store::accounts::login_attempts;
use crate::server::store::accounts::sessions::{self, SessionItem};
use crate::server::store::accounts::users::{self, UserItem};

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

impl Accounts {
    /// Checks the password and opens a session. Returns the session id (for the cookie).
    pub async fn login(
        &self,
        name: &str,
        password: &str,
    ) -> Result<Result<(String, CurrentUser), LoginError>, AppError> {
        let now = self.clock.now();
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() || name.len() > 64 {
            verify_against_nothing(password);
            return Ok(Err(LoginError::Invalid));
        }
        let attempts = login_attempts::get(&self.store, &name).await?;
        if let Some(until) = attempts.locked_until.filter(|u| *u > now) {
            return Ok(Err(LoginError::Locked { until }));
        }
        let Some(user) = self.check_password(&name, password, now).await? else {
            return Ok(Err(self.count_failure(&name, now).await?));
        };
        if !attempts.failures.is_empty() {
            login_attempts::clear(&self.store, &name).await?;
        }
        let id = self.open_session(&user, now).await?;
        tracing::info!(user = %user.name, "signed in");
        Ok(Ok((
            id,
            CurrentUser {
                name: user.name,
                role: user.role,
            },
        )))
    }

    /// The user, if `password` is theirs and they may sign in. An unknown name costs the
    /// same time as a wrong password.
    async fn check_password(
        &self,
        name: &str,
        password: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<UserItem>, AppError> {
        let user = users::get(&self.store, name, now).await?;
        let ok = match &user {
            Some(u) => verify_password(password, &u.password_hash) && !u.disabled,
            None => {
                verify_against_nothing(password);
                false
            }
        };
        Ok(user.filter(|_| ok))
    }

    /// Records a failed sign-in for `name`, and locks the name once the failures reach
    /// the limit.
    async fn count_failure(&self, name: &str, now: DateTime<Utc>) -> Result<LoginError, AppError> {
        let rule = lockout(&self.auth);
        let expires = (now + rule.window * 2).timestamp();
        let failures = login_attempts::record_failure(&self.store, name, now, expires).await?;
        let Some(until) = rule.locked_until(&failures, now) else {
            return Ok(LoginError::Invalid);
        };
        login_attempts::lock(&self.store, name, until, expires.max(until.timestamp())).await?;
        tracing::warn!("sign-in locked after repeated failures");
        Ok(LoginError::Locked { until })
    }

    /// Opens a session for `user` and records the sign-in, which keeps the account alive
    /// for another inactivity lifetime. Returns the session id; only its hash is stored.
    async fn open_session(&self, user: &UserItem, now: DateTime<Utc>) -> Result<String, AppError> {
        let id = new_session_id();
        let absolute = (now + Duration::days(self.auth.session_absolute_days)).timestamp();
        let item = SessionItem {
            id_hash: sha256_hex(id.as_bytes()),
            user: user.name.clone(),
            created_at: now,
            last_seen_at: now,
            absolute_expires_at: absolute,
            expires_at: (now + Duration::hours(self.auth.session_idle_hours))
                .timestamp()
                .min(absolute),
        };
        sessions::create(&self.store, &item, now).await?;
        let alive_until = (now + Duration::days(self.ttls.user_inactive_days)).timestamp();
        users::record_login(&self.store, &user.name, now, alive_until).await?;
        Ok(id)
    }

    /// The user behind a session id, if the session and the user are both still valid.
    pub async fn resolve_session(&self, session_id: &str) -> Result<Option<CurrentUser>, AppError> {
        if session_id.len() != 64 || !session_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let now = self.clock.now();
        let id_hash = sha256_hex(session_id.as_bytes());
        let Some(session) = sessions::get(&self.store, &id_hash, now).await? else {
            return Ok(None);
        };
        let Some(user) = users::get(&self.store, &session.user, now).await? else {
            return Ok(None);
        };
        // Disabled, or the password changed since this session began: the session is over.
        if user.disabled || user.password_changed_at > session.created_at {
            sessions::delete(&self.store, &id_hash).await?;
            return Ok(None);
        }
        if now - session.last_seen_at >= TOUCH_EVERY {
            let idle = (now + Duration::hours(self.auth.session_idle_hours)).timestamp();
            let expires = idle.min(session.absolute_expires_at);
            sessions::touch(&self.store, &id_hash, now, expires).await?;
        }
        Ok(Some(CurrentUser {
            name: user.name,
            role: user.role,
        }))
    }

    pub async fn logout(&self, session_id: &str) -> Result<(), AppError> {
        sessions::delete(&self.store, &sha256_hex(session_id.as_bytes())).await?;
        Ok(())
    }
}
