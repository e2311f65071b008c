//! Ending timed changes (docs/switches.md, "Changes that end on their own"). Every console
//! looks every [`EVERY`]; the first to see a timed change past its end writes the switch
//! back, with its audit record, in one transaction conditioned on the version it read. So a
//! revert happens once across consoles (the others' writes find a newer version and do
//! nothing), a console that dies after writing leaves nothing undone, one that dies before
//! leaves it to the next look, and a newer change of the switch (which took its timer away)
//! is never undone.

use std::time::Duration;

use super::{audit_record, Origin, Switches};
use crate::model::kill_switches::Switch;
use crate::server::domain::kill_switches::timers;
use crate::server::metrics;
use crate::server::services::alerts::Alerts;
use crate::server::store::kill_switches::{self as store, Commit};
use crate::server::store::StoreError;

/// How often every console looks for a timed change that has ended.
pub const EVERY: Duration = Duration::from_secs(5);

/// A timed change this console ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Reverted {
    pub switch: Switch,
    /// The version the revert wrote.
    pub version: u64,
    /// "Safe mode turned back on: the change by alice at 2026-11-26 14:02 UTC ended".
    pub words: String,
}

impl Switches {
    /// Ends every timed change whose end has come; answers with those this console ended.
    pub async fn revert_due(&self) -> Result<Vec<Reverted>, StoreError> {
        let now = self.clock.now();
        let mut current = store::load(&self.store, now).await?;
        metrics::kill_switches(&current);
        // A copy that cannot be mended now is mended at a later look; the reverts go on.
        if let Err(e) =
            store::mend_copies(&self.store, &current, now, self.ttls.settings_days).await
        {
            tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "kill switch copies could not be mended; trying again");
        }
        let mut done = Vec::new();
        for switch in Switch::ALL {
            if !timers::due(&current, now).contains(&switch) {
                continue;
            }
            let next = timers::revert(&current, switch, now);
            let action_id = format!("revert-{}-v{}", switch.key(), current.version);
            let origin = Origin {
                actor: timers::SYSTEM,
                idempotency_key: "",
                action_id: &action_id,
            };
            let reason = next.get(switch).reason.clone().unwrap_or_default();
            let days = self.ttls.audit_days;
            let item = audit_record(switch, &origin, &current, &next, reason, now, days, None);
            let ttl = self.ttls.settings_days;
            match store::commit(&self.store, &next, current.version, &item, now, ttl).await? {
                Commit::Done => {
                    // Two consoles that end it at the same moment write the same state, and
                    // the one whose write lost finds it stored, as after a lost answer: one
                    // marker per revert decides which of them announces it.
                    let marker = format!("kill_switch_revert_{}_v{}", switch.key(), next.version);
                    let announce = store::mark_once(&self.store, &marker, now).await?;
                    let st = next.get(switch).clone();
                    current = next;
                    if !announce {
                        continue;
                    }
                    let words = format!(
                        "{} turned back {}: {}",
                        switch.label(),
                        if st.enabled { "on" } else { "off" },
                        st.reason
                            .as_deref()
                            .unwrap_or_default()
                            .trim_start_matches("reverted: ")
                    );
                    tracing::info!(
                        switch = switch.key(),
                        version = current.version,
                        "timed kill-switch change ended"
                    );
                    metrics::kill_switch_reverted(switch.key());
                    done.push(Reverted {
                        switch,
                        version: current.version,
                        words,
                    });
                }
                // Another console ended it first, or a person changed the switches: what is
                // stored now decides the next switch.
                Commit::Stale(stored) => current = *stored,
            }
        }
        Ok(done)
    }

    /// Ends timed changes and runs scheduled ones every [`EVERY`] until the task is
    /// stopped, announcing each one this console ended or ran on the alert channels.
    pub async fn run_reverts(&self, alerts: Alerts) {
        loop {
            match self.run_schedule_due().await {
                Ok(ran) => {
                    for words in ran {
                        let id = format!(
                            "kill_switches.schedule#{}",
                            crate::server::ids::random_hex(4)
                        );
                        alerts.notify(&id, &words, "/kill-switches").await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "running scheduled changes failed; trying again");
                }
            }
            match self.revert_due().await {
                Ok(done) => {
                    for r in done {
                        let id = format!("kill_switches.revert#{}", r.version);
                        alerts.notify(&id, &r.words, "/kill-switches").await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "looking for ended timed changes failed; trying again");
                }
            }
            tokio::time::sleep(EVERY).await;
        }
    }
}
