//! An admin's change of a receiver (docs/events.md, "The receiver", "Receivers"): its URL,
//! whether delivery is on, its limits and its secrets, under its version and with its
//! audit record; a named receiver's first save adds it to the routes.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::model::outbox::{ReceiverLimits, ReceiverName};
use crate::model::AppError;
use crate::server::config::check_limits;
use crate::server::domain::redact;
use crate::server::ids::random_hex;
use crate::server::outbound::parse_url;
use crate::server::outbound::signature::SigningSecret;
use crate::server::services::events::ingest::{iso, Events};
use crate::server::store::audit::AuditItem;
use crate::server::store::events::receiver::{self as store, ReceiverItem, StoredSecret};
use crate::server::store::events::routes as routes_store;

/// Secrets signing at once, at most (a rotation overlaps two; three leaves room).
const MAX_SECRETS: usize = 3;

/// The receiver's form: its URL, whether delivery is on, and the limits (`None`: as they
/// were).
pub struct Settings {
    pub url: String,
    pub enabled: bool,
    pub limits: Option<ReceiverLimits>,
}

/// What an admin changes about the receiver.
pub enum Change {
    /// A new URL, on or off, and limits.
    Settings(Settings),
    /// A new secret beside the others: shown once.
    AddSecret,
    /// A secret no longer signs.
    RetireSecret { id: String },
}

impl Events {
    /// Applies an admin's change if the receiver is still at `version`; a new secret comes
    /// back (the only time it is shown).
    /// A named receiver that is not saved yet is added by its first save (its URL), with
    /// the routes that list it.
    pub async fn change_receiver(
        &self,
        name: &ReceiverName,
        change: Change,
        version: i64,
        actor: &str,
    ) -> Result<Option<String>, AppError> {
        if let Change::Settings(s) = &change {
            self.check_destination(&s.url).await?;
        }
        let now = self.clock.now();
        let current = store::load(&self.store, name).await?;
        let read_version = current.as_ref().map_or(0, |i| i.version);
        if read_version != version {
            return Err(changed_meanwhile());
        }
        let adding = current.is_none() && !name.is_default();
        if adding && !matches!(change, Change::Settings(_)) {
            return Err(AppError::invalid("url", "Save the receiver's URL first."));
        }
        let mut next = match current {
            Some(item) => item,
            None if name.is_default() => self.item_of_settings(),
            None => ReceiverItem::new(name),
        };
        let (shown, what) = self.apply_change(&mut next, change, actor, now)?;
        next.version = read_version + 1;
        next.updated_at = iso(now);
        next.updated_by = actor.to_string();
        let audit = self.receiver_audit(name, &next, &what, actor, now);
        let saved = if adding {
            self.add_receiver(name, &next, actor, &audit).await?
        } else {
            store::save(&self.store, &next, read_version, &audit).await?
        };
        if !saved {
            return Err(changed_meanwhile());
        }
        tracing::info!(actor = %actor, receiver = name.as_str(), change = %what, "receiver changed");
        Ok(shown)
    }

    /// Saves the new named receiver `next` with the routes that list it. False: either was
    /// saved meanwhile.
    async fn add_receiver(
        &self,
        name: &ReceiverName,
        next: &ReceiverItem,
        actor: &str,
        audit: &AuditItem,
    ) -> Result<bool, AppError> {
        let routes = self.routes().await?;
        if crate::server::services::events::routes::names(&routes).len()
            >= crate::server::services::events::routes::MAX_RECEIVERS
        {
            return Err(AppError::invalid(
                "receiver",
                format!(
                    "At most {} receivers; turn one off and use it again.",
                    crate::server::services::events::routes::MAX_RECEIVERS
                ),
            ));
        }
        let read_version = routes.version;
        let mut listed = routes;
        listed.receivers.push(name.as_str().into());
        let now = self.clock.now();
        crate::server::services::events::routes::stamp(&mut listed, read_version, actor, now);
        let routes_write = routes_store::save(&self.store, &listed, read_version)?;
        Ok(store::create(&self.store, next, routes_write, audit).await?)
    }

    /// A receiver URL an admin saves: http(s), with a host the console may send to (the
    /// public internet, or a network the settings list). Checked again at every connection.
    async fn check_destination(&self, url: &str) -> Result<(), AppError> {
        let uri = parse_url(url.trim())
            .map_err(|why| AppError::invalid("url", format!("The URL is {why}.")))?;
        let host = uri.host().unwrap_or_default();
        let within = std::time::Duration::from_secs(2);
        self.sender
            .resolver()
            .check_host(host, within)
            .await
            .map_err(|r| AppError::invalid("url", format!("This URL is refused: {r}.")))
    }

