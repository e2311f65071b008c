//! Alerts that reach people (docs/operations.md, "Alerts"). Every console judges, every
//! `alerts.check_seconds`, the rules the pages judge — the Idempotency page's
//! three rates per scope, the Measurements page's rules (`measurements`), the outbox's
//! dead letters and the receiver's failures — and records each change of state with a conditional write: whichever console
//! records a change announces it, once, to the configured channels (a JSON webhook, a Slack
//! incoming webhook). A console that dies between recording and announcing leaves the
//! announcement to another, which takes it over after [`TAKEOVER_MS`].

pub mod measurements;
mod messages;
mod outbox;
mod trips;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::model::AppError;
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::redact;
use crate::server::metrics;
use crate::server::outbound::networks::Resolver;
use crate::server::outbound::{parse_url, Answer, Message, Sender};
use crate::server::services::idempotency::Engine;
use crate::server::services::kill_switches::{Switches, Ttls};
use crate::server::services::measurements::pages;
use crate::server::store::alerts::{self as store, AlertItem, Change, Firing};
use crate::server::store::Store;

/// An announcement claimed this long ago and not made is taken over.
pub const TAKEOVER_MS: i64 = 120_000;

/// How long a resolved alert's state is kept.
const KEEP_DAYS: i64 = 90;

/// A firing alert's state is kept until it resolves (this is "for ever" to TTL).
const FIRING_KEEP_DAYS: i64 = 3650;

/// One rule's verdict now.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// `idempotency.failure:<scope>`, `measurements.duplicates`, `outbox.dead_letters`.
    pub id: String,
    pub breached: bool,
    pub summary: String,
    pub value: Option<f64>,
    pub threshold: f64,
    pub window: &'static str,
    pub sample: u64,
    /// The page that shows it.
    pub page: &'static str,
}

/// `text` as Slack reads it literally: `&`, `<` and `>` escaped, so no summary can make a
/// link or a mention.
fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The Idempotency page's three rates per scope, each a rule.
fn idempotency_rules(scopes: &[crate::model::idempotency::ScopeHealth]) -> Vec<Judged> {
    let mut out = Vec::new();
    for scope in scopes {
        for a in &scope.alerts {
            let value = a.value.map_or("no data".into(), |v| format!("{v:.1}%"));
            let side = if a.above { "above" } else { "below" };
            out.push(Judged {
                id: format!("idempotency.{}:{}", a.name, scope.scope),
                breached: a.breached,
                summary: format!(
                    "{} of {} is {value}, {side} {:.1}%, over 24 h ({} requests)",
                    a.label, scope.scope, a.threshold, scope.totals.requests
                ),
                value: a.value,
                threshold: a.threshold,
                window: "24h",
                sample: scope.totals.requests,
                page: "/idempotency",
            });
        }
    }
    out
}

/// What one check did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub judged: usize,
    pub fired: usize,
    pub resolved: usize,
    /// Announcements this console made (its own changes and ones it took over).
    pub announced: usize,
}

#[derive(Clone)]
pub struct Alerts {
    store: Store,
    clock: Clock,
    config: Arc<Config>,
    engine: Engine,
    sender: Arc<Sender>,
    /// The kill switches, for the trips attached to the rules.
    switches: Switches,
}

impl Alerts {
    pub fn new(store: Store, clock: Clock, config: Arc<Config>, engine: Engine) -> Alerts {
        let resolver = Resolver::of_settings(&config.operations);
        let switches = Switches::new(store.clone(), clock.clone(), Ttls::from(&config.ttl));
        Alerts {
            store,
            clock,
            config,
            engine,
            sender: Arc::new(Sender::new(Duration::from_secs(5), resolver)),
            switches,
        }
    }

    /// The firing alerts, for the Overview page.
    pub async fn firing(&self) -> Result<Vec<Firing>, AppError> {
        Ok(store::firing(&self.store).await?)
    }

    /// Every rule's verdict now.
    pub async fn judge(&self) -> Result<Vec<Judged>, AppError> {
        let health = self.engine.health("24h").await?;
        let mut out = idempotency_rules(&health.scopes);
        let m = &self.config.measurements;
        let rates = pages::rates(
            &self.store,
            "24h",
            m.alert_duplicate_max_pct,
            self.clock.now(),
        )
        .await?;
        let scopes: Vec<_> = health
            .scopes
            .into_iter()
            .filter(|s| s.scope.contains(measurements::SCOPE))
            .collect();
        out.extend(measurements::rules(&rates, &scopes, m));
        out.push(self.dead_letter_rule().await?);
        // A busy read of the receiver's figures leaves this rule unjudged, not the others.
        match self.receiver_rules().await {
            Ok(j) => out.extend(j),
            Err(e) => {
                tracing::warn!(error = %redact::redact(&e.to_string()), "receiver rule not judged")
            }
        }
        match self.breaker_rules().await {
            Ok(j) => out.extend(j),
            Err(e) => {
                tracing::warn!(error = %redact::redact(&e.to_string()), "breaker rule not judged")
            }
        }
        Ok(out)
    }

