//! The receiver of side effects (docs/events.md, "The receiver"): where they go and the
//! secrets that sign them. Saved on the Outbox page by an admin (every console reads the
//! same item); until then, the server's settings (`events.webhook_url`,
//! `events.webhook_secret`). A new secret is shown once; during a rotation every secret
//! signs, so the receiver can switch at its own pace.

use chrono::{DateTime, Utc};
use hyper::Uri;
use serde_json::json;

use super::health;
use super::ingest::{iso, Events};
use crate::model::outbox::{ReceiverDetail, ReceiverLimits, ReceiverView, SecretView, TestAnswer};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::config::check_limits;
use crate::server::domain::redact;
use crate::server::ids::random_hex;
use crate::server::outbound::signature::SigningSecret;
use crate::server::outbound::{parse_url, Message};
use crate::server::store::audit::AuditItem;
use crate::server::store::events::receiver::{self as store, ReceiverItem, StoredSecret};

/// Secrets signing at once, at most (a rotation overlaps two; three leaves room).
const MAX_SECRETS: usize = 3;

/// Where deliveries go, with what to sign them.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: Uri,
    pub url_text: String,
    pub secrets: Vec<SigningSecret>,
    pub enabled: bool,
    /// What every console sends it at most.
    pub limits: ReceiverLimits,
}

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
    /// The receiver deliveries go to now, if any.
    pub async fn target(&self) -> Result<Option<Target>, crate::server::store::StoreError> {
        if let Some(item) = store::load(&self.store).await? {
            let secrets = item
                .secrets
                .iter()
                .filter_map(|s| self.unseal(s))
                .collect::<Vec<_>>();
            let limits = super::limits::kept(item.limits, self.config.events.limits());
            return Ok(parse_url(&item.url).ok().map(|url| Target {
                url,
                url_text: item.url.clone(),
                enabled: item.enabled && !secrets.is_empty(),
                secrets,
                limits,
            }));
        }
        let cfg = &self.config.events;
        let url = parse_url(&cfg.webhook_url).ok();
        let secret = SigningSecret::parse(cfg.webhook_secret.expose()).ok();
        Ok(url.zip(secret).map(|(url, secret)| Target {
            url,
            url_text: cfg.webhook_url.clone(),
            secrets: vec![secret],
            enabled: true,
            limits: cfg.limits(),
        }))
    }

    fn unseal(&self, s: &StoredSecret) -> Option<SigningSecret> {
        let text = String::from_utf8(self.seal.open(&s.sealed)?).ok()?;
        SigningSecret::parse(&text).ok()
    }

    /// The receiver as the Outbox page shows it to `role` (below admin, its URL without
    /// user info or query values: they can hold a token).
    pub async fn receiver(&self, role: Role) -> Result<ReceiverView, AppError> {
        Ok(self.receiver_detail(role).await?.receiver)
    }

    /// The receiver as [`Events::receiver`] shows it, with its limits as numbers.
    pub async fn receiver_detail(&self, role: Role) -> Result<ReceiverDetail, AppError> {
        let (mut view, limits) = self.receiver_settings(role).await?;
        view.limits = super::limits::words(&limits);
        let pause = self.pause_view(&self.pause_state().await?, self.clock.now());
        view.waits = super::pause::both(pause, self.breaker_view(&self.breaker_state().await?));
        if let Some(url) = health::current_url(&self.store, &self.config).await? {
            // Busy figures leave the card without its health, not the page without a card.
            match health::of(&self.store, &url, self.clock.now()).await {
                Ok(h) => view.health = Some(h),
                Err(e) => {
                    tracing::warn!(error = %redact::redact(&e.to_string()), "receiver health not read")
                }
            }
        }
        Ok(ReceiverDetail {
            receiver: view,
            limits,
        })
    }

    /// The receiver's settings as `role` may see them, and the limits that hold.
    async fn receiver_settings(
        &self,
        role: Role,
    ) -> Result<(ReceiverView, ReceiverLimits), AppError> {
        let settings = self.config.events.limits();
        if let Some(item) = store::load(&self.store).await? {
            let limits = super::limits::kept(item.limits, settings);
            let view = ReceiverView {
                url: redact::url_for_role(role, &item.url),
                enabled: item.enabled,
                disabled_reason: item.disabled_reason,
                secrets: item
                    .secrets
                    .into_iter()
                    .map(|s| SecretView {
                        id: s.id,
                        created_at: s.created_at,
                        created_by: s.created_by,
                    })
                    .collect(),
                source: "console".into(),
                version: item.version,
                updated_at: item.updated_at,
                updated_by: item.updated_by,
                ..ReceiverView::default()
            };
            return Ok((view, limits));
        }
        let cfg = &self.config.events;
        let view = ReceiverView {
            url: redact::url_for_role(role, &cfg.webhook_url),
            enabled: !cfg.webhook_url.is_empty(),
            source: if cfg.webhook_url.is_empty() {
                "none"
            } else {
                "settings"
            }
            .into(),
            ..ReceiverView::default()
        };
        Ok((view, settings))
    }

    /// Applies an admin's change if the receiver is still at `version`; a new secret comes
    /// back (the only time it is shown).
    pub async fn change_receiver(
        &self,
        change: Change,
        version: i64,
        actor: &str,
    ) -> Result<Option<String>, AppError> {
        if let Change::Settings(s) = &change {
            self.check_destination(&s.url).await?;
        }
        let now = self.clock.now();
        let current = store::load(&self.store).await?;
        let read_version = current.as_ref().map_or(0, |i| i.version);
        if read_version != version {
            return Err(AppError::Conflict(
                "The receiver was changed meanwhile; reload the page and try again.".into(),
            ));
        }
        let mut next = current.unwrap_or_else(|| self.item_of_settings());
        let (shown, what) = self.apply_change(&mut next, change, actor, now)?;
        next.version = read_version + 1;
        next.updated_at = iso(now);
        next.updated_by = actor.to_string();
        next.expires_at = (now + chrono::Duration::days(self.config.ttl.settings_days)).timestamp();
        let audit = self.receiver_audit(&next, &what, actor, now);
        if !store::save(&self.store, &next, read_version, &audit).await? {
            return Err(AppError::Conflict(
                "The receiver was changed meanwhile; reload the page and try again.".into(),
            ));
        }
        tracing::info!(actor = %actor, change = %what, "receiver changed");
        Ok(shown)
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
    pub(super) async fn store_settings_receiver(
        &self,
        now: DateTime<Utc>,
    ) -> Result<bool, crate::server::store::StoreError> {
        if store::load(&self.store).await?.is_some() {
            return Ok(false);
        }
        let mut first = self.item_of_settings();
        first.version = 1;
        first.updated_at = iso(now);
        first.updated_by = "system".into();
        first.expires_at =
            (now + chrono::Duration::days(self.config.ttl.settings_days)).timestamp();
        let audit = self.receiver_audit(&first, "stored from the settings", "system", now);
        store::save(&self.store, &first, 0, &audit).await
    }

    /// The first saved item starts from the server's settings (their secret included, so
    /// a receiver configured that way keeps verifying).
    fn item_of_settings(&self) -> ReceiverItem {
        let cfg = &self.config.events;
        let mut item = ReceiverItem::new();
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
                match super::limits::words(&l) {
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
        item: &ReceiverItem,
        what: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let mut a = AuditItem::new(
            store::AUDIT_PARTITION,
            "receiver_change",
            now,
            &format!("v{}", item.version),
            self.config.ttl.audit_days,
        );
        a.actor = actor.to_string();
        a.result = format!("success: {what}");
        a.action_payload_redacted = json!({
            "url": redact::redact(&item.url),
            "enabled": item.enabled,
            "secrets": item.secrets.iter().map(|s| &s.id).collect::<Vec<_>>(),
            "limits": item.limits,
        })
        .to_string();
        a
    }

    /// Sends a signed test message to the receiver and reports its status and time (never
    /// what it answered: the console does not read other services for an admin).
    pub async fn test_receiver(&self, actor: &str) -> Result<TestAnswer, AppError> {
        let Some(target) = self.target().await? else {
            return Err(AppError::invalid("url", "Set a receiver first."));
        };
        let now = self.clock.now();
        let id = format!("test_{}", random_hex(8));
        let body = json!({
            "type": "test",
            "timestamp": iso(now),
            "data": {"sent_by": actor},
        })
        .to_string();
        let msg = Message {
            id: &id,
            timestamp: now.timestamp(),
            body: body.into(),
            traceparent: None,
        };
        let started = std::time::Instant::now();
        let answer = self.sender.send(&target.url, &target.secrets, &msg).await;
        tracing::info!(actor = %actor, outcome = %answer.cause(), "receiver test message");
        Ok(TestAnswer {
            webhook_id: id,
            outcome: answer.describe(),
            ms: started.elapsed().as_millis() as i64,
        })
    }
}
