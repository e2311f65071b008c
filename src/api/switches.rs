use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::switches::{HistoryPage, KillSwitches};
use crate::model::AppError;

/// The kill switches page's data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillSwitchesView {
    pub switches: KillSwitches,
    /// Whether the signed-in user may change them (the server checks again on change).
    pub can_change: bool,
    /// A fresh idempotency key for the change forms on this page: submitting the same
    /// form twice (double click, refresh, retry) changes the switch once.
    pub form_key: String,
}

#[server]
pub async fn load_kill_switches() -> Result<KillSwitchesView, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, store::switches};
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let switches = switches::load(&state.store, state.clock.now()).await?;
    Ok(KillSwitchesView {
        switches,
        can_change: user.role.allows(Role::Admin),
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Changes one switch. `enable` is `true` or `false`; `expected_version` is the version
/// the page showed; `confirm` is present when the "I confirm" box was ticked.
#[server]
pub async fn change_kill_switch(
    switch: String,
    enable: String,
    expected_version: u64,
    reason: String,
    confirm: Option<String>,
    idempotency_key: String,
) -> Result<KillSwitches, AppError> {
    use crate::model::accounts::Role;
    use crate::model::switches::Switch;
    use crate::server::domain::idempotency::{Call, KeyInputs, Outcome};
    use crate::server::domain::switches::{change, validate, ChangeError, ChangeRequest, Ttls};
    use crate::server::store::switches as stored;
    use crate::server::{ctx, ids};
    let user = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let req = ChangeRequest {
        switch: Switch::parse(&switch)?,
        enable: match enable.as_str() {
            "true" => true,
            "false" => false,
            _ => return Err(AppError::invalid("enable", "Expected true or false.")),
        },
        expected_version,
        reason,
        confirmed: confirm.is_some_and(|c| !c.is_empty()),
    };
    let ttls = Ttls {
        audit_days: state.config.ttl.audit_days,
        settings_days: state.config.ttl.settings_days,
    };
    // Bad input is answered before the key is claimed: fixing it and resubmitting the same
    // form is a new attempt, not a replay.
    validate(&req)?;
    let form_key = idempotency_key.trim();
    if !(16..=128).contains(&form_key.len()) {
        return Err(AppError::invalid(
            "idempotency_key",
            "This form is out of date. Reload the page and try again.",
        ));
    }
    let inputs = KeyInputs::new()
        .id("form_key", form_key)
        .id("actor", &user.name);
    let fingerprint = KeyInputs::new()
        .id("switch", req.switch.key())
        .flag("enable", req.enable)
        .num("expected_version", req.expected_version as i64)
        .text("reason", &req.reason)
        .flag("confirmed", req.confirmed)
        .fingerprint();
    let call = Call {
        tenant: "console",
        scope: SCOPE,
        inputs: &inputs,
        fingerprint: Some(fingerprint),
    };
    let now = state.clock.now();
    let outcome = state
        .idempotency
        .run(&call, |attempt| {
            let (store, req, actor) = (&state.store, &req, &user.name);
            async move {
                let action_id = ids::random_hex(8);
                let next = change(store, req, actor, &attempt.key_hash, &ttls, now, &action_id)
                    .await?;
                tracing::info!(actor = %actor, switch = req.switch.key(), enabled = req.enable, version = next.version, "kill switch changed");
                Ok::<_, ChangeError>(serde_json::json!({"ok": true, "data": {"version": next.version}}))
            }
        })
        .await?;
    match outcome {
        Outcome::Fresh(_) | Outcome::Replayed(_) => {
            Ok(stored::load(&state.store, state.clock.now()).await?)
        }
        // A double click: the first submission is still running; answer with its result.
        Outcome::InProgress { retry_after } => {
            let waited = state
                .idempotency
                .wait(&call, std::time::Duration::from_secs(5))
                .await?;
            match waited {
                Some(_) => Ok(stored::load(&state.store, state.clock.now()).await?),
                None => Err(AppError::InProgress {
                    retry_after_secs: retry_after.as_secs().max(1),
                }),
            }
        }
        Outcome::Failed(e) => Err(e.into()),
        Outcome::Mismatch => Err(AppError::Conflict(
            "This form was already submitted with other values. Reload the page and try again."
                .into(),
        )),
    }
}

/// The idempotency scope of kill-switch changes from the console.
pub const SCOPE: &str = "kill_switches.change";

#[server]
pub async fn kill_switch_history(cursor: Option<String>) -> Result<HistoryPage, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::switches};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    Ok(switches::history(&state.store, cursor.as_deref(), 10).await?)
}
