//! Users: console users and their roles, sessions, and machine clients' API keys. Every
//! change to a user or a key is audited, and no change may leave the console without an
//! active admin. The rules are plain functions (here and in [`passwords`]); the
//! [`Users`] service does the reading and writing.

pub mod lookups;
pub mod passwords;
pub mod sessions;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::model::kill_switches::Reason;
use crate::model::users::{parse_user_name, Role};
use crate::model::AppError;
use crate::server::clock::Clock;
use crate::server::config::{AuthSection, TtlSection};
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::services::api_keys as api_keys_service;
use crate::server::services::kill_switches::withdraw::withdraw;
use crate::server::services::users::passwords::{check_new_password, new_password, PasswordWork};
use crate::server::store::api_keys::{self, ApiKeyItem};
use crate::server::store::audit::AuditItem;
use crate::server::store::tx::Writes;
use crate::server::store::users::{self, Applied, UserChange, UserItem};
use crate::server::store::{Store, StoreError};
use crate::server::telemetry::internal;

pub const AUDIT_PARTITION: &str = "system#users";
pub const AUDIT_ACTION: &str = "user_change";

/// How often a change to an existing user is decided again when other changes keep moving
/// the admin-change lock.
const CHANGE_TRIES: usize = 10;

/// The most live API keys an admin's disabling or demotion revokes with it (18 writes
/// each: the key, its record and its 16 copies, in one transaction of at most 100).
const MAX_KEYS_REVOKED: usize = 4;

/// Lifetimes the account rules need.
#[derive(Clone, Copy, Debug)]
pub struct UserTtls {
    pub user_inactive_days: i64,
    pub audit_days: i64,
    pub settings_days: i64,
}

impl From<&TtlSection> for UserTtls {
    fn from(ttl: &TtlSection) -> UserTtls {
        UserTtls {
            user_inactive_days: ttl.user_inactive_days,
            audit_days: ttl.audit_days,
            settings_days: ttl.settings_days,
        }
    }
}

/// Users, sessions and API keys (sessions and keys in [`sessions`] and [`api_keys`]).
/// Cheap to clone.
#[derive(Clone)]
pub struct Users {
    store: Store,
    clock: Clock,
    ttls: UserTtls,
    auth: AuthSection,
    /// Password hashing and checking, off the async workers and bounded.
    password_work: PasswordWork,
    /// The HMAC key sign-in counters keep client addresses under.
    address_key: [u8; 32],
    /// Kill-switch changes need a second admin's approval here: the console makes no new
    /// admins (one made here could approve a request of the admin who made them); the
    /// command line on the server still does.
    four_eyes: bool,
}

impl Users {
    pub fn new(store: Store, clock: Clock, ttls: UserTtls, auth: AuthSection) -> Users {
        let mut address_key = [0u8; 32];
        // Replaced by the server secret's key where sign-ins are served (`with_address_key`).
        getrandom::fill(&mut address_key)
            .expect("the operating system's random generator is available");
        let password_work = match auth.password_checks_at_once {
            0 => PasswordWork::for_this_machine(),
            n => PasswordWork::new(n as usize),
        };
        Users {
            store,
            clock,
            ttls,
            auth,
            password_work,
            address_key,
            four_eyes: false,
        }
    }

    /// These accounts where kill-switch changes need a second admin's approval: the
    /// console adds and promotes no admin (the command line on the server does).
    pub fn with_four_eyes(mut self, four_eyes: bool) -> Users {
        self.four_eyes = four_eyes;
        self
    }

    /// Refuses to make `name` an admin from the console where four eyes are required.
    fn may_make_admin(&self, name: &str, role: Role) -> Result<(), AppError> {
        if self.four_eyes && role == Role::Admin {
            return Err(AppError::Refused(format!(
                "Kill-switch changes need a second admin's approval here, so the console \
                 makes no new admins: one made here could approve a request of the admin who \
                 made them. Make {name} an admin with the command line on the server \
                 (`ops-console users add {name} --role admin`, or `users set-role`)."
            )));
        }
        Ok(())
    }

    /// These accounts, keeping client addresses under `key` (the same on every console,
    /// so an address's attempts count together behind a load balancer).
    pub fn with_address_key(mut self, key: [u8; 32]) -> Users {
        self.address_key = key;
        self
    }

