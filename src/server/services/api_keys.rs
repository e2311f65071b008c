//! Machine clients' API keys: the scopes a key may carry, the rules for a new key, and
//! creating (with its audit record, in one transaction) and resolving keys.

use chrono::Duration;
use serde::Serialize;

use crate::model::api_keys::ApiScope;
use crate::model::users::parse_user_name;
use crate::model::AppError;
use crate::server::clock::Clock;
use crate::server::crypto::sha256_hex;
use crate::server::ids::random_hex;
use crate::server::services::kill_switches::withdraw::withdraw;
use crate::server::services::kill_switches::Ttls;
use crate::server::services::users::passwords::{new_api_key, API_KEY_PREFIX};
use crate::server::store::api_keys::{self, ApiKeyItem, Revoked};
use crate::server::store::audit::AuditItem;
use crate::server::store::tx::Writes;
use crate::server::store::Store;
use crate::server::telemetry::internal;

pub const AUDIT_PARTITION: &str = "system#api_keys";
pub const AUDIT_ACTION: &str = "api_key_created";
pub const REVOKE_ACTION: &str = "api_key_revoked";

/// A machine client, as its API key says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiPrincipal {
    pub name: String,
    pub scopes: Vec<ApiScope>,
    /// The person who made the key: what the key asks for, they asked (four eyes never
    /// count a key and its maker as two).
    pub created_by: String,
}

impl ApiPrincipal {
    pub fn has_scope(&self, scope: ApiScope) -> bool {
        self.scopes.contains(&scope)
    }
}

fn known() -> String {
    ApiScope::ALL.map(ApiScope::as_str).join(", ")
}

/// Scopes as a form or the command line names them, in their order: at least one, each
/// known.
pub fn parse_scopes(raw: &[String]) -> Result<Vec<ApiScope>, AppError> {
    if raw.is_empty() {
        return Err(AppError::invalid(
            "scopes",
            format!("Give at least one scope: {}.", known()),
        ));
    }
    raw.iter()
        .map(|r| {
            ApiScope::parse(r).ok_or_else(|| {
                AppError::invalid(
                    "scopes",
                    format!(
                        "Unknown scope {}; known: {}.",
                        r.chars().take(64).collect::<String>(),
                        known()
                    ),
                )
            })
        })
        .collect()
}

/// A new key's name (normalized) if it is acceptable.
pub fn check_new_key(name: &str) -> Result<String, AppError> {
    parse_user_name(name).map_err(|_| {
        AppError::invalid(
            "name",
            "A key name is 2 to 64 characters: letters, digits, '.', '_' or '-'.",
        )
    })
}

/// A new key's audit payload (fields in alphabetical order: the stored JSON reads as the
/// sorted `serde_json::json!` map it replaced).
#[derive(Serialize)]
struct KeyRecord<'a> {
    name: &'a str,
    scopes: &'a [ApiScope],
}

/// Machine clients' API keys (`state.api_keys`). Cheap to clone.
#[derive(Clone)]
pub struct ApiKeys {
    store: Store,
    clock: Clock,
    /// How long a key's audit records are kept.
    audit_days: i64,
    /// How long the switches' lists a revoke takes a key's pending changes off live.
    settings_days: i64,
    /// When this console last wrote each key's last use (epoch seconds): requests read a
    /// copy of the key, which does not carry it, and a busy key must not cost a write per
    /// request. Only spares writes: the write's own condition decides (once an hour, over
    /// every console).
    noted: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, i64>>>,
}

impl ApiKeys {
    pub fn new(store: Store, clock: Clock, ttl: &crate::server::config::TtlSection) -> ApiKeys {
        let (audit_days, settings_days) = (ttl.audit_days, ttl.settings_days);
        ApiKeys {
            store,
            clock,
            audit_days,
            settings_days,
            noted: Default::default(),
        }
    }

    /// Creates a key living `ttl_days` and returns it; only its hash is kept. The key and
    /// its audit record are written together or not at all.
    pub async fn create_api_key(
        &self,
        name: &str,
        scopes: &[ApiScope],
        ttl_days: i64,
        actor: &str,
    ) -> Result<String, AppError> {
        let name = check_new_key(name)?;
        if scopes.is_empty() {
            return Err(parse_scopes(&[]).unwrap_err());
        }
        let now = self.clock.now();
        let key = new_api_key();
        let item = ApiKeyItem {
            key_hash: sha256_hex(key.as_bytes()),
            name: name.clone(),
            scopes: scopes.iter().map(|s| s.as_str().to_string()).collect(),
            created_at: now,
            created_by: actor.to_string(),
            expires_at: (now + Duration::days(ttl_days)).timestamp(),
            revoked_at: None,
            revoked_by: None,
            last_used_at: None,
        };
        let mut record = AuditItem::new(
            AUDIT_PARTITION,
            AUDIT_ACTION,
            now,
            &random_hex(8),
            self.audit_days,
        );
        record.actor = actor.to_string();
        record.action_payload_redacted = serde_json::to_string(&KeyRecord {
            name: &name,
            scopes,
        })
        .unwrap_or_default();
        if !api_keys::create(&self.store, &item, &record, now).await? {
            // 256 random bits: never in practice, but never hand out a key that is not ours.
            return Err(internal(&"a new API key's hash is already taken"));
        }
        Ok(key)
    }

