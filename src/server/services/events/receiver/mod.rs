//! The receiver of side effects (docs/events.md, "The receiver"): where they go and the
//! secrets that sign them. Saved on the Outbox page by an admin (every console reads the
//! same item); until then, the server's settings (`events.webhook_url`,
//! `events.webhook_secret`). A new secret is shown once; during a rotation every secret
//! signs, so the receiver can switch at its own pace.

use hyper::Uri;
use serde_json::json;

use super::health;
use super::ingest::{iso, Events};
use crate::model::outbox::{
    ReceiverDetail, ReceiverLimits, ReceiverName, ReceiverView, SecretView, TestAnswer,
};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::ids::random_hex;
use crate::server::outbound::signature::SigningSecret;
use crate::server::outbound::{parse_url, Message};
use crate::server::store::events::outbox_counts;
use crate::server::store::events::receiver::{self as store, StoredSecret};
use crate::server::store::query::Count;

mod change;
pub use change::{Change, Settings};

/// Where deliveries go, with what to sign them.
#[derive(Clone, Debug)]
pub struct Target {
    pub name: ReceiverName,
    pub url: Uri,
    pub url_text: String,
    pub secrets: Vec<SigningSecret>,
    pub enabled: bool,
    /// What every console sends it at most.
    pub limits: ReceiverLimits,
}

impl Events {
    /// Where deliveries to the receiver `name` go now, if anywhere.
    pub async fn target(
        &self,
        name: &ReceiverName,
    ) -> Result<Option<Target>, crate::server::store::StoreError> {
        if let Some(item) = store::load(&self.store, name).await? {
            let secrets = item
                .secrets
                .iter()
                .filter_map(|s| self.unseal(s))
                .collect::<Vec<_>>();
            let limits = super::limits::kept(item.limits, self.config.events.limits());
            return Ok(parse_url(&item.url).ok().map(|url| Target {
                name: name.clone(),
                url,
                url_text: item.url.clone(),
                enabled: item.enabled && !secrets.is_empty(),
                secrets,
                limits,
            }));
        }
        // Only `default` has settings to fall back on.
        let cfg = &self.config.events;
        let url = parse_url(&cfg.webhook_url)
            .ok()
            .filter(|_| name.is_default());
        let secret = SigningSecret::parse(cfg.webhook_secret.expose()).ok();
        Ok(url.zip(secret).map(|(url, secret)| Target {
            name: name.clone(),
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

    /// The receiver as the Overview shows it to `role` (below admin, its URL without user
    /// info or query values: they can hold a token).
    pub async fn receiver(&self, role: Role) -> Result<ReceiverView, AppError> {
        let (view, _, _) = self
            .receiver_seen(role, &ReceiverName::default_one())
            .await?;
        Ok(view)
    }

    /// Every receiver as [`Events::receiver`] shows `default`, `default` first (the Outbox).
    pub async fn receivers(&self, role: Role) -> Result<Vec<ReceiverView>, AppError> {
        let names = super::routes::names(&self.routes().await?);
        let seen = names.iter().map(|name| self.receiver_seen(role, name));
        let seen = futures_util::future::try_join_all(seen).await?;
        Ok(seen.into_iter().map(|(view, _, _)| view).collect())
    }

    /// The receiver `name` as [`Events::receiver`] shows `default`, with its limits as
    /// numbers, every receiver's name and the routes.
    pub async fn receiver_detail(
        &self,
        role: Role,
        name: &ReceiverName,
    ) -> Result<ReceiverDetail, AppError> {
        Ok(self.receiver_state(role, name).await?.0)
    }

    /// [`Events::receiver_detail`], and its queue depth as counted (REST gives the number).
    pub async fn receiver_state(
        &self,
        role: Role,
        name: &ReceiverName,
    ) -> Result<(ReceiverDetail, Count), AppError> {
        let routes = self.routes().await?;
        let names = super::routes::names(&routes);
        if !names.contains(name) {
            return Err(AppError::NotFound);
        }
        let (view, limits, depth) = self.receiver_seen(role, name).await?;
        let (route_types, routed_to) = super::routes::table(&routes);
        let detail = ReceiverDetail {
            name: name.as_str().into(),
            receiver: view,
            limits,
            names: names.iter().map(|n| n.as_str().to_string()).collect(),
            route_types,
            routes: routed_to,
            routes_version: routes.version,
        };
        Ok((detail, depth))
    }

    /// One receiver's card: its settings, why its deliveries wait, its queue depth and its
    /// health; with its limits as numbers and the depth as counted.
    async fn receiver_seen(
        &self,
        role: Role,
        name: &ReceiverName,
    ) -> Result<(ReceiverView, ReceiverLimits, Count), AppError> {
        let (mut view, limits) = self.receiver_settings(role, name).await?;
        view.name = name.as_str().into();
        view.limits = super::limits::words(&limits);
        let pause = self.pause_view(&self.pause_state(name).await?, self.clock.now());
        let breaker = self.breaker_state(name).await?;
        // A busy count leaves the card without its depth (a floor of 0 in REST), not the
        // page without a card.
        let depth = match outbox_counts::queue_depth(&self.store, name).await {
            Ok(depth) => {
                view.queue = queue_words(depth, breaker.breaker_id.is_some());
                depth
            }
            Err(e) => {
                tracing::warn!(error = %redact::redact(&e.to_string()), "receiver queue depth not read");
                view.queue = "Its queue depth was not read (DynamoDB is busy).".into();
                Count { n: 0, exact: false }
            }
        };
        view.waits = super::pause::both(pause, self.breaker_view(&breaker));
        if let Some(url) = health::current_url(&self.store, &self.config, name).await? {
            // Busy figures leave the card without its health, not the page without a card.
            match health::of(&self.store, &url, self.clock.now()).await {
                Ok(h) => view.health = Some(h),
                Err(e) => {
                    tracing::warn!(error = %redact::redact(&e.to_string()), "receiver health not read")
                }
            }
        }
        Ok((view, limits, depth))
    }

    /// The receiver's settings as `role` may see them, and the limits that hold.
    async fn receiver_settings(
        &self,
        role: Role,
        name: &ReceiverName,
    ) -> Result<(ReceiverView, ReceiverLimits), AppError> {
        let settings = self.config.events.limits();
        if let Some(item) = store::load(&self.store, name).await? {
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
        if !name.is_default() {
            let none = ReceiverView {
                source: "none".into(),
                ..ReceiverView::default()
            };
            return Ok((none, ReceiverLimits::default()));
        }
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

    /// Sends a signed test message to the receiver and reports its status and time (never
    /// what it answered: the console does not read other services for an admin).
    pub async fn test_receiver(
        &self,
        name: &ReceiverName,
        actor: &str,
    ) -> Result<TestAnswer, AppError> {
        let Some(target) = self.target(name).await? else {
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

/// A queue depth in words: how many side effects wait, parked while the breaker is open.
fn queue_words(depth: Count, parked: bool) -> String {
    let n = match (depth.n, depth.exact) {
        (0, _) => return "Nothing waits for it.".into(),
        (1, true) => return format!("1 side effect waits{}.", parked_words(parked)),
        (n, true) => n.to_string(),
        (n, false) => format!("At least {n}"),
    };
    format!("{n} side effects wait{}.", parked_words(parked))
}

fn parked_words(parked: bool) -> &'static str {
    if parked {
        ", parked while the breaker is open"
    } else {
        ""
    }
}
