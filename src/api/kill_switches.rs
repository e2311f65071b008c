use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::kill_switches::{HistoryPage, KillSwitches};
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
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    Ok(KillSwitchesView {
        switches: state.kill_switches.load().await?,
        can_change: user.role.allows(Role::Admin),
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Changes one switch. `enable` is `true` or `false`; `expected_version` is the version
/// the page showed; `confirm` is present when the "I confirm" box was ticked; `for_minutes`
/// (empty for no end) times a change in a risky direction.
#[server]
pub async fn change_kill_switch(
    switch: String,
    enable: String,
    expected_version: u64,
    reason: String,
    confirm: Option<String>,
    // Absent from a page of an older release (a rolling deployment): no end.
    #[server(default)] for_minutes: Option<String>,
    idempotency_key: String,
) -> Result<KillSwitches, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::kill_switches::ChangeRequest;
    let user = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let req = ChangeRequest::from_form(
        &switch,
        &enable,
        expected_version,
        reason,
        confirm.as_deref(),
        for_minutes.as_deref(),
    )?;
    state
        .kill_switches
        .change_once(&state.idempotency, &req, &idempotency_key, &user.name)
        .await
}

#[server]
pub async fn kill_switch_history(cursor: Option<String>) -> Result<HistoryPage, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    Ok(state.kill_switches.history(cursor.as_deref(), 10).await?)
}
