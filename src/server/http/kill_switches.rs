//! `GET`/`POST /api/v1/kill-switches`: the middleware's workers read the switches, and
//! incident tooling may flip one, under the console's rules.

use axum::extract::State;
use axum::Json;

use super::extract::{JsonBody, Scoped, SwitchesRead, SwitchesWrite};
use super::problem::Problem;
use crate::model::kill_switches::KillSwitches;
use crate::model::AppError;
use crate::server::contract::kill_switches::{SwitchChange, Switches};
use crate::server::domain::kill_switches::ChangeRequest;
use crate::server::ids::random_hex;
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
    Ok(answer(&state.kill_switches.load().await?))
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
        (status = 200, description = "OK", body = Switches)
    ),
    security(("api_key" = ["switches:write"])),
)]
/// Incident tooling may flip a switch too (scope `switches:write`), with the same rules as
/// the console: a reason, a confirmation for the risky directions, the version it saw, and
/// an `Idempotency-Key`. A change in a risky direction may be timed (`for_minutes` or
/// `ends_at`): the switch goes back towards safety then, once, whichever console is up.
pub(crate) async fn change_kill_switch(
    State(state): State<AppState>,
    auth: Scoped<SwitchesWrite>,
    JsonBody(body): JsonBody<SwitchChange>,
) -> Result<Json<Switches>, Problem> {
    let req = ChangeRequest::try_from(body)?;
    let actor = format!("api:{}", auth.principal.name);
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
    Ok(answer(&next))
}
