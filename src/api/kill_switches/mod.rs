//! The kill switches' server functions: the page's data, a change, the history, the
//! automation (trips, trigger URLs), and in [`approvals`] four eyes and in [`schedule`]
//! cancelling a change set for later.
// `change_kill_switch` takes a form's fields, one argument each (a post without JavaScript
// names them): more than clippy's seven since timed and scheduled changes.
#![allow(clippy::too_many_arguments)]

mod approvals;
mod schedule;

pub use approvals::*;
pub use schedule::*;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::kill_switches::{ChangeAnswer, HistoryPage, KillSwitches, Scheduled, Switch};
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
    /// Requests waiting for a second admin (docs/switches.md, "Approvals").
    pub pending: usize,
    /// Whether the reader may skip the approval in an emergency (only when approvals are
    /// required).
    pub can_skip: bool,
    /// How many changes are set for later (docs/switches.md, "Scheduled changes").
    pub scheduled: usize,
}

/// What moves the switches without a person: the trips (everyone sees them), for admins
/// the trigger URLs, and the changes set for later. Its own server function, read by the Kill switches page only
/// (the Overview reads [`KillSwitchesView`]: none of this weighs on its code).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillSwitchAutomation {
    pub trips: Vec<TripView>,
    /// Empty for anyone but an admin.
    pub triggers: Vec<TriggerView>,
    /// The changes set for later, soonest first (docs/switches.md, "Scheduled changes"):
    /// they too move a switch without a person at their time.
    pub schedule: Vec<Scheduled>,
    /// Whether the reader may change them.
    pub can_change: bool,
    /// A fresh key for this page's trip, trigger and cancel forms.
    pub form_key: String,
}

#[server]
pub async fn load_kill_switches() -> Result<KillSwitchesView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let ks = &state.kill_switches;
    let admin = user.role.allows(Role::Admin);
    // Read once: the count of pending approvals is against these switches.
    let switches = ks.shown().await?;
    let version = switches.version;
    Ok(KillSwitchesView {
        switches,
        can_change: admin,
        form_key: crate::server::ids::random_hex(16),
        // A count on the side: the page (and its form that turns safety on) works without
        // it.
        pending: ks.approvals_at(version).await.map_or_else(
            |e| {
                tracing::warn!(error = %e, "the pending approvals were not read");
                0
            },
            |a| a.len(),
        ),
        can_skip: admin && ks.approvals_required() && ks.may_skip_approval(&user.name),
        scheduled: ks.schedule().await.map_or_else(
            |e| {
                tracing::warn!(error = %e, "the schedule was not read");
                0
            },
            |s| s.len(),
        ),
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
        schedule: state.kill_switches.schedule().await?,
        can_change: admin,
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Attaches (`op` = `attach`) or removes (`remove`) the trip of alert rule `rule` on
/// `switch`; an attached trip of a rule judged per scope may name one `scope`.
#[server]
pub async fn change_kill_switch_trip(
    op: String,
    rule: String,
    #[server(default)] scope: Option<String>,
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
    let rule = match scope.as_deref().map(str::trim) {
        Some(scope) if !scope.is_empty() => format!("{}:{scope}", rule.trim()),
        _ => rule.trim().to_string(),
    };
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
    // Ticked "skip the approval" (an emergency admin's form only).
    #[server(default)] emergency: Option<String>,
    // A time to set the change for (UTC); empty: now.
    #[server(default)] at: Option<String>,
    idempotency_key: String,
) -> Result<ChangeAnswer, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::kill_switches::ChangeRequest;
    let user = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let at = crate::server::domain::kill_switches::schedule::parse_at(at.as_deref())?;
    let req = ChangeRequest::from_form(
        &switch,
        &enable,
        expected_version,
        reason,
        confirm.as_deref(),
        for_minutes.as_deref(),
        emergency.as_deref(),
    )?;
    let changed = state
        .kill_switches
        .change_once(&state.idempotency, &req, at, &idempotency_key, &user.name)
        .await?;
    if let Some(words) = &changed.announce {
        let id = format!(
            "kill_switches.emergency#{}",
            changed.answer.switches.version
        );
        state.alerts.notify(&id, words, "/kill-switches").await;
    }
    Ok(changed.answer)
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
