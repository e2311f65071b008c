//! `GET`/`POST /api/v1/kill-switches`: the middleware's workers read the switches, and
//! incident tooling may flip one, under the console's rules.

use axum::extract::State;
use axum::Json;

use super::extract::{JsonBody, Scoped, SwitchesRead, SwitchesWrite};
use super::problem::Problem;
use crate::model::switches::KillSwitches;
use crate::server::contract::switches::{SwitchChange, Switches};
use crate::server::domain::switches::{change, ChangeRequest, Ttls};
use crate::server::state::AppState;
use crate::server::store::switches;

fn answer(s: &KillSwitches) -> Json<Switches> {
    Json(Switches {
        safe_mode: s.safe_mode.enabled,
        automation_enabled: s.automation_enabled.enabled,
        version: s.version,
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
/// The middleware's workers read the switches before acting (design doc 1, section 3).
pub(crate) async fn kill_switches(
    State(state): State<AppState>,
    _auth: Scoped<SwitchesRead>,
) -> Result<Json<Switches>, Problem> {
    Ok(answer(
        &switches::load(&state.store, state.clock.now()).await?,
    ))
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
/// an `Idempotency-Key`.
pub(crate) async fn change_kill_switch(
    State(state): State<AppState>,
    auth: Scoped<SwitchesWrite>,
    JsonBody(body): JsonBody<SwitchChange>,
) -> Result<Json<Switches>, Problem> {
    let principal = &auth.principal;
    let req = ChangeRequest::try_from(body)?;
    let ttls = Ttls {
        audit_days: state.config.ttl.audit_days,
        settings_days: state.config.ttl.settings_days,
    };
    let actor = format!("api:{}", principal.name);
    let key = crate::server::ids::random_hex(8);
    let next = change(
        &state.store,
        &req,
        &actor,
        &key,
        &ttls,
        state.clock.now(),
        &key,
    )
    .await
    .map_err(crate::model::AppError::from)?;
    tracing::info!(actor = %actor, switch = req.switch.key(), enabled = req.enable, version = next.version, "kill switch changed");
    Ok(answer(&next))
}