    /// An audit record of `actor`'s change to users, at `now`.
    fn user_record(&self, actor: &str, now: DateTime<Utc>, payload: &UserRecord<'_>) -> AuditItem {
        let mut item = AuditItem::new(
            AUDIT_PARTITION,
            AUDIT_ACTION,
            now,
            &random_hex(8),
            self.ttls.audit_days,
        );
        item.actor = actor.to_string();
        item.action_payload_redacted = serde_json::to_string(payload).unwrap_or_default();
        item
    }

    /// Every live user, by name.
    pub async fn users(&self) -> Result<Vec<UserItem>, StoreError> {
        users::list(&self.store, self.clock.now()).await
    }

    pub async fn add_user(
        &self,
        name: &str,
        role: Role,
        password: &str,
        actor: &str,
    ) -> Result<(), AppError> {
        let now = self.clock.now();
        let name = parse_user_name(name)?;
        if crate::server::domain::kill_switches::MACHINE_ACTORS.contains(&name.as_str()) {
            // The history and every page's banner tell the console's own moves by these.
            return Err(AppError::invalid(
                "name",
                format!("“{name}” names the console's own changes; choose another name."),
            ));
        }
        self.may_make_admin(&name, role)?;
        check_new_password(password)?;
        let hash = self
            .password_work
            .hash(password)
            .await
            .map_err(|e| internal(&e))?;
        let item = UserItem {
            name: name.clone(),
            role,
            password_hash: hash,
            disabled: false,
            disabled_reason: None,
            created_at: now,
            last_login_at: None,
            password_changed_at: now,
            expires_at: (now + Duration::days(self.ttls.user_inactive_days)).timestamp(),
            admin_since: Some(now),
        };
        let record = self.user_record(actor, now, &UserRecord::added(&name, role));
        if users::create(&self.store, &item, &record, now).await? {
            tracing::info!(user = %name, role = %role, actor, "user added");
            Ok(())
        } else {
            Err(AppError::Conflict(format!(
                "A user named {name} already exists."
            )))
        }
    }

