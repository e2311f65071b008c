//! The Outbox's server functions: read the outbox, move held ones and dead letters (one,
//! or in bulk over a filter); and the Receiver page's: read and set up the receiver.

use leptos::prelude::*;

use crate::model::outbox::{JobView, OutboxView, ReceiverDetail};
use crate::model::AppError;

/// The outbox: counts, dead letters by cause, one group's list (`due`, `held`, `dead`,
/// `delivered`; one conversation's when `conversation` names one by its reference),
/// the jobs and the receiver.
#[server]
pub async fn load_outbox(
    group: String,
    cause: String,
    // Absent from a page of an older release (a rolling deployment): every conversation.
    #[server(default)] conversation: String,
    cursor: Option<String>,
) -> Result<OutboxView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::store::events::outbox_reads::Filter;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let filter = Filter {
        cause: Some(cause.trim().to_string()).filter(|c| !c.is_empty()),
        ..Filter::default()
    };
    let cursor = cursor.filter(|c| !c.is_empty());
    let refs = state.answer_refs(&user.name, &[&conversation], &[]).await?;
    state
        .events
        .outbox_page(
            group.trim(),
            filter,
            &conversation,
            cursor.as_deref(),
            &refs,
            user.role,
        )
        .await
}

/// Starts a bulk redrive, release or discard of a group (`held`, `dead`), narrowed to
/// one cause when given; answers what it started, in words (the page follows the job's
/// progress in the list of jobs).
#[server]
pub async fn start_outbox_job(
    op: String,
    group: String,
    cause: String,
    reason: String,
    form_key: String,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::idempotency::sent_keys::FormKey;
    use crate::server::services::events::outbox::{job_op, BulkRequest};
    use crate::server::store::events::outbox_reads::Filter;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let form_key = FormKey::parse(&form_key)?.to_string();
    let req = BulkRequest {
        op: job_op(&op)?,
        filter: Filter {
            // A cause is a few words (`http 503`, `timeout`): a longer one matches none.
            cause: Some(cause.trim().chars().take(64).collect::<String>())
                .filter(|c| !c.is_empty()),
            ..Filter::default()
        },
        reason,
        actor: user.name,
        form_key,
    };
    let j = state.events.start_bulk(group.trim(), req).await?;
    Ok(format!(
        "Started: {} of {} {} ({}).",
        j.op, j.total, j.group, j.reason
    ))
}

/// A job as it stands.
#[server]
pub async fn outbox_job(id: String) -> Result<JobView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    ctx::state()?.events.job(id.trim()).await
}

/// Releases, redrives or discards one action (`action` is the row's reference).
#[server]
pub async fn move_action(
    action: String,
    op: String,
    reason: String,
    form_key: String,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::idempotency::sent_keys::FormKey;
    use crate::server::services::events::outbox::job_op;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    if reason.trim().is_empty() {
        return Err(AppError::invalid("reason", "Say why."));
    }
    let op = job_op(&op)?;
    let form_key = FormKey::parse(&form_key)?;
    let moved = state
        .events
        .move_one(&action, op, &reason, &user.name, &form_key, &state.refs)
        .await?;
    Ok(if moved {
        format!("Done: {}.", op.as_str())
    } else {
        "It had moved meanwhile; nothing was changed.".into()
    })
}

/// The receiver `receiver` (absent: `default`) as the reader's role may see it, with its
/// limits, every receiver's name and the routes, for its own page.
#[server]
pub async fn load_receiver(
    #[server(default)] receiver: Option<String>,
) -> Result<ReceiverDetail, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    let mut detail = ctx::state()?
        .events
        .receiver_detail(user.role, &name)
        .await?;
    detail.receiver.form_key = crate::server::ids::random_hex(16);
    Ok(detail)
}

/// Saves a receiver's URL, whether delivery to it is on, and the limits every console
/// keeps to (left as they were when the form has none). The first save makes its first
/// secret, shown once; a named receiver's first save adds it.
#[server]
pub async fn save_receiver(
    url: String,
    enabled: Option<String>,
    version: i64,
    #[server(default)] rate: Option<String>,
    #[server(default)] burst: Option<String>,
    #[server(default)] concurrency: Option<String>,
    #[server(default)] receiver: Option<String>,
) -> Result<Option<String>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::limits;
    use crate::server::services::events::receiver::{Change, Settings};
    let user = ctx::require(Role::Admin)?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    let change = Change::Settings(Settings {
        url,
        enabled: enabled.is_some(),
        limits: limits::of_form(rate, burst, concurrency)?,
    });
    ctx::state()?
        .events
        .change_receiver(&name, change, version, &user.name)
        .await
}