    /// The client a key belongs to, unless the key is unknown or expired.
    pub async fn resolve_api_key(&self, key: &str) -> Result<Option<ApiPrincipal>, AppError> {
        if !key.starts_with(API_KEY_PREFIX) || key.len() > 128 {
            return Ok(None);
        }
        let now = self.clock.now();
        let hash = sha256_hex(key.as_bytes());
        let Some(k) = api_keys::get(&self.store, &hash, now)
            .await?
            .filter(|k| k.revoked_at.is_none())
        else {
            return Ok(None);
        };
        // The key's last use, to the hour: due when this console has not written it within
        // the hour (the write's condition spares the item when another console has).
        let due = now.timestamp() - api_keys::USE_RESOLUTION_SECS;
        let mine = self.noted.lock().ok().and_then(|n| n.get(&hash).copied());
        if mine.is_none_or(|at| at < due) {
            if let Ok(mut n) = self.noted.lock() {
                if n.len() > 10_000 {
                    n.retain(|_, at| *at >= due);
                }
                n.insert(hash.clone(), now.timestamp());
            }
            if let Err(e) = api_keys::note_use(&self.store, &hash, now).await {
                tracing::warn!(error = %e, key = %k.name, "API key use not recorded");
            }
        }
        // A scope this release does not know (a newer console wrote it) grants nothing here.
        let scopes = k.scopes.iter().filter_map(|s| ApiScope::parse(s)).collect();
        Ok(Some(ApiPrincipal {
            name: k.name,
            scopes,
            created_by: k.created_by,
        }))
    }

    /// Every key that has not expired, revoked ones too, newest first.
    pub async fn api_keys(&self) -> Result<Vec<ApiKeyItem>, AppError> {
        Ok(api_keys::list(&self.store, self.clock.now()).await?)
    }

    /// Revokes the key whose hash is `key_hash`, with a reason (audited with it). Revoking
    /// a key that is revoked already, expired or unknown is a 404 and writes nothing.
    pub async fn revoke_api_key(
        &self,
        key_hash: &str,
        reason: &str,
        actor: &str,
    ) -> Result<String, AppError> {
        let reason = crate::server::domain::redact::redact(
            crate::model::kill_switches::Reason::parse(reason)?.as_str(),
        );
        let id = random_hex(8);
        for attempt in 0..REVOKE_TRIES {
            let now = self.clock.now();
            let key = api_keys::get_item(&self.store, key_hash.trim())
                .await?
                .filter(|k| k.revoked_at.is_none() && k.expires_at > now.timestamp())
                .ok_or(AppError::NotFound)?;
            let mut record =
                AuditItem::new(AUDIT_PARTITION, REVOKE_ACTION, now, &id, self.audit_days);
            record.actor = actor.to_string();
            record.action_payload_redacted =
                serde_json::json!({"name": key.name, "reason": reason}).to_string();
            // What the key left pending goes with it, in the same transaction; the last try
            // revokes it alone (a client that keeps the lists moving cannot stay live: what
            // it left is void when due, and cannot be approved).
            let withdrawn = if attempt + 1 < REVOKE_TRIES {
                self.withdrawal(&[author_name(&key)], actor, now).await?
            } else {
                None
            };
            match api_keys::revoke(&self.store, &key, actor, &record, withdrawn, now).await? {
                Revoked::Done => {
                    tracing::info!(key = %key.name, actor, "API key revoked");
                    return Ok(key.name);
                }
                Revoked::Gone => return Err(AppError::NotFound),
                Revoked::Moved => {}
            }
        }
        Err(AppError::Conflict(
            "The kill switches' schedule or approvals kept changing; try again.".into(),
        ))
    }

    /// The writes that withdraw what `keys` left pending (scheduled changes, requests for
    /// approval), by `actor`.
    pub async fn withdrawal(
        &self,
        keys: &[String],
        actor: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Writes>, AppError> {
        let ttls = Ttls {
            audit_days: self.audit_days,
            settings_days: self.settings_days,
        };
        let why = "its API key was revoked";
        Ok(withdraw(&self.store, keys, actor, why, ttls, now)
            .await?
            .writes)
    }
}

/// How often a revoke is tried again when the switches' lists moved under it.
const REVOKE_TRIES: usize = 5;

/// The author name a key's scheduled changes and requests carry.
pub fn author_name(key: &ApiKeyItem) -> String {
    format!("api:{}", key.name)
}
