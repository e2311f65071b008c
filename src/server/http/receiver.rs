//! `/api/v1/receiver`: incident tooling reads the receiver's state, pauses and resumes its
//! deliveries, opens and closes its breaker, and resends a time window (docs/events.md),
//! under the same rules as the Receiver page.

use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::extract::{JsonBody, ReceiverRead, ReceiverWrite, Scoped};
use super::idempotency::{self, ClaimedKey};
use super::problem::{Problem, ProblemResponse};
use crate::model::outbox::{ReceiverName, ReceiverView};
use crate::model::users::Role;
use crate::server::contract::receiver::{
    ActionsQuery, BreakerChange, PauseChange, ReceiverAction, ReceiverActions, ReceiverChanged,
    ReceiverQuery, ReceiverState, ReceiverTry, ResendCounted, ResendRequest, ResendStarted,
    ResendWindow,
};
use crate::server::services::events::breaker::BreakerId;
use crate::server::services::events::controls::Control;
use crate::server::services::events::pause::PauseId;
use crate::server::services::events::resend::{ResendScope, Resender};
use crate::server::state::AppState;

const BASE: &str = "/api/v1/receiver";

pub fn routes(state: &AppState) -> Router<AppState> {
    let write = || from_fn_with_state(state.clone(), idempotency::require_key);
    Router::new()
        .route(BASE, get(receiver))
        .route(&format!("{BASE}/actions"), get(actions))
        .route(&format!("{BASE}/pause"), post(pause).route_layer(write()))
        .route(
            &format!("{BASE}/breaker"),
            post(breaker).route_layer(write()),
        )
        .route(&format!("{BASE}/resends/count"), get(count_resend))
        .route(
            &format!("{BASE}/resends"),
            post(resend).route_layer(write()),
        )
}

