//! The outbox's rules: its dead letters, a receiver that fails every attempt, and the
//! receiver's open breaker.

use super::{Alerts, Judged};
use crate::model::AppError;
use crate::server::metrics;
use crate::server::services::events::breaker as events_breaker;
use crate::server::services::events::health as receiver_health;
use crate::server::store::events::outbox::Group;
use crate::server::store::events::outbox_reads::{self, Filter};

impl Alerts {
    /// The receiver's breaker is open: side effects park. Its opening names the failures
    /// and the last errors; a new opening is a new episode.
    pub(super) async fn breaker_rule(&self) -> Result<Judged, AppError> {
        let b = events_breaker::current(&self.store, &self.config).await?;
        let parked = match b.breaker_id {
            Some(_) => outbox_reads::count(&self.store, Group::Due, &Filter::default()).await?,
            None => 0,
        };
        metrics::receiver_breaker_state(b.breaker_id.is_some(), parked);
        let probe = self.config.events.breaker_probe_seconds;
        let summary = match events_breaker::words(&b, probe) {
            Some(words) => format!("{words} {parked} side effects in the outbox."),
            None => "The receiver's breaker is closed.".into(),
        };
        Ok(Judged {
            id: "outbox.receiver_breaker".into(),
            breached: b.breaker_id.is_some(),
            summary,
            value: Some(parked as f64),
            threshold: 0.0,
            window: "now",
            sample: parked,
            page: "/outbox/receiver",
        })
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

    /// The receiver failed every delivery attempt of the window (and made enough of them).
    pub(super) async fn receiver_rule(&self) -> Result<Judged, AppError> {
        let h = match receiver_health::current_url(&self.store, &self.config).await? {
            Some(url) => receiver_health::of(&self.store, &url, self.clock.now()).await?,
            None => Default::default(),
        };
        metrics::receiver_attempts(h.window_attempts, h.window_delivered);
        let error = h
            .last_error
            .as_deref()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        let minutes = receiver_health::ALERT_WINDOW_MS / 60_000;
        Ok(Judged {
            id: "outbox.receiver_failing".into(),
            breached: h.every_attempt_failed,
            // No URL: hosts of webhook services carry secrets, and channels unfurl links.
            summary: format!(
                "The receiver took {} of {} delivery attempts over {minutes} min{error}",
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
