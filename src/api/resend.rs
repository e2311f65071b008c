//! The Receiver page's resend of a time window (docs/events.md, "Resend a time window"):
//! count what a window holds, then send it again with a reason.

use leptos::prelude::*;

use crate::model::outbox::ResendCount;
use crate::model::AppError;

/// How many side effects of `group` (`delivered`, `dead`, `discarded`), `action_type`
/// (empty: every kind) and `receiver` (absent: every receiver) entered it between `since`
/// and `until` (UTC): what a resend would send.
#[server]
pub async fn count_resend(
    group: String,
    action_type: String,
    since: String,
    until: String,
    #[server(default)] receiver: Option<String>,
) -> Result<ResendCount, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::resend::ResendScope;
    ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let scope = ResendScope::parse(&group, &action_type, &since, &until, state.clock.now())?
        .of_receiver(receiver.as_deref())?;
    state.events.count_resend(&scope).await
}

/// Sends that window again (operators, with a reason), each side effect once, under its own
/// `webhook-id`: a job the Outbox follows. The same form twice starts one job.
#[server]
pub async fn start_resend(
    group: String,
    action_type: String,
    since: String,
    until: String,
    reason: String,
    form_key: String,
    #[server(default)] receiver: Option<String>,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::idempotency::sent_keys::FormKey;
    use crate::server::services::events::resend::{ResendScope, Resender};
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let form_key = FormKey::parse(&form_key)?.to_string();
    let scope = ResendScope::parse(&group, &action_type, &since, &until, state.clock.now())?
        .of_receiver(receiver.as_deref())?;
    state
        .events
        .start_resend(
            &scope,
            &reason,
            &Resender {
                actor: &user.name,
                admin: user.role.allows(Role::Admin),
            },
            &form_key,
        )
        .await
}
