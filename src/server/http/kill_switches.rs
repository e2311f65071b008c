//! `GET`/`POST /api/v1/kill-switches`: the middleware's workers read the switches, and
//! incident tooling may flip one, under the console's rules.

use axum::extract::{Path, State};
use axum::Json;

use super::extract::{JsonBody, Scoped, SwitchesRead, SwitchesWrite};
use super::problem::Problem;
use crate::model::kill_switches::KillSwitches;
use crate::model::AppError;
use crate::server::contract::kill_switches::{
    ApprovalRequested, ChangeScheduled, PendingRequests, Schedule, ScheduleCancel,
    ScheduleCancelled, SwitchChange, Switches, Triggered, TripRule, TripRuleChoice, Trips,
};
use crate::server::domain::kill_switches::approvals::Route;
use crate::server::domain::kill_switches::ChangeRequest;
use crate::server::ids::random_hex;
use crate::server::services::kill_switches::triggers::TriggerError;
use crate::server::services::kill_switches::Origin;
use crate::server::state::AppState;

fn answer(s: &KillSwitches) -> Json<Switches> {
    Json(Switches {
        safe_mode: s.safe_mode.enabled,
        automation_enabled: s.automation_enabled.enabled,
        version: s.version,
        safe_mode_ends_at: s.safe_mode.ends_at.clone(),
        automation_enabled_ends_at: s.automation_enabled.ends_at.clone(),
    })
}

#[utoipa::path(
    get,
    path = "/api/v1/kill-switches",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = Switches)
    ),
    security(("api_key" = ["switches:read"])),
)]
/// The middleware's workers read the switches before acting (docs/events.md).
pub(crate) async fn kill_switches(
    State(state): State<AppState>,
    _auth: Scoped<SwitchesRead>,
) -> Result<Json<Switches>, Problem> {
    Ok(answer(&state.kill_switches.shown().await?))
}

