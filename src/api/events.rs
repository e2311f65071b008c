use leptos::prelude::*;

use crate::model::events::{AuditRows, EventPage, EventStats, OutboxRow, StateView};
use crate::model::AppError;

/// Recent events, newest first (today, then yesterday), or one conversation's events.
#[server]
pub async fn list_events(
    conversation: String,
    cursor: Option<String>,
) -> Result<EventPage, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::events::views};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    views::events(
        &state.store,
        &state.refs,
        conversation.trim(),
        cursor.as_deref(),
        state.clock.now(),
    )
    .await
}

/// Table B for one conversation.
#[server]
pub async fn conversation_state(conversation: String) -> Result<StateView, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::events::views};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    views::state_view(&state.store, &state.refs, conversation.trim()).await
}

/// Audit records by conversation, by action type, or by day (and time range), newest
/// first, cursor-paged.
#[server]
pub async fn list_audit(
    conversation: String,
    action_type: String,
    day: String,
    from: String,
    to: String,
    cursor: Option<String>,
) -> Result<AuditRows, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::events::views};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let cursor = cursor.filter(|c| !c.is_empty());
    let filter = views::AuditFilter {
        conversation: conversation.trim(),
        action_type: action_type.trim(),
        day: day.trim(),
        from: from.trim(),
        to: to.trim(),
    };
    views::audit(
        &state.store,
        &state.refs,
        &filter,
        cursor.as_deref(),
        state.clock.now(),
    )
    .await
}

#[server]
pub async fn list_outbox() -> Result<Vec<OutboxRow>, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::events::views};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    views::outbox(&state.store, &state.refs).await
}

#[server]
pub async fn load_event_stats() -> Result<EventStats, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::events::views};
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let mut stats = views::stats(&state.store, state.clock.now()).await?;
    stats.webhook = state.ingest.webhook_url();
    Ok(stats)
}
