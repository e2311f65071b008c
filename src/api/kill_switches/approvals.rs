//! Four eyes (docs/switches.md, "Approvals"): the requests waiting for a second admin, and
//! their decision.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::kill_switches::Approval;
use crate::model::AppError;

/// The approvals page's data: the requests waiting for a second admin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillSwitchApprovals {
    pub requests: Vec<Approval>,
    /// The reader's name (their own requests they may only withdraw) when they may decide.
    pub decider: Option<String>,
    pub form_key: String,
}

#[server]
pub async fn load_kill_switch_approvals() -> Result<KillSwitchApprovals, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    Ok(KillSwitchApprovals {
        requests: state.kill_switches.approvals().await?,
        decider: user.role.allows(Role::Admin).then(|| user.name.clone()),
        form_key: crate::server::ids::random_hex(16),
    })
}

/// Approves or rejects (`decision`) the request `id`, with `reason`.
#[server]
pub async fn decide_kill_switch_approval(
    id: String,
    decision: String,
    reason: String,
    idempotency_key: String,
) -> Result<String, AppError> {
    use crate::api::submission::{self, Submission};
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::kill_switches::approvals::Decision;
    use crate::server::domain::kill_switches::ChangeId;
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let decision = Decision::parse(&decision)?;
    let id = ChangeId::parse(&id)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "kill_switches.decide",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("id", id.as_str())
            .id("decision", decision.as_str())
            .text("reason", &reason),
    };
    let ks = &state.kill_switches;
    let now = state.clock.now();
    // The decision, its records and the form's key in one transaction: a retry after a
    // lost answer gets this answer again.
    let words = submission::once_words(&state, sub, |_| async {
        let (decided, writes) = ks
            .prepare_decision(id.as_str(), decision, &reason, &admin.name, now)
            .await
            .map_err(AppError::from)?;
        Ok((writes, decided.words))
    })
    .await?;
    crate::server::metrics::kill_switch_approval(decision.past());
    Ok(words)
}
