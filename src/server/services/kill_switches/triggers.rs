//! Trigger URLs (docs/switches.md, "Trigger URLs"): per switch, a secret URL an outside
//! monitor calls to move the switch to its safe position. Made (or rotated) by an admin and
//! shown once; only its hash is kept; revoked at once.

use super::{ChangeError, Origin, Switches};
use crate::model::kill_switches::Switch;
use crate::model::AppError;
use crate::server::crypto::sha256_hex;
use crate::server::domain::kill_switches::triggers::{self, Call, SECRET_PREFIX};
use crate::server::domain::kill_switches::ChangeRequest;
use crate::server::ids::random_hex;
use crate::server::store::kill_switch_triggers::{self as store, Trigger, Triggers, AUDIT_ACTION};
use crate::server::store::StoreError;

/// What a call to a trigger URL did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Triggered {
    pub switch: Switch,
    /// False: the switch was in its safe position already, or the alert resolved.
    pub changed: bool,
    /// The switches' version afterwards.
    pub version: u64,
}

/// A call that names no trigger (a wrong, revoked or malformed secret): a 401.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error("no trigger has this secret")]
    Unknown,
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Switches {
    /// Both switches' triggers as stored (hashes, who made them, when).
    pub async fn triggers(&self) -> Result<Triggers, StoreError> {
        store::load(&self.store, self.clock.now()).await
    }

    /// Makes a new trigger secret for `switch`, replacing any it had (which stops working at
    /// once); answers with the secret, the only time it is known.
    pub async fn rotate_trigger(&self, switch: Switch, actor: &str) -> Result<String, AppError> {
        let secret = format!("{SECRET_PREFIX}{}", random_hex(32));
        let made = Trigger {
            secret_sha256: sha256_hex(secret.as_bytes()),
            made_by: actor.to_string(),
            made_at: crate::server::clock::iso(self.clock.now()),
        };
        let rotated = self.triggers().await?.get(switch).is_some();
        let change = if rotated { "rotated" } else { "made" };
        self.save_trigger(switch, Some(made), change, actor).await?;
        Ok(secret)
    }

    /// Revokes `switch`'s trigger: a call with its secret changes nothing from now on.
    pub async fn revoke_trigger(&self, switch: Switch, actor: &str) -> Result<(), AppError> {
        if self.triggers().await?.get(switch).is_none() {
            return Err(AppError::Conflict(format!(
                "{} has no trigger URL; nothing was revoked.",
                switch.label()
            )));
        }
        self.save_trigger(switch, None, "revoked", actor).await
    }

    async fn save_trigger(
        &self,
        switch: Switch,
        trigger: Option<Trigger>,
        change: &str,
        actor: &str,
    ) -> Result<(), AppError> {
        let now = self.clock.now();
        let current = self.triggers().await?;
        let mut next = current.clone();
        next.set(switch, trigger);
        next.version = current.version + 1;
        let payload = serde_json::json!({"switch": switch, "change": change});
        let record = self.settings_record(AUDIT_ACTION, payload, actor, now);
        let ttl = self.ttls.settings_days;
        if store::save(&self.store, &next, current.version, &record, now, ttl).await? {
            tracing::info!(actor = %actor, switch = switch.key(), change, "kill switch trigger changed");
            Ok(())
        } else {
            Err(AppError::Conflict(
                "The trigger URLs changed meanwhile; nothing was changed. Reload and try again."
                    .into(),
            ))
        }
    }

    /// A call to a trigger URL with `secret` and `body`: the switch it names goes to its
    /// safe position (once: a repeat finds it there), unless the alert resolved.
    pub async fn trigger(&self, secret: &str, body: &[u8]) -> Result<Triggered, TriggerError> {
        if !triggers::well_formed(secret) {
            return Err(TriggerError::Unknown);
        }
        let hash = sha256_hex(secret.as_bytes());
        let stored = self.triggers().await?;
        let switch = Switch::ALL
            .into_iter()
            .find(|s| stored.get(*s).is_some_and(|t| t.secret_sha256 == hash))
            .ok_or(TriggerError::Unknown)?;
        let call: Call = triggers::read(body).map_err(ChangeError::App)?;
        // A change by someone else in between (a version conflict) is read again: the safe
        // position does not depend on the version.
        for _ in 0..5 {
            if let Some(done) = self.trigger_once(switch, &call).await? {
                return Ok(done);
            }
        }
        // Busy, not refused: a monitor (Alertmanager) tries a 5xx again, and must.
        Err(ChangeError::App(AppError::Unavailable {
            retry_after_secs: 1,
        })
        .into())
    }

    /// One try of a call: what it did, or `None` when the switches changed under it (read
    /// again).
    async fn trigger_once(
        &self,
        switch: Switch,
        call: &Call,
    ) -> Result<Option<Triggered>, TriggerError> {
        let now = self.clock.now();
        let current = self.load().await?;
        let unchanged = Triggered {
            switch,
            changed: false,
            version: current.version,
        };
        if !call.firing {
            return Ok(Some(unchanged));
        }
        let episode = match &call.episode {
            Some(e) => Some(store::episode_once(&self.store, switch, e, now)?),
            None => None,
        };
        if current.get(switch).enabled == switch.safe() {
            // Safe already: the episode is seen all the same, so a person who turns
            // safety off while it still fires is not overruled by its next repeat.
            if let Some(seen) = episode {
                seen.commit(&self.store).await?;
            }
            return Ok(Some(unchanged));
        }
        let writes = match self.to_safety(switch, current.version, call, now).await {
            Ok(writes) => writes,
            Err(ChangeError::App(AppError::Conflict(_))) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // The change (the switches, its audit record, their copies), then the episode's
        // marker.
        let marker = writes.len();
        let writes = match episode {
            Some(seen) => writes.and(seen),
            None => writes,
        };
        let refused: Vec<usize> = writes
            .commit(&self.store)
            .await?
            .into_refusals()
            .iter()
            .map(|r| r.index)
            .collect();
        match refused.as_slice() {
            [] => {
                crate::server::metrics::kill_switch_tripped(switch.key(), "trigger");
                let next = self.load().await?;
                Ok(Some(Triggered {
                    switch,
                    changed: true,
                    version: next.version,
                }))
            }
            // This episode moved the switch already (a repeat, another console): a
            // person's change since stands.
            r if r.contains(&marker) => Ok(Some(unchanged)),
            // The switches changed meanwhile: read them again.
            _ => Ok(None),
        }
    }

    /// The writes that move `switch` (at `version`) to its safe position for `call`.
    async fn to_safety(
        &self,
        switch: Switch,
        version: u64,
        call: &Call,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<crate::server::store::tx::Writes, ChangeError> {
        let req = ChangeRequest {
            switch,
            enable: switch.safe(),
            expected_version: version,
            reason: call.reason(),
            confirmed: false,
            ends: None,
            emergency: false,
        };
        let id = random_hex(8);
        let origin = Origin {
            actor: triggers::ACTOR,
            idempotency_key: "",
            action_id: &id,
        };
        Ok(self.prepare_at(&req, &origin, now).await?.1)
    }
}