    /// In dev with no users at all: creates `admin` with a random password and returns it.
    pub async fn ensure_first_admin(&self) -> Result<Option<String>, AppError> {
        if users::any_exist(&self.store).await? {
            return Ok(None);
        }
        let password = new_password();
        // The first admin is the system's, not a person's: no request can be waiting yet.
        match self
            .clone()
            .with_four_eyes(false)
            .add_user("admin", Role::Admin, &password, "system")
            .await
        {
            Ok(()) => Ok(Some(password)),
            // Another process created it first: theirs stands.
            Err(AppError::Conflict(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Applies a change to an existing user; refuses to remove the last active admin even
    /// when two such changes race.
    pub async fn change_user(
        &self,
        name: &str,
        change: Change,
        reason: &str,
        actor: &str,
    ) -> Result<(), AppError> {
        let now = self.clock.now();
        let name = parse_user_name(name)?;
        if let Change::SetRole(role) = change {
            self.may_make_admin(&name, role)?;
        }
        let reason = redact(Reason::parse(reason)?.as_str());
        let hash = new_password_hash(&self.password_work, &change).await?;
        for attempt in 0..CHANGE_TRIES {
            // The last tries leave the switches' lists alone: a client that keeps them
            // moving cannot keep its maker an admin (what is left pending is void when
            // due, and cannot be approved).
            let lists = attempt + 2 < CHANGE_TRIES;
            match self
                .try_change(&name, &change, &reason, hash.as_deref(), actor, now, lists)
                .await?
            {
                Applied::Done => {
                    tracing::info!(user = %name, actor, "user changed");
                    // Only a change that can take an admin's role away has keys to follow.
                    if matches!(change, Change::Disable)
                        || matches!(change, Change::SetRole(r) if r != Role::Admin)
                    {
                        self.revoke_the_rest(&name, actor).await;
                    }
                    return Ok(());
                }
                Applied::Retry => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
        Err(AppError::Conflict(
            "Users were being changed at the same time; try again.".into(),
        ))
    }

    /// One try of [`Users::change_user`]: reads the users and the admin-change lock,
    /// decides, and writes only if the lock has not moved since.
    #[allow(clippy::too_many_arguments)]
    async fn try_change(
        &self,
        name: &str,
        change: &Change,
        reason: &str,
        hash: Option<&str>,
        actor: &str,
        now: DateTime<Utc>,
        lists: bool,
    ) -> Result<Applied, AppError> {
        let lock = users::lock_version(&self.store).await?;
        let all = users::list(&self.store, now).await?;
        let Some(target) = all.iter().find(|u| u.name == name) else {
            return Err(AppError::NotFound);
        };
        // An admin's new password shown to another admin would make that admin two people.
        if self.four_eyes
            && target.role == Role::Admin
            && name != actor
            && matches!(change, Change::ResetPassword(_))
        {
            return Err(AppError::Refused(format!(
                "Kill-switch changes need a second admin's approval here, so the console does \
                 not reset another admin's password (whoever sees it could approve as them). \
                 {name} resets it with the command line on the server \
                 (`ops-console users reset-password {name}`)."
            )));
        }
        let planned = plan_change(target, change, reason, hash, now);
        if removes_last_admin(&all, name, planned.still_admin, now) {
            return Err(AppError::Conflict(format!(
                "{name} is the last active admin; make someone else an admin first."
            )));
        }
        let record = self.user_record(actor, now, &planned.record);
        let ttl = self.ttls.settings_days;
        // An admin who stops being one (disabled, or given another role) takes the API keys
        // they made and what they and those keys left pending with them, in this same
        // transaction (docs/security.md, "Who may still act").
        let with = if target.is_active_admin(now) && !planned.still_admin {
            self.withdrawal(name, actor, now, lists).await?
        } else {
            None
        };
        let lock_expires_at = (now + Duration::days(ttl)).timestamp();
        Ok(users::apply(
            &self.store,
            name,
            planned.write,
            lock,
            &record,
            with,
            lock_expires_at,
        )
        .await?)
    }

    /// The live API keys `name` made in the console, or on the command line as
    /// `cli:<name>` (the same person, as approvals count them).
    async fn keys_made_by(
        &self,
        name: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<ApiKeyItem>, AppError> {
        let cli = format!("cli:{name}");
        Ok(api_keys::list(&self.store, now)
            .await?
            .into_iter()
            .filter(|k| (k.created_by == name || k.created_by == cli) && k.revoked_at.is_none())
            .collect())
    }

    /// The audit record of `actor` revoking the key `key` of a former admin, for `why`.
    fn key_revoke_record(
        &self,
        key: &str,
        actor: &str,
        why: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let mut record = AuditItem::new(
            api_keys_service::AUDIT_PARTITION,
            api_keys_service::REVOKE_ACTION,
            now,
            &random_hex(8),
            self.ttls.audit_days,
        );
        record.actor = actor.to_string();
        record.action_payload_redacted =
            serde_json::json!({"name": key, "reason": why}).to_string();
        record
    }

    /// Revokes, one by one, the live keys of `name` that its disabling or demotion did not
    /// take in its transaction (past [`MAX_KEYS_REVOKED`]). A failure is logged: the keys
    /// stay listed under their maker for an admin to revoke.
    async fn revoke_the_rest(&self, name: &str, actor: &str) {
        let now = self.clock.now();
        let Ok(user) = users::get(&self.store, name, now).await else {
            return;
        };
        if user.is_some_and(|u| u.is_active_admin(now)) {
            return;
        }
        let Ok(keys) = self.keys_made_by(name, now).await else {
            return;
        };
        let why = format!("{name} is no longer an admin");
        for k in keys {
            let record = self.key_revoke_record(&k.name, actor, &why, now);
            if let Err(e) = api_keys::revoke(&self.store, &k, actor, &record, None, now).await {
                tracing::warn!(error = %e, key = %k.name, "API key of a former admin not revoked");
            }
        }
    }

    /// The writes that revoke the live API keys `name` made and withdraw what they and
    /// those keys left pending (scheduled changes, requests for approval), by `actor`.
    async fn withdrawal(
        &self,
        name: &str,
        actor: &str,
        now: DateTime<Utc>,
        lists: bool,
    ) -> Result<Option<Writes>, AppError> {
        let mut keys = self.keys_made_by(name, now).await?;
        // Past this many, the rest are revoked right after the change commits.
        keys.truncate(MAX_KEYS_REVOKED);
        let why = format!("{name} is no longer an admin");
        let mut writes: Option<Writes> = None;
        for k in &keys {
            let record = self.key_revoke_record(&k.name, actor, &why, now);
            let w = api_keys::revoke_writes(&self.store, k, actor, &record, now)?;
            writes = Some(match writes {
                Some(all) => all.and(w),
                None => w,
            });
        }
        let mut authors = vec![name.to_string()];
        authors.extend(keys.iter().map(api_keys_service::author_name));
        let ttls = crate::server::services::kill_switches::Ttls {
            audit_days: self.ttls.audit_days,
            settings_days: self.ttls.settings_days,
        };
        let withdrawn = if lists {
            withdraw(&self.store, &authors, actor, &why, ttls, now)
                .await?
                .writes
        } else {
            None
        };
        Ok(match (writes, withdrawn) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        })
    }
}

/// What an admin (or the CLI) asks to change.
pub enum Change {
    SetRole(Role),
    Disable,
    Enable,
    ResetPassword(String),
}

/// The new password's hash, when the change sets one: checked and hashed before anything
/// is read.
async fn new_password_hash(
    work: &PasswordWork,
    change: &Change,
) -> Result<Option<String>, AppError> {
    match change {
        Change::ResetPassword(p) => {
            check_new_password(p)?;
            Ok(Some(work.hash(p).await.map_err(|e| internal(&e))?))
        }
        _ => Ok(None),
    }
}

/// The kind of a user change, as its audit record names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UserAction {
    Add,
    SetRole,
    Disable,
    Enable,
    ResetPassword,
}

/// A user change's audit payload. The fields are in alphabetical order so that the stored
/// JSON is exactly what the earlier `serde_json::json!` maps (sorted by key) wrote.
#[derive(Debug, Serialize)]
struct UserRecord<'a> {
    change: UserAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<Role>,
    user: &'a str,
}

impl<'a> UserRecord<'a> {
    fn added(user: &'a str, role: Role) -> UserRecord<'a> {
        UserRecord {
            change: UserAction::Add,
            from: None,
            reason: None,
            role: Some(role),
            to: None,
            user,
        }
    }

    fn changed(user: &'a str, change: UserAction, reason: &'a str) -> UserRecord<'a> {
        UserRecord {
            change,
            from: None,
            reason: Some(reason),
            role: None,
            to: None,
            user,
        }
    }
}

/// A change decided against the user as read: whether they are an admin afterwards, the
/// audit payload, and the write.
struct Planned<'a> {
    still_admin: bool,
    record: UserRecord<'a>,
    write: UserChange<'a>,
}

/// What `change` does to `target`; `hash` is the new password's, for a reset.
fn plan_change<'a>(
    target: &'a UserItem,
    change: &Change,
    reason: &'a str,
    hash: Option<&'a str>,
    now: DateTime<Utc>,
) -> Planned<'a> {
    let user = target.name.as_str();
    let is_admin = target.role == Role::Admin;
    let (still_admin, record, write) = match change {
        Change::SetRole(role) => (
            *role == Role::Admin,
            UserRecord {
                from: Some(target.role),
                to: Some(*role),
                ..UserRecord::changed(user, UserAction::SetRole, reason)
            },
            UserChange::Role(*role, now),
        ),
        Change::Disable => (
            false,
            UserRecord::changed(user, UserAction::Disable, reason),
            UserChange::Disable(reason),
        ),
        Change::Enable => (
            is_admin,
            UserRecord::changed(user, UserAction::Enable, reason),
            UserChange::Enable(now),
        ),
        Change::ResetPassword(_) => (
            is_admin,
            UserRecord::changed(user, UserAction::ResetPassword, reason),
            UserChange::Password {
                hash: hash.unwrap_or_default(),
                at: now,
            },
        ),
    };
    Planned {
        still_admin,
        record,
        write,
    }
}

/// Would this change leave no active admin?
pub fn removes_last_admin(
    users: &[UserItem],
    target: &str,
    still_admin_after: bool,
    now: DateTime<Utc>,
) -> bool {
    let target_is_admin = users
        .iter()
        .any(|u| u.name == target && u.is_active_admin(now));
    if !target_is_admin || still_admin_after {
        return false;
    }
    users
        .iter()
        .filter(|u| u.name != target && u.is_active_admin(now))
        .count()
        == 0
}

#[cfg(test)]
mod tests;