#[utoipa::path(
    post,
    path = "/api/v1/kill-switches",
    tag = "console",
    request_body(content = SwitchChange, content_type = "application/json"),
    params(
        ("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")
    ),
    responses(
        (status = 200, description = "Changed", body = Switches),
        (status = 202, description = "Waits for a second admin's approval in the console (approvals required), or set for `at` (a `ChangeScheduled`): nothing changed yet", body = ApprovalRequested)
    ),
    security(("api_key" = ["switches:write"])),
)]
/// Incident tooling may flip a switch too (scope `switches:write`), with the same rules as
/// the console: a reason, a confirmation for the risky directions, the version it saw, and
/// an `Idempotency-Key`. A change in a risky direction may be timed (`for_minutes` or
/// `ends_at`): the switch goes back towards safety then, once, whichever console is up.
/// With approvals required, such a change is a request (202) that an admin approves in the
/// console: an API key is never the second pair of eyes, and never skips them.
pub(crate) async fn change_kill_switch(
    State(state): State<AppState>,
    auth: Scoped<SwitchesWrite>,
    JsonBody(body): JsonBody<SwitchChange>,
) -> Result<axum::response::Response, Problem> {
    use axum::response::IntoResponse;
    let at = crate::server::domain::kill_switches::schedule::parse_at(body.at.as_deref())?;
    let req = ChangeRequest::try_from(body)?;
    let actor = format!("api:{}", auth.principal.name);
    if let Some(at) = at {
        let made = state
            .kill_switches
            .schedule_change(&req, at, &actor)
            .await
            .map_err(AppError::from)?;
        let body = ChangeScheduled {
            status: "scheduled".into(),
            scheduled: made.into(),
        };
        return Ok((axum::http::StatusCode::ACCEPTED, Json(body)).into_response());
    }
    if state.kill_switches.route(&req, &actor)? == Route::Request {
        let made = state
            .kill_switches
            .request_change(&req, &actor, Some(&auth.principal.created_by))
            .await
            .map_err(AppError::from)?;
        let body = ApprovalRequested {
            status: "awaiting_approval".into(),
            request: made.into(),
        };
        return Ok((axum::http::StatusCode::ACCEPTED, Json(body)).into_response());
    }
    let key = random_hex(8);
    let origin = Origin {
        actor: &actor,
        idempotency_key: &key,
        action_id: &key,
    };
    let next = state
        .kill_switches
        .change(&req, &origin)
        .await
        .map_err(AppError::from)?;
    Ok(answer(&next).into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/kill-switches/schedule",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = Schedule)
    ),
    security(("api_key" = ["switches:read"])),
)]
/// The changes set for later (docs/switches.md, "Scheduled changes"), soonest first. Set
/// one with `at` on `POST /api/v1/kill-switches`; a client cancels its own with `POST
/// /api/v1/kill-switches/schedule/cancel`, an admin any in the console.
pub(crate) async fn kill_switch_schedule(
    State(state): State<AppState>,
    _auth: Scoped<SwitchesRead>,
) -> Result<Json<Schedule>, Problem> {
    let pending = state.kill_switches.schedule().await?;
    Ok(Json(Schedule {
        scheduled: pending.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/kill-switches/schedule/cancel",
    tag = "console",
    request_body(content = ScheduleCancel, content_type = "application/json"),
    params(
        ("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")
    ),
    responses(
        (status = 200, description = "Cancelled (403: set by someone else, a client cancels only its own; 409: no longer set)", body = ScheduleCancelled)
    ),
    security(("api_key" = ["switches:write"])),
)]
/// A client cancels a change it set for later (`at` on `POST /api/v1/kill-switches`), with
/// a reason; an admin cancels any in the console.
pub(crate) async fn cancel_scheduled_change(
    State(state): State<AppState>,
    auth: Scoped<SwitchesWrite>,
    JsonBody(body): JsonBody<ScheduleCancel>,
) -> Result<Json<ScheduleCancelled>, Problem> {
    let actor = format!("api:{}", auth.principal.name);
    let message = state
        .kill_switches
        .cancel_own(body.id.trim(), &body.reason, &actor)
        .await
        .map_err(AppError::from)?;
    Ok(Json(ScheduleCancelled {
        status: "cancelled".into(),
        message,
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/kill-switches/approvals",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = PendingRequests)
    ),
    security(("api_key" = ["switches:read"])),
)]
/// The changes waiting for a second admin's approval (docs/switches.md, "Approvals"). They
/// are approved or rejected in the console, by a person.
pub(crate) async fn kill_switch_approvals(
    State(state): State<AppState>,
    _auth: Scoped<SwitchesRead>,
) -> Result<Json<PendingRequests>, Problem> {
    let requests = state.kill_switches.approvals().await?;
    Ok(Json(PendingRequests {
        requests: requests.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/kill-switches/trips",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = Trips)
    ),
    security(("api_key" = ["switches:read"])),
)]
/// The trips (docs/switches.md, "Trips"): which alert rule moves which switch to its safe
/// position when it fires, and the rules a trip may name. They are attached and removed in
/// the console, by an admin; trigger URLs are not listed here.
pub(crate) async fn kill_switch_trips(
    State(state): State<AppState>,
    _auth: Scoped<SwitchesRead>,
) -> Result<Json<Trips>, Problem> {
    use crate::model::kill_switches::{trip_rule_words, TRIP_RULES};
    let trips = state.kill_switches.trips().await?;
    Ok(Json(Trips {
        trips: trips
            .trips
            .into_iter()
            .map(|t| TripRule {
                rule_label: trip_rule_words(&t.rule),
                rule: t.rule,
                switch: t.switch.key().to_string(),
                made_by: t.made_by,
                made_at: t.made_at,
            })
            .collect(),
        rules: TRIP_RULES
            .iter()
            .map(|r| TripRuleChoice {
                rule: r.rule.to_string(),
                label: r.words.to_string(),
                per_scope: r.per_scope,
                driven_by: r.driven_by.to_string(),
            })
            .collect(),
    }))
}

/// Largest body a trigger URL reads (Alertmanager's payload of a large group fits).
const TRIGGER_BODY_LIMIT: usize = 256 * 1024;

#[utoipa::path(
    post,
    path = "/api/v1/kill-switches/triggers/{secret}",
    tag = "console",
    params(
        ("secret" = String, Path, description = "The switch's trigger secret, as shown once when it was made")
    ),
    request_body(content = Object, content_type = "application/json", description = "Optional: Prometheus Alertmanager's webhook payload (a resolved alert changes nothing), or any JSON, or nothing"),
    responses(
        (status = 200, description = "Done: the switch is in its safe position (changed says whether this call moved it)", body = Triggered),
        (status = 401, description = "No trigger has this secret (wrong, rotated or revoked): nothing changed")
    ),
    security(()),
)]
/// An outside monitor moves a switch to its safe position (safe mode on, automation off)
/// through the switch's secret trigger URL: no API key, the URL is the credential. A repeat
/// (Alertmanager resends) finds the switch there and changes nothing.
pub(crate) async fn trigger(
    State(state): State<AppState>,
    Path(secret): Path<String>,
    body: axum::body::Body,
) -> Result<Json<Triggered>, Problem> {
    pull(&state, &secret, body).await
}

#[utoipa::path(
    post,
    path = "/api/v1/kill-switches/triggers",
    tag = "console",
    params(
        ("Authorization" = String, Header, description = "`Bearer <secret>`: the switch's trigger secret, as shown once when it was made")
    ),
    request_body(content = Object, content_type = "application/json", description = "Optional: Prometheus Alertmanager's webhook payload (a resolved alert changes nothing), or any JSON, or nothing"),
    responses(
        (status = 200, description = "Done: the switch is in its safe position (changed says whether this call moved it)", body = Triggered),
        (status = 401, description = "No trigger has this secret (wrong, rotated or revoked): nothing changed")
    ),
    security(()),
)]
/// The same call with the secret in the `Authorization` header instead of the path, for a
/// monitor that can send one (Alertmanager's `http_config.authorization`): the secret then
/// stays out of every proxy's and load balancer's access log.
pub(crate) async fn trigger_by_header(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<Triggered>, Problem> {
    let secret = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    pull(&state, secret.trim(), body).await
}

/// A trigger call with `secret`, whichever way it came.
async fn pull(
    state: &AppState,
    secret: &str,
    body: axum::body::Body,
) -> Result<Json<Triggered>, Problem> {
    // A malformed secret is refused before the body is read; read no further than the
    // limit: an unauthenticated caller must not make the console buffer more.
    if !crate::server::domain::kill_switches::triggers::well_formed(secret) {
        return Err(unknown_secret());
    }
    let body = super::extract::read_body(body, TRIGGER_BODY_LIMIT).await?;
    match state.kill_switches.trigger(secret, &body).await {
        Ok(t) => Ok(Json(Triggered {
            switch: t.switch.key().to_string(),
            changed: t.changed,
            version: t.version,
        })),
        Err(TriggerError::Unknown) => Err(unknown_secret()),
        Err(TriggerError::Change(e)) => Err(AppError::from(e).into()),
        Err(TriggerError::Store(e)) => Err(e.into()),
    }
}

fn unknown_secret() -> Problem {
    Problem::unauthorized(
        "No trigger has this secret: it is wrong, or was rotated or revoked. Nothing changed.",
    )
}