/// The state in one word, from what the Receiver page shows.
fn state_word(v: &ReceiverView) -> &'static str {
    match (&v.waits, v.source.as_str()) {
        (_, "none") => "none",
        _ if !v.enabled => "off",
        (Some(w), _) if w.breaker_id.is_some() => "breaker_open",
        (Some(w), _) if w.pause_id.is_some() => "paused",
        (Some(_), _) => "backing_off",
        (None, _) => "delivering",
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/receiver",
    tag = "receiver",
    params(ReceiverQuery),
    responses(
        (status = 200, description = "OK", body = ReceiverState),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:read"])),
)]
/// A receiver's deliveries (`default`'s unless `receiver` names another): delivering,
/// paused, backing off, breaker open, off; with every receiver's name and the routes.
pub(crate) async fn receiver(
    State(state): State<AppState>,
    _auth: Scoped<ReceiverRead>,
    Query(q): Query<ReceiverQuery>,
) -> Result<Json<ReceiverState>, Problem> {
    let name = ReceiverName::parse(q.receiver.as_deref().unwrap_or_default())?;
    let (detail, depth) = state.events.receiver_state(Role::Viewer, &name).await?;
    let (v, limits) = (detail.receiver, detail.limits);
    let health = v.health.clone().unwrap_or_default();
    let waits = v.waits.clone().unwrap_or_default();
    let parked = if waits.breaker_id.is_some() {
        depth.n
    } else {
        0
    };
    Ok(Json(ReceiverState {
        receiver: detail.name,
        receivers: detail.names,
        routes: detail.route_types.into_iter().zip(detail.routes).collect(),
        state: state_word(&v).into(),
        waits: Some(waits.words).filter(|w| !w.is_empty()),
        pause_id: waits.pause_id,
        breaker_id: waits.breaker_id,
        rate_per_second: limits.rate,
        burst: limits.burst(),
        concurrency: limits.concurrency,
        url: v.url,
        attempts_last_hour: health.attempts_last_hour,
        delivered_last_hour: health.delivered_last_hour,
        last_error: health.last_error,
        queue_depth: depth.n,
        queue_depth_exact: depth.exact,
        parked,
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/receiver/actions",
    tag = "receiver",
    params(ActionsQuery),
    responses(
        (status = 200, description = "OK", body = ReceiverActions),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:read"])),
)]
/// A receiver's side effects in one group (`due` unless `group` names another), 25 a page,
/// each with its status in words and its attempts: what the Outbox lists, for one receiver.
pub(crate) async fn actions(
    State(state): State<AppState>,
    _auth: Scoped<ReceiverRead>,
    Query(q): Query<ActionsQuery>,
) -> Result<Json<ReceiverActions>, Problem> {
    let name = ReceiverName::parse(q.receiver.as_deref().unwrap_or_default())?;
    let group = q.group.unwrap_or_default();
    let cursor = q.cursor.filter(|c| !c.is_empty());
    let (group, rows, next) = state
        .events
        .receiver_actions(&name, group.trim(), cursor.as_deref(), &state.refs)
        .await?;
    let actions = rows
        .into_iter()
        .map(|r| ReceiverAction {
            key: r.key,
            action_type: r.action_type,
            target: r.target,
            conversation: r.conversation_id,
            status: r.status,
            status_words: r.status_words,
            attempts: r.attempts,
            result: r.result,
            next_try: r.next_try,
            created_at: r.created_at,
            tries: r
                .tries
                .into_iter()
                .map(|t| ReceiverTry {
                    n: t.n,
                    at: t.at,
                    ms: t.ms,
                    result: t.result,
                })
                .collect(),
        })
        .collect();
    Ok(Json(ReceiverActions {
        receiver: name.as_str().into(),
        group: group.into(),
        actions,
        next,
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/receiver/pause",
    tag = "receiver",
    request_body(content = PauseChange, content_type = "application/json"),
    params(("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")),
    responses(
        (status = 200, description = "Paused, or resumed", body = ReceiverChanged),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:write"])),
)]
/// Pauses the deliveries (no `pause_id`) or resumes the pause `pause_id`, with a reason:
/// side effects wait in the outbox, nothing of their schedules spent.
pub(crate) async fn pause(
    State(state): State<AppState>,
    auth: Scoped<ReceiverWrite>,
    JsonBody(body): JsonBody<PauseChange>,
) -> Result<Json<ReceiverChanged>, Problem> {
    // Absent: a pause. Present, even empty, names the pause to end (an empty one is a
    // 400, never a pause a client did not ask for).
    let control = match body.pause_id.as_deref() {
        None => Control::Pause,
        Some(id) => Control::Resume(PauseId::parse(id.trim())?),
    };
    let name = ReceiverName::parse(body.receiver.as_deref().unwrap_or_default())?;
    let actor = format!("api:{}", auth.principal.name);
    let words = state
        .events
        .control(&name, &control, &body.reason, &actor)
        .await?;
    Ok(Json(ReceiverChanged { words }))
}

#[utoipa::path(
    post,
    path = "/api/v1/receiver/breaker",
    tag = "receiver",
    request_body(content = BreakerChange, content_type = "application/json"),
    params(("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")),
    responses(
        (status = 200, description = "Opened, or closed", body = ReceiverChanged),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:write"])),
)]
/// Opens the breaker (no `breaker_id`) or closes the opening `breaker_id`, with a reason:
/// while open, side effects park and one probe goes now and then.
pub(crate) async fn breaker(
    State(state): State<AppState>,
    auth: Scoped<ReceiverWrite>,
    JsonBody(body): JsonBody<BreakerChange>,
) -> Result<Json<ReceiverChanged>, Problem> {
    let control = match body.breaker_id.as_deref() {
        None => Control::OpenBreaker,
        Some(id) => Control::CloseBreaker(BreakerId::parse(id.trim())?),
    };
    let name = ReceiverName::parse(body.receiver.as_deref().unwrap_or_default())?;
    let actor = format!("api:{}", auth.principal.name);
    let words = state
        .events
        .control(&name, &control, &body.reason, &actor)
        .await?;
    Ok(Json(ReceiverChanged { words }))
}

#[utoipa::path(
    get,
    path = "/api/v1/receiver/resends/count",
    tag = "receiver",
    params(ResendWindow),
    responses(
        (status = 200, description = "OK", body = ResendCounted),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:read"])),
)]
/// How many side effects a resend of the window would send: count before you resend.
pub(crate) async fn count_resend(
    State(state): State<AppState>,
    _auth: Scoped<ReceiverRead>,
    Query(w): Query<ResendWindow>,
) -> Result<Json<ResendCounted>, Problem> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let scope = ResendScope::parse(
        &text(&w.group),
        &text(&w.action_type),
        &text(&w.since),
        &text(&w.until),
        state.clock.now(),
    )?
    .of_receiver(w.receiver.as_deref())?;
    let c = state.events.count_resend(&scope).await?;
    Ok(Json(ResendCounted {
        n: c.n,
        words: c.words,
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/receiver/resends",
    tag = "receiver",
    request_body(content = ResendRequest, content_type = "application/json"),
    params(("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")),
    responses(
        (status = 202, description = "The job started; the Outbox page follows it", body = ResendStarted),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["receiver:write"])),
)]
/// Sends the window's side effects again, each once, under its own `webhook-id`, as a job
/// any console works: one job per `Idempotency-Key`.
pub(crate) async fn resend(
    State(state): State<AppState>,
    auth: Scoped<ReceiverWrite>,
    Extension(ClaimedKey(key)): Extension<ClaimedKey>,
    JsonBody(body): JsonBody<ResendRequest>,
) -> Result<Response, Problem> {
    let scope = ResendScope::parse(
        body.group.as_deref().unwrap_or_default(),
        body.action_type.as_deref().unwrap_or_default(),
        &body.since,
        &body.until,
        state.clock.now(),
    )?
    .of_receiver(body.receiver.as_deref())?;
    let actor = format!("api:{}", auth.principal.name);
    let words = state
        .events
        .start_resend(
            &scope,
            &body.reason,
            &Resender {
                actor: &actor,
                admin: false,
            },
            &key,
        )
        .await?;
    Ok((StatusCode::ACCEPTED, Json(ResendStarted { words })).into_response())
}