    /// One check: judge, record what changed, announce what this console recorded (or
    /// takes over). Safe on every console at once.
    pub async fn check(&self) -> Result<Checked, AppError> {
        let judged = self.judge().await?;
        let mut done = Checked {
            judged: judged.len(),
            ..Checked::default()
        };
        // A firing alert whose rule is not judged any more (its scope went quiet) clears.
        let mut all = judged;
        for f in store::firing(&self.store).await? {
            if !all.iter().any(|j| j.id == f.id) {
                all.push(Judged {
                    id: f.id.clone(),
                    breached: false,
                    summary: f.summary.clone(),
                    value: None,
                    threshold: 0.0,
                    window: "24h",
                    sample: 0,
                    page: "/",
                });
            }
        }
        // One alert's trouble (a throttle, say) does not keep the others waiting a minute.
        for j in &all {
            if let Err(e) = self.follow(j, &mut done).await {
                tracing::warn!(alert = %j.id, error = %crate::server::domain::redact::redact(&e.to_string()), "alert check of one alert failed");
            }
        }
        Ok(done)
    }

    async fn follow(&self, j: &Judged, done: &mut Checked) -> Result<(), AppError> {
        let now = self.clock.now();
        let now_ms = now.timestamp_millis();
        let item = store::get(&self.store, &j.id).await?;
        let firing = item.as_ref().is_some_and(|i| i.state == "firing");
        let (to, episode) = match (&item, j.breached, firing) {
            (_, true, false) => ("firing", item.as_ref().map_or(1, |i| i.episode + 1)),
            (Some(i), false, true) => ("resolved", i.episode),
            (Some(i), _, _) if !i.announced && i.claim_at_ms + TAKEOVER_MS < now_ms => {
                if store::reclaim(&self.store, i, now_ms).await? {
                    done.announced += self.announce(j, i, now).await? as usize;
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        let since = now.to_rfc3339_opts(SecondsFormat::Secs, true);
        let change = Change {
            id: &j.id,
            to,
            episode,
            since: &since,
            summary: &j.summary,
            link: &self.link(j.page),
            now_ms,
            // A firing alert is kept until it resolves; a resolved one for KEEP_DAYS.
            expires_at: (now
                + chrono::Duration::days(if to == "firing" {
                    FIRING_KEEP_DAYS
                } else {
                    KEEP_DAYS
                }))
            .timestamp(),
        };
        if !store::record(&self.store, &change).await? {
            return Ok(()); // another console recorded it first, and announces it
        }
        if to == "firing" {
            done.fired += 1;
        } else {
            done.resolved += 1;
        }
        let recorded = AlertItem {
            pk: String::new(),
            state: to.into(),
            episode,
            since: since.clone(),
            summary: j.summary.clone(),
            announced: false,
            claim_at_ms: now_ms,
            expires_at: change.expires_at,
        };
        done.announced += self.announce(j, &recorded, now).await? as usize;
        Ok(())
    }

    fn link(&self, page: &str) -> String {
        let base = self.config.operations.public_url.trim_end_matches('/');
        if base.is_empty() {
            String::new()
        } else {
            format!("{base}{page}")
        }
    }

    /// Sends the message of `item`'s state to every channel; marks it announced when every
    /// channel took it. False: a channel did not (it is tried again after the takeover
    /// time, by whichever console gets there).
    async fn announce(
        &self,
        j: &Judged,
        item: &AlertItem,
        now: DateTime<Utc>,
    ) -> Result<bool, AppError> {
        // A firing alert's trips act first; a trip that could not act leaves the message
        // unsent, so the takeover tries both again.
        let Some(j) = self.with_trips(j, item).await else {
            return Ok(false);
        };
        let j = &j;
        let channels = &self.config.alerts;
        let (id, generic, slack) = self.messages(j, item, now);
        let mut all_took = true;
        for (url, body) in [
            (&channels.webhook_url, generic),
            (&channels.slack_url, slack),
        ] {
            if url.is_empty() {
                continue;
            }
            let Ok(uri) = parse_url(url) else { continue };
            let message = Message {
                id: &id,
                timestamp: now.timestamp(),
                body: Bytes::from(body.to_string()),
                traceparent: None,
            };
            let answer = self.sender.send(&uri, &[], &message).await;
            if !matches!(answer, Answer::Delivered(_)) {
                tracing::warn!(alert = %j.id, answer = %answer.describe(), "an alert channel did not take the message");
                all_took = false;
            }
        }
        if !all_took {
            return Ok(false);
        }
        metrics::alert_announced(
            &j.id,
            if item.state == "firing" {
                "firing"
            } else {
                "resolved"
            },
        );
        tracing::info!(alert = %j.id, state = %item.state, episode = item.episode, "alert announced");
        Ok(store::announced(&self.store, &j.id, &item.state, item.episode).await?)
    }

    /// Checks every `alerts.check_seconds` until the task is stopped.
    pub async fn run(&self) {
        let every = Duration::from_secs(self.config.alerts.check_seconds.max(5) as u64);
        loop {
            if let Err(e) = self.check().await {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "alert check failed; trying again");
            }
            tokio::time::sleep(every).await;
        }
    }
}
