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
use crate::model::outbox::{ReceiverView, SecretView, TestAnswer, WaitView};
use crate::model::users::Role;
use crate::model::AppError;
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
}

/// What an admin changes about the receiver.
pub enum Change {
    /// A new URL (and on or off).
    Url { url: String, enabled: bool },
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
            return Ok(parse_url(&item.url).ok().map(|url| Target {
                url,
                url_text: item.url.clone(),
                enabled: item.enabled && !secrets.is_empty(),
                secrets,
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
        }))
    }

    fn unseal(&self, s: &StoredSecret) -> Option<SigningSecret> {
        let text = String::from_utf8(self.seal.open(&s.sealed)?).ok()?;
        SigningSecret::parse(&text).ok()
    }

    /// The receiver as the Outbox page shows it to `role` (below admin, its URL without
    /// user info or query values: they can hold a token).
    pub async fn receiver(&self, role: Role) -> Result<ReceiverView, AppError> {
        let mut view = self.receiver_settings(role).await?;
        view.limits = limits(&self.config.events);
        let pause = self.pause_view(&self.pause_state().await?, self.clock.now());
        view.waits = both(pause, self.breaker_view(&self.breaker_state().await?));
        if let Some(url) = health::current_url(&self.store, &self.config).await? {
            // Busy figures leave the card without its health, not the page without a card.
            match health::of(&self.store, &url, self.clock.now()).await {
                Ok(h) => view.health = Some(h),
                Err(e) => {
                    tracing::warn!(error = %redact::redact(&e.to_string()), "receiver health not read")
                }
            }
        }
        Ok(view)
    }

    async fn receiver_settings(&self, role: Role) -> Result<ReceiverView, AppError> {
        if let Some(item) = store::load(&self.store).await? {
            return Ok(ReceiverView {
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
            });
        }
        let cfg = &self.config.events;
        Ok(ReceiverView {
            url: redact::url_for_role(role, &cfg.webhook_url),
            enabled: !cfg.webhook_url.is_empty(),
            source: if cfg.webhook_url.is_empty() {
                "none"
            } else {
                "settings"
            }
            .into(),
            ..ReceiverView::default()
        })
    }

    /// Applies an admin's change if the receiver is still at `version`; a new secret comes
    /// back (the only time it is shown).
    pub async fn change_receiver(
        &self,
        change: Change,
        version: i64,
        actor: &str,
    ) -> Result<Option<String>, AppError> {
        if let Change::Url { url, .. } = &change {
            self.check_destination(url).await?;
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
            Change::Url { url, enabled } => {
                let url = url.trim().to_string();
                parse_url(&url)
                    .map_err(|why| AppError::invalid("url", format!("The URL is {why}.")))?;
                item.url = url;
                item.enabled = enabled;
                item.disabled_reason = (!enabled).then(|| format!("Turned off by {actor}."));
                if item.secrets.is_empty() {
                    let shown = self.add_secret(item, actor, now);
                    return Ok((Some(shown), "url and first secret".into()));
                }
                Ok((
                    None,
                    if enabled {
                        "url, delivery on"
                    } else {
                        "url, delivery off"
                    }
                    .into(),
                ))
            }
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

/// Why deliveries wait, from a pause and the breaker: their words in one line, and the ids
/// of each.
fn both(pause: Option<WaitView>, breaker: Option<WaitView>) -> Option<WaitView> {
    match (pause, breaker) {
        (Some(p), Some(b)) => Some(WaitView {
            words: format!("{} {}", p.words, b.words),
            pause_id: p.pause_id,
            breaker_id: b.breaker_id,
        }),
        (p, b) => p.or(b),
    }
}

/// The receiver's limits in words (docs/events.md, "Rate limit", "Concurrency limit").
fn limits(e: &crate::server::config::EventsSection) -> String {
    let rate = (e.receiver_rate > 0).then(|| {
        format!(
            "{} requests a second (a burst of {})",
            e.receiver_rate,
            e.burst()
        )
    });
    let slots = (e.receiver_concurrency > 0).then(|| format!("{} at once", e.receiver_concurrency));
    match (rate, slots) {
        (None, None) => String::new(),
        (Some(r), Some(s)) => format!("Every console together: at most {r} and {s}."),
        (Some(one), None) | (None, Some(one)) => {
            format!("Every console together: at most {one}.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::limits;
    use crate::server::config::EventsSection;

    #[test]
    fn the_limits_in_words_name_each_one_set() {
        let with = |receiver_rate, receiver_concurrency| EventsSection {
            receiver_rate,
            receiver_concurrency,
            ..EventsSection::default()
        };
        assert_eq!(limits(&with(0, 0)), "");
        assert_eq!(
            limits(&with(10, 3)),
            "Every console together: at most 10 requests a second (a burst of 10) and 3 at once."
        );
        assert_eq!(
            limits(&with(0, 3)),
            "Every console together: at most 3 at once."
        );
    }
}
