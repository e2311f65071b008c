use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::kill_switches::{HistoryPage, KillSwitches, Switch};
use crate::model::users::OneTime;
use crate::model::AppError;

/// A trip as the page shows it: when an alert of `rule` fires, `switch` goes to its safe
/// position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TripView {
    pub rule: String,
    pub switch: Switch,
    /// Who attached it and when (RFC 3339).
    pub made_by: String,
    pub made_at: String,
}

/// A switch's trigger URL as the page shows it (never its secret).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriggerView {
    pub switch: Switch,
    /// Who made the one in use and when (RFC 3339); `None`: the switch has none.
    pub made: Option<(String, String)>,
}

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

/// What moves the switches without a person: the trips (everyone sees them) and, for
/// admins, the trigger URLs. Its own server function, read by the Kill switches page only
/// (the Overview reads [`KillSwitchesView`]: none of this weighs on its code).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillSwitchAutomation {
    pub trips: Vec<TripView>,
    /// Empty for anyone but an admin.
    pub triggers: Vec<TriggerView>,
    /// Whether the reader may change them.
    pub can_change: bool,
    /// A fresh key for this page's trip and trigger forms.
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

#[server]
pub async fn load_kill_switch_automation() -> Result<KillSwitchAutomation, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let admin = user.role.allows(Role::Admin);
    let triggers = if admin {
        let stored = state.kill_switches.triggers().await?;
        Switch::ALL
            .into_iter()
            .map(|switch| TriggerView {
                switch,
                made: stored
                    .get(switch)
                    .map(|t| (t.made_by.clone(), t.made_at.clone())),
            })
            .collect()
    } else {
        Vec::new()
    };
    let trips = state
        .kill_switches
        .trips()
        .await?
        .trips
        .into_iter()
        .map(|t| TripView {
            rule: t.rule,
            switch: t.switch,
            made_by: t.made_by,
            made_at: t.made_at,
        })
        .collect();
    Ok(KillSwitchAutomation {
        trips,
        triggers,
        can_change: admin,
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Attaches (`op` = `attach`) or removes (`remove`) the trip of alert rule `rule` on
/// `switch`.
#[server]
pub async fn change_kill_switch_trip(
    op: String,
    rule: String,
    switch: String,
    idempotency_key: String,
) -> Result<String, AppError> {
    use crate::api::submission::{self, Submission};
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let switch = Switch::parse(&switch)?;
    let attach = match op.as_str() {
        "attach" => true,
        "remove" => false,
        _ => return Err(AppError::invalid("op", "Expected attach or remove.")),
    };
    let rule = rule.trim().to_string();
    let sub = Submission {
        actor: &admin.name,
        scope: "kill_switches.trip",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("op", &op)
            .id("rule", &rule)
            .id("switch", switch.key()),
    };
    let ks = &state.kill_switches;
    submission::once(&state, sub, |_| async {
        if attach {
            ks.attach_trip(&rule, switch, &admin.name).await?;
        } else {
            ks.remove_trip(&rule, switch, &admin.name).await?;
        }
        Ok(serde_json::json!({ "ok": true }))
    })
    .await?;
    let effect = switch.trip_effect();
    Ok(if attach {
        format!("When {rule} fires, {effect}.")
    } else {
        format!("{}: the trip on {rule} is removed.", switch.label())
    })
}

/// Makes (or rotates) `switch`'s trigger URL; the URL, with its secret, is shown once.
#[server]
pub async fn rotate_kill_switch_trigger(
    switch: String,
    idempotency_key: String,
) -> Result<OneTime, AppError> {
    use crate::api::submission::Submission;
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let switch = Switch::parse(&switch)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "kill_switches.rotate_trigger",
        form_key: &idempotency_key,
        values: KeyInputs::new().id("switch", switch.key()),
    };
    let done = format!(
        "{}'s trigger URL is ready; any earlier one stopped working.",
        switch.label()
    );
    let base = state
        .config
        .operations
        .public_url
        .trim_end_matches('/')
        .to_string();
    super::users::once_with_secret(sub, done, || async {
        let secret = state
            .kill_switches
            .rotate_trigger(switch, &admin.name)
            .await?;
        Ok(format!("{base}/api/v1/kill-switches/triggers/{secret}"))
    })
    .await
}

/// Revokes `switch`'s trigger URL at once.
#[server]
pub async fn revoke_kill_switch_trigger(
    switch: String,
    idempotency_key: String,
) -> Result<String, AppError> {
    use crate::api::submission::{self, Submission};
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let switch = Switch::parse(&switch)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "kill_switches.revoke_trigger",
        form_key: &idempotency_key,
        values: KeyInputs::new().id("switch", switch.key()),
    };
    submission::once(&state, sub, |_| async {
        state
            .kill_switches
            .revoke_trigger(switch, &admin.name)
            .await?;
        Ok(serde_json::json!({ "ok": true }))
    })
    .await?;
    Ok(format!(
        "{}'s trigger URL is revoked: calls with it change nothing from now on.",
        switch.label()
    ))
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