/// Routes the action type `action_type` to the receiver `receiver` (admins), if the
/// routes are still at `version`: side effects queued after it go there.
#[server]
pub async fn save_route(
    action_type: String,
    receiver: String,
    version: i64,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Admin)?;
    let name = crate::model::outbox::ReceiverName::parse(&receiver)?;
    ctx::state()?
        .events
        .set_route(&action_type, &name, version, &user.name)
        .await?;
    Ok(format!(
        "Routed: {} side effects queued from now go to {}.",
        action_type.trim(),
        name.as_str()
    ))
}

/// A new signing secret beside the others (rotation): shown once.
#[server]
pub async fn add_receiver_secret(
    version: i64,
    #[server(default)] receiver: Option<String>,
) -> Result<Option<String>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::receiver::Change;
    let user = ctx::require(Role::Admin)?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    ctx::state()?
        .events
        .change_receiver(&name, Change::AddSecret, version, &user.name)
        .await
}

/// A secret stops signing.
#[server]
pub async fn retire_receiver_secret(
    id: String,
    version: i64,
    #[server(default)] receiver: Option<String>,
) -> Result<Option<String>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::receiver::Change;
    let user = ctx::require(Role::Admin)?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    ctx::state()?
        .events
        .change_receiver(&name, Change::RetireSecret { id }, version, &user.name)
        .await
}

/// Sends a signed test message to the receiver and says, in words, how it answered
/// (its status and time, never what it wrote back).
#[server]
pub async fn test_receiver(
    #[server(default)] receiver: Option<String>,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Admin)?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    let t = ctx::state()?
        .events
        .test_receiver(&name, &user.name)
        .await?;
    Ok(format!(
        "Test message {}: {} in {} ms.",
        t.webhook_id, t.outcome, t.ms
    ))
}

/// Pauses the deliveries to the receiver, or ends the pause `pause_id` (operators), with a
/// reason: while paused, side effects wait in the outbox, their schedules unspent. An
/// empty `pause_id` pauses; a resume names the pause the page showed.
#[server]
pub async fn pause_receiver(
    pause_id: String,
    reason: String,
    form_key: String,
    #[server(default)] receiver: Option<String>,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::pause::PauseId;
    use crate::server::services::idempotency::KeyInputs;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    let resume = match pause_id.trim() {
        "" => None,
        id => Some(PauseId::parse(id)?),
    };
    let sub = crate::api::submission::Submission {
        actor: &user.name,
        scope: "receiver.pause",
        form_key: &form_key,
        values: KeyInputs::new()
            .id("pause_id", resume.as_ref().map_or("", PauseId::as_str))
            .text("reason", &reason)
            .id("receiver", name.as_str()),
    };
    let now = state.clock.now();
    let events = &state.events;
    crate::api::submission::once_words(&state, sub, |_| async {
        let (words, writes) = match &resume {
            None => {
                events
                    .prepare_pause(&name, &reason, &user.name, now)
                    .await?
            }
            Some(id) => {
                events
                    .prepare_resume(&name, id, &reason, &user.name, now)
                    .await?
            }
        };
        Ok((writes, words))
    })
    .await
}

/// Opens the receiver's breaker, or closes the opening `breaker_id` (operators), with a
/// reason: while open, side effects park and a probe goes now and then; a close sends
/// them again in their order. An empty `breaker_id` opens; a close names the opening the
/// page showed.
#[server]
pub async fn receiver_breaker(
    breaker_id: String,
    reason: String,
    form_key: String,
    #[server(default)] receiver: Option<String>,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::events::breaker::BreakerId;
    use crate::server::services::idempotency::KeyInputs;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let name = crate::model::outbox::ReceiverName::parse(receiver.as_deref().unwrap_or_default())?;
    let close = match breaker_id.trim() {
        "" => None,
        id => Some(BreakerId::parse(id)?),
    };
    let sub = crate::api::submission::Submission {
        actor: &user.name,
        scope: "receiver.breaker",
        form_key: &form_key,
        values: KeyInputs::new()
            .id("breaker_id", close.as_ref().map_or("", BreakerId::as_str))
            .text("reason", &reason)
            .id("receiver", name.as_str()),
    };
    let now = state.clock.now();
    let events = &state.events;
    crate::api::submission::once_words(&state, sub, |_| async {
        let (words, writes) = match &close {
            None => {
                events
                    .prepare_breaker_open_by(&name, &reason, &user.name, now)
                    .await?
            }
            Some(id) => {
                events
                    .prepare_breaker_close(&name, id, &reason, &user.name, now)
                    .await?
            }
        };
        Ok((writes, words))
    })
    .await
}
