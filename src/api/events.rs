use leptos::prelude::*;

use crate::model::events::{EventPage, EventStats, StateView, Timeline};
use crate::model::AppError;

/// Recent events, newest first (today, then yesterday), or one conversation's events.
#[server]
pub async fn list_events(
    conversation: String,
    cursor: Option<String>,
) -> Result<EventPage, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let refs = state.answer_refs(&me.name, &[&conversation], &[]).await?;
    let cursor = cursor.filter(|c| !c.is_empty());
    state
        .events
        .list(&refs, conversation.trim(), cursor.as_deref())
        .await
}

/// Table B for one conversation.
#[server]
pub async fn conversation_state(conversation: String) -> Result<StateView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let refs = state.answer_refs(&me.name, &[&conversation], &[]).await?;
    state
        .events
        .conversation_state(&refs, conversation.trim())
        .await
}

/// One conversation's timeline: events, decisions, side effects and where they are.
#[server]
pub async fn conversation_timeline(conversation: String) -> Result<Timeline, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let refs = state.answer_refs(&me.name, &[&conversation], &[]).await?;
    state.events.timeline(&refs, conversation.trim()).await
}

/// Overview's event figures.
#[server]
pub async fn load_event_stats() -> Result<EventStats, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    state.events.stats(user.role).await
}