    /// Stores the receiver the settings name, as an admin's first save would, so that it
    /// can be turned off (a 410 Gone). False: one was stored already (by another console).
    pub(in crate::server::services::events) async fn store_settings_receiver(
        &self,
        now: DateTime<Utc>,
    ) -> Result<bool, crate::server::store::StoreError> {
        let default = ReceiverName::default_one();
        if store::load(&self.store, &default).await?.is_some() {
            return Ok(false);
        }
        let mut first = self.item_of_settings();
        first.version = 1;
        first.updated_at = iso(now);
        first.updated_by = "system".into();
        let audit =
            self.receiver_audit(&default, &first, "stored from the settings", "system", now);
        store::save(&self.store, &first, 0, &audit).await
    }

    /// The first saved item starts from the server's settings (their secret included, so
    /// a receiver configured that way keeps verifying).
    fn item_of_settings(&self) -> ReceiverItem {
        let cfg = &self.config.events;
        let mut item = ReceiverItem::new(&ReceiverName::default_one());
        item.url = cfg.webhook_url.clone();
        item.enabled = !cfg.webhook_url.is_empty();
        if let Ok(secret) = SigningSecret::parse(cfg.webhook_secret.expose()) {
            item.secrets.push(StoredSecret {
                id: "settings".into(),
                sealed: self.seal.seal(secret.expose().as_bytes()),
                created_at: String::new(),
                created_by: "settings".into(),
            });
        }
        item
    }

    fn apply_change(
        &self,
        item: &mut ReceiverItem,
        change: Change,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(Option<String>, String), AppError> {
        match change {
            Change::Settings(s) => self.apply_settings(item, s, actor, now),
            Change::AddSecret => {
                if item.secrets.len() >= MAX_SECRETS {
                    return Err(AppError::invalid(
                        "secret",
                        format!("At most {MAX_SECRETS} secrets sign at once; retire one first."),
                    ));
                }
                Ok((
                    Some(self.add_secret(item, actor, now)),
                    "secret added".into(),
                ))
            }
            Change::RetireSecret { id } => {
                if item.secrets.len() <= 1 {
                    return Err(AppError::invalid(
                        "secret",
                        "The last secret cannot be retired: add its successor first.",
                    ));
                }
                let before = item.secrets.len();
                item.secrets.retain(|s| s.id != id);
                if item.secrets.len() == before {
                    return Err(AppError::invalid("secret", "No such secret."));
                }
                Ok((None, format!("secret {id} retired")))
            }
        }
    }

    /// A new URL, on or off, and the limits if the form sent them: checked, then set in
    /// `item`; the first secret comes back when it had none.
    fn apply_settings(
        &self,
        item: &mut ReceiverItem,
        Settings {
            url,
            enabled,
            limits,
        }: Settings,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(Option<String>, String), AppError> {
        let url = url.trim().to_string();
        parse_url(&url).map_err(|why| AppError::invalid("url", format!("The URL is {why}.")))?;
        if let Some(l) = &limits {
            check_limits(l)
                .map_err(|e| AppError::invalid(e.field, format!("The {} {}.", e.field, e.rule)))?;
        }
        item.url = url;
        item.enabled = enabled;
        item.disabled_reason = (!enabled).then(|| format!("Turned off by {actor}."));
        let limits_said = match limits {
            Some(l) if item.limits != Some(l) => {
                item.limits = Some(l);
                match crate::server::services::events::limits::words(&l) {
                    w if w.is_empty() => ", no limits".to_string(),
                    w => format!(", limits: {w}"),
                }
            }
            _ => String::new(),
        };
        if item.secrets.is_empty() {
            let shown = self.add_secret(item, actor, now);
            return Ok((Some(shown), format!("url and first secret{limits_said}")));
        }
        let on = if enabled { "on" } else { "off" };
        Ok((None, format!("url, delivery {on}{limits_said}")))
    }

    /// A new secret in `item`, returned in the clear (shown once).
    fn add_secret(&self, item: &mut ReceiverItem, actor: &str, now: DateTime<Utc>) -> String {
        let secret = SigningSecret::generate();
        let shown = secret.expose();
        item.secrets.push(StoredSecret {
            id: random_hex(4),
            sealed: self.seal.seal(shown.as_bytes()),
            created_at: iso(now),
            created_by: actor.to_string(),
        });
        shown
    }

    fn receiver_audit(
        &self,
        name: &ReceiverName,
        item: &ReceiverItem,
        what: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        // Each receiver's versions are its own: a named one's record says whose.
        let id = match name.is_default() {
            true => format!("v{}", item.version),
            false => format!("receiver-{}-v{}", name.as_str(), item.version),
        };
        let mut a = AuditItem::new(
            store::AUDIT_PARTITION,
            "receiver_change",
            now,
            &id,
            self.config.ttl.audit_days,
        );
        a.actor = actor.to_string();
        a.result = format!("success: {what}");
        a.action_payload_redacted = json!({
            "url": redact::redact(&item.url),
            "enabled": item.enabled,
            "secrets": item.secrets.iter().map(|s| &s.id).collect::<Vec<_>>(),
            "limits": item.limits,
            "receiver": name.as_str(),
        })
        .to_string();
        a
    }
}

fn changed_meanwhile() -> AppError {
    AppError::Conflict("The receiver was changed meanwhile; reload the page and try again.".into())
}
