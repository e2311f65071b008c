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
}

#[server]
pub async fn load_kill_switches() -> Result<KillSwitchesView, AppError> {
    use crate::model::auth::Role;
    use crate::server::{ctx, store::switches};
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let switches = switches::load(&state.store, state.clock.now()).await?;
    Ok(KillSwitchesView {
        switches,
        can_change: user.role.allows(Role::Admin),
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
) -> Result<KillSwitches, AppError> {
    use crate::model::auth::Role;
    use crate::model::switches::Switch;
    use crate::server::domain::kill_switches::{change, ChangeRequest, Ttls};
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
    let now = state.clock.now();
    let action_id = ids::random_hex(8);
    let next = change(
        &state.store,
        &req,
        &user.name,
        &action_id,
        &ttls,
        now,
        &action_id,
    )
    .await?;
    tracing::info!(actor = %user.name, switch = req.switch.key(), enabled = req.enable, version = next.version, "kill switch changed");
    Ok(next)
}

#[server]
pub async fn kill_switch_history(cursor: Option<String>) -> Result<HistoryPage, AppError> {
    use crate::model::auth::Role;
    use crate::server::{ctx, domain::kill_switches};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    Ok(kill_switches::history(&state.store, cursor.as_deref(), 10).await?)
}
