//! Scheduled changes (docs/switches.md, "Scheduled changes"): cancelling one (they are set
//! with the change form's `at`, and listed on the automation page).

use leptos::prelude::*;

use crate::model::AppError;

/// Cancels the scheduled change `id`, with `reason`.
#[server]
pub async fn cancel_kill_switch_change(
    id: String,
    reason: String,
    idempotency_key: String,
) -> Result<String, AppError> {
    use crate::api::submission::{self, Submission};
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::kill_switches::ChangeId;
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    let id = ChangeId::parse(&id)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "kill_switches.cancel",
        form_key: &idempotency_key,
        values: KeyInputs::new()
            .id("id", id.as_str())
            .text("reason", &reason),
    };
    let now = state.clock.now();
    let ks = &state.kill_switches;
    submission::once_words(&state, sub, |_| async {
        let (words, writes) = ks
            .prepare_cancel(id.as_str(), &reason, &admin.name, now)
            .await
            .map_err(AppError::from)?;
        Ok((writes, words))
    })
    .await
}
