//! The outbox's rules: its dead letters, a receiver that fails every attempt, and the
//! receiver's open breaker.

use super::{Alerts, Judged};
use crate::model::outbox::ReceiverName;
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::metrics;
use crate::server::services::events::breaker as events_breaker;
use crate::server::services::events::health as receiver_health;
use crate::server::services::events::routes;
use crate::server::store::events::breaker::Breaker;
use crate::server::store::events::outbox::Group;
use crate::server::store::events::outbox_counts;
use crate::server::store::events::outbox_reads::{self, Filter};
use crate::server::store::events::routes as routes_store;

impl Alerts {
    /// Each receiver's breaker (a rule each: `outbox.receiver_breaker`, `default`'s, and
    /// `outbox.receiver_breaker.<name>`): open, side effects park. Its opening names the
    /// failures and the last errors; a new opening is a new episode.
    pub(super) async fn breaker_rules(&self) -> Result<Vec<Judged>, AppError> {
        let mut out = Vec::new();
        for name in self.receiver_names().await? {
            let b = events_breaker::current(&self.store, &self.config, &name).await?;
            // Its own side effects in the outbox (those routed to it), parked while open. A
            // busy count leaves its series as they were, never the rules unjudged.
            let open = b.breaker_id.is_some();
            let depth = match outbox_counts::queue_depth(&self.store, &name).await {
                Ok(depth) => Some(depth.n),
                Err(e) => {
                    tracing::warn!(error = %redact::redact(&e.to_string()), "receiver queue depth not counted");
                    None
                }
            };
            metrics::receiver_breaker_state(name.as_str(), open, depth);
            let parked = depth.filter(|_| open).unwrap_or(0);
            out.push(self.breaker_rule(&name, &b, parked));
        }
        Ok(out)
    }

    fn breaker_rule(&self, name: &ReceiverName, b: &Breaker, parked: u64) -> Judged {
        let probe = self.config.events.breaker_probe_seconds;
        let (id, whose) = rule_of("outbox.receiver_breaker", name);
        let summary = match events_breaker::words(b, probe) {
            Some(words) => format!("{whose}{words} {parked} of its side effects in the outbox."),
            None => format!("{whose}The receiver's breaker is closed."),
        };
        Judged {
            id,
            breached: b.breaker_id.is_some(),
            summary,
            value: Some(parked as f64),
            threshold: 0.0,
            window: "now",
            sample: parked,
            page: "/outbox/receiver",
        }
    }

    /// Every receiver's name, `default` first.
    async fn receiver_names(&self) -> Result<Vec<ReceiverName>, AppError> {
        Ok(routes::names(&routes_store::load(&self.store).await?))
    }

    /// Dead letters in the outbox now (and every group's depth, for `/metrics`).
    pub(super) async fn dead_letter_rule(&self) -> Result<Judged, AppError> {
        let mut depth = [0u64; 3];
        for (i, group) in [Group::Due, Group::Held, Group::Dead]
            .into_iter()
            .enumerate()
        {
            depth[i] = outbox_reads::count(&self.store, group, &Filter::default()).await?;
            metrics::outbox_actions(group.as_str(), depth[i]);
        }
        let dead = depth[2];
        Ok(Judged {
            id: "outbox.dead_letters".into(),
            breached: dead > 0,
            summary: format!("{dead} side effects are dead letters"),
            value: Some(dead as f64),
            threshold: 0.0,
            window: "now",
            sample: dead,
            page: "/outbox?group=dead",
        })
    }

    /// Each receiver failed every delivery attempt of the window (and made enough of
    /// them): a rule each, as [`Alerts::breaker_rules`] names them.
    pub(super) async fn receiver_rules(&self) -> Result<Vec<Judged>, AppError> {
        let mut out = Vec::new();
        for name in self.receiver_names().await? {
            out.push(self.receiver_rule(&name).await?);
        }
        Ok(out)
    }

    async fn receiver_rule(&self, name: &ReceiverName) -> Result<Judged, AppError> {
        let h = match receiver_health::current_url(&self.store, &self.config, name).await? {
            Some(url) => receiver_health::of(&self.store, &url, self.clock.now()).await?,
            None => Default::default(),
        };
        if name.is_default() {
            metrics::receiver_attempts(h.window_attempts, h.window_delivered);
        }
        let (id, whose) = rule_of("outbox.receiver_failing", name);
        let error = h
            .last_error
            .as_deref()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        let minutes = receiver_health::ALERT_WINDOW_MS / 60_000;
        Ok(Judged {
            id,
            breached: h.every_attempt_failed,
            // No URL: hosts of webhook services carry secrets, and channels unfurl links.
            summary: format!(
                "{whose}The receiver took {} of {} delivery attempts over {minutes} min{error}",
                h.window_delivered, h.window_attempts
            ),
            value: Some(h.window_delivered as f64),
            threshold: 0.0,
            window: "15m",
            sample: h.window_attempts,
            page: "/outbox",
        })
    }
}

/// A rule's id for the receiver `name` (`default`'s is the id it always had) and the words
/// its summary starts with.
fn rule_of(rule: &str, name: &ReceiverName) -> (String, String) {
    match name.is_default() {
        true => (rule.to_string(), String::new()),
        false => (
            format!("{rule}.{}", name.as_str()),
            format!("Receiver {}: ", name.as_str()),
        ),
    }
}
