//! Trips (docs/switches.md, "Trips"): an admin attaches a trip to an alert rule; when an
//! alert of that rule fires, the console that records the firing (or takes its message
//! over) moves the switch to its safe position, once per firing, written by the system with
//! a reason naming the rule, its figures and its window. A trip never turns safety off.

use super::{ChangeError, Origin, Switches};
use crate::model::kill_switches::{rule_covers, trip_rule, Switch};
use crate::model::AppError;
use crate::server::domain::kill_switches::timers::SYSTEM;
use crate::server::domain::kill_switches::{ChangeRequest, TRIP_REASON};
use crate::server::ids::random_hex;
use crate::server::store::kill_switch_trips::{self as store, Trip, Trips, AUDIT_ACTION};
use crate::server::store::StoreError;

impl Switches {
    /// The trips as stored.
    pub async fn trips(&self) -> Result<Trips, StoreError> {
        store::load(&self.store, self.clock.now()).await
    }

    /// Attaches a trip: when an alert of `rule` fires, `switch` goes to its safe position.
    /// `rule` is one of the trip rules, or `<rule>:<scope>` for one judged per scope: then
    /// only that scope's alert trips it, and other scopes' clients cannot.
    pub async fn attach_trip(
        &self,
        rule: &str,
        switch: Switch,
        actor: &str,
    ) -> Result<(), AppError> {
        let (name, scope) = rule.split_once(':').unwrap_or((rule, ""));
        let (_, rule) = trip_rule(name, scope)?;
        let rule = rule.as_str();
        let now = self.clock.now();
        let current = self.trips().await?;
        if current
            .trips
            .iter()
            .any(|t| t.rule == rule && t.switch == switch)
        {
            return Err(AppError::Conflict(format!(
                "{rule} already trips {}; nothing changed.",
                switch.label().to_ascii_lowercase()
            )));
        }
        let mut next = current.clone();
        next.trips.push(Trip {
            rule: rule.to_string(),
            switch,
            made_by: actor.to_string(),
            made_at: crate::server::clock::iso(now),
        });
        self.save_trips(current.version, next, rule, switch, "attached", actor)
            .await
    }

    /// Removes the trip of `rule` on `switch`.
    pub async fn remove_trip(
        &self,
        rule: &str,
        switch: Switch,
        actor: &str,
    ) -> Result<(), AppError> {
        let current = self.trips().await?;
        let mut next = current.clone();
        next.trips
            .retain(|t| !(t.rule == rule && t.switch == switch));
        if next.trips.len() == current.trips.len() {
            return Err(AppError::Conflict(
                "No such trip; nothing was removed.".into(),
            ));
        }
        self.save_trips(current.version, next, rule, switch, "removed", actor)
            .await
    }

    async fn save_trips(
        &self,
        expected: u64,
        mut next: Trips,
        rule: &str,
        switch: Switch,
        change: &str,
        actor: &str,
    ) -> Result<(), AppError> {
        let now = self.clock.now();
        next.version = expected + 1;
        let payload = serde_json::json!({"switch": switch, "rule": rule, "change": change});
        let record = self.settings_record(AUDIT_ACTION, payload, actor, now);
        let ttl = self.ttls.settings_days;
        if store::save(&self.store, &next, expected, &record, now, ttl).await? {
            Ok(())
        } else {
            Err(AppError::Conflict(
                "The trips changed meanwhile; nothing was changed. Reload and try again.".into(),
            ))
        }
    }

    /// Acts on the trips of alert `alert_id`, which fired in `episode` (`why`: the rule's
    /// figures and window, in words): each tripped switch goes to its safe position. Once
    /// per switch and episode across consoles: whichever gets there first acts, any other
    /// (or a retry, or a takeover of the message) finds that switch's trip done. Answers
    /// the switches this call moved.
    pub async fn trip(
        &self,
        alert_id: &str,
        episode: i64,
        why: &str,
    ) -> Result<Vec<Switch>, ChangeError> {
        let tripped: Vec<Switch> = self
            .trips()
            .await?
            .trips
            .iter()
            .filter(|t| rule_covers(&t.rule, alert_id))
            .map(|t| t.switch)
            .collect();
        // A reason is at most 500 characters: the rule's words are cut to fit.
        let why: String = why.chars().take(400).collect();
        let mut moved = Vec::new();
        for switch in Switch::ALL.into_iter().filter(|s| tripped.contains(s)) {
            if self.trip_one(switch, alert_id, episode, &why).await? {
                moved.push(switch);
            }
        }
        Ok(moved)
    }

    /// One switch's trip for one episode: true when this call moved the switch.
    async fn trip_one(
        &self,
        switch: Switch,
        alert_id: &str,
        episode: i64,
        why: &str,
    ) -> Result<bool, ChangeError> {
        for _ in 0..5 {
            let now = self.clock.now();
            let current = self.load().await?;
            let once = store::once_per_episode(&self.store, alert_id, episode, switch)?;
            // Already safe: the episode is marked tripped for the switch, nothing else changes.
            if current.get(switch).enabled == switch.safe() {
                once.commit(&self.store).await?;
                return Ok(false);
            }
            let req = to_safety(switch, current.version, alert_id, why);
            let id = random_hex(8);
            let origin = Origin {
                actor: SYSTEM,
                idempotency_key: "",
                action_id: &id,
            };
            let writes = match self.prepare_at(&req, &origin, now).await {
                Ok((_, writes)) => writes,
                // Changed since it was read: read again.
                Err(ChangeError::App(AppError::Conflict(_))) => continue,
                Err(e) => return Err(e),
            };
            // The change (the switches, its audit record, their copies), then the marker.
            let marker = writes.len();
            let outcome = writes.and(once).commit(&self.store).await?;
            let refused: Vec<usize> = outcome.into_refusals().iter().map(|r| r.index).collect();
            match refused.as_slice() {
                [] => {
                    crate::server::metrics::kill_switch_tripped(switch.key(), "rule");
                    return Ok(true);
                }
                // This switch's trip was done in this episode already, or the episode
                // moved on.
                r if r.contains(&marker) => {
                    tracing::info!(alert = %alert_id, episode, switch = switch.key(), "a trip found its episode done already");
                    return Ok(false);
                }
                // The switches changed meanwhile: read them again.
                _ => continue,
            }
        }
        Err(ChangeError::App(AppError::Conflict(
            "The switches kept changing; the trip will act at the next try.".into(),
        )))
    }
}

/// The change a trip of `alert_id` makes: `switch` to its safe position.
fn to_safety(switch: Switch, version: u64, alert_id: &str, why: &str) -> ChangeRequest {
    ChangeRequest {
        switch,
        enable: switch.safe(),
        expected_version: version,
        reason: format!("{TRIP_REASON}{alert_id} fired: {why}"),
        confirmed: false,
        ends: None,
        emergency: false,
    }
}
