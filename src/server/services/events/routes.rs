//! Receivers per action type (docs/events.md, "Receivers"): besides `default`, an admin
//! adds named receivers (each with its URL, secrets and limits, `receiver`), and routes an
//! action type to one; a type without a route goes to `default`. The route is decided when
//! a decision queues the side effect, and stored on it: a change of the routes applies to
//! side effects queued after it, never to one on its way.

use chrono::Utc;
use serde_json::json;

use super::ingest::{iso, Events};
use crate::model::outbox::ReceiverName;
use crate::model::AppError;
use crate::server::domain::events::decision::{ActionType, Decision};
use crate::server::store::audit::AuditItem;
use crate::server::store::events::receiver::AUDIT_PARTITION;
use crate::server::store::events::routes::{self as store, RoutesItem};
use crate::server::store::StoreError;

/// Receivers at most, `default` included: every dispatch round reads each one's settings,
/// pause and breaker.
pub const MAX_RECEIVERS: usize = 8;

/// The receiver `action_type` goes to under `routes` (`None`: `default`).
pub fn receiver_of(routes: &RoutesItem, action_type: &str) -> Option<String> {
    routes
        .routes
        .get(action_type)
        .filter(|r| r.as_str() != ReceiverName::DEFAULT)
        .cloned()
}

/// How the actions of the receiver `name` store it: `None` for `default`.
pub(super) fn stored(name: &ReceiverName) -> Option<&str> {
    (!name.is_default()).then(|| name.as_str())
}

/// Every receiver's name, `default` first. A stored name that no longer parses (an item
/// changed by hand) is left out: no key is ever built from it.
pub fn names(routes: &RoutesItem) -> Vec<ReceiverName> {
    let named = routes
        .receivers
        .iter()
        .filter_map(|r| ReceiverName::parse(r).ok())
        .filter(|r| !r.is_default());
    std::iter::once(ReceiverName::default_one())
        .chain(named)
        .collect()
}

/// Every action type, in the order pages list them, and the name of the receiver each goes
/// to.
pub fn table(routes: &RoutesItem) -> (Vec<String>, Vec<String>) {
    ActionType::ALL
        .iter()
        .map(|t| {
            let to = receiver_of(routes, t.as_str());
            let to = to.unwrap_or_else(|| ReceiverName::DEFAULT.to_string());
            (t.as_str().to_string(), to)
        })
        .unzip()
}

impl Events {
    /// The routes as stored.
    pub async fn routes(&self) -> Result<RoutesItem, StoreError> {
        store::load(&self.store).await
    }

    /// `Ok` if `name` is a receiver (`default`, or one an admin added); else a 404.
    pub async fn known_receiver(&self, name: &ReceiverName) -> Result<(), AppError> {
        match name.is_default() || names(&self.routes().await?).contains(name) {
            true => Ok(()),
            false => Err(AppError::NotFound),
        }
    }

    /// The routes a decision's side effects are queued under: read only when it queues any
    /// (most events queue nothing).
    pub(super) async fn routes_for(
        &self,
        decision: &Decision,
        suppress: bool,
    ) -> Result<RoutesItem, StoreError> {
        match suppress || decision.actions.is_empty() {
            true => Ok(RoutesItem::default()),
            false => store::load_copy(&self.store).await,
        }
    }

    /// Routes `action_type` to `to` (an admin), if the routes are still at `version`;
    /// audited.
    pub async fn set_route(
        &self,
        action_type: &str,
        to: &ReceiverName,
        version: i64,
        actor: &str,
    ) -> Result<(), AppError> {
        let Some(kind) = ActionType::named(action_type.trim()) else {
            return Err(AppError::invalid("action_type", "No such action type."));
        };
        let current = self.routes().await?;
        if current.version != version {
            return Err(changed_meanwhile());
        }
        if !names(&current).contains(to) {
            return Err(AppError::invalid(
                "receiver",
                "No such receiver: add it first.",
            ));
        }
        let mut next = current.clone();
        if to.is_default() {
            next.routes.remove(kind.as_str());
        } else {
            next.routes.insert(kind.as_str().into(), to.as_str().into());
        }
        let audit = self.routes_audit(
            &next,
            &format!("{} to {}", kind.as_str(), to.as_str()),
            actor,
        );
        let saved = self.save_routes(next, version, actor, &audit).await?;
        if !saved {
            return Err(changed_meanwhile());
        }
        tracing::info!(actor = %actor, action_type = kind.as_str(), receiver = to.as_str(), "route changed");
        Ok(())
    }

    async fn save_routes(
        &self,
        mut next: RoutesItem,
        read_version: i64,
        actor: &str,
        audit: &AuditItem,
    ) -> Result<bool, StoreError> {
        stamp(&mut next, read_version, actor, self.clock.now());
        store::save_with_record(&self.store, &next, read_version, audit).await
    }

    /// The routes' audit record for `what` changed.
    pub(super) fn routes_audit(&self, next: &RoutesItem, what: &str, actor: &str) -> AuditItem {
        let now = self.clock.now();
        let mut a = AuditItem::new(
            AUDIT_PARTITION,
            "receiver_routes",
            now,
            &format!("routes-v{}", next.version + 1),
            self.config.ttl.audit_days,
        );
        a.actor = actor.to_string();
        a.result = format!("success: {what}");
        a.action_payload_redacted =
            json!({"receivers": next.receivers, "routes": next.routes}).to_string();
        a
    }
}

/// `next` as saved over `read_version` by `actor` at `now`.
pub(super) fn stamp(
    next: &mut RoutesItem,
    read_version: i64,
    actor: &str,
    now: chrono::DateTime<Utc>,
) {
    next.version = read_version + 1;
    next.updated_at = iso(now);
    next.updated_by = actor.to_string();
}

fn changed_meanwhile() -> AppError {
    AppError::Conflict("The routes were changed meanwhile; reload the page and try again.".into())
}
