//! `POST /api/v1/events`: the helpdesk's webhook.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::Json;

use super::extract::{EventsWrite, JsonBody, Scoped};
use super::problem::{Problem, ProblemResponse};
use crate::server::contract::events::{Event, EventAnswer, PlannedEffect};
use crate::server::domain::events::ingest::{IngestError, Outcome};
use crate::server::domain::events::Incoming;
use crate::server::state::AppState;

/// The helpdesk webhook's body limit.
pub const EVENT_BODY_LIMIT: usize = 256 * 1024;

#[utoipa::path(
    post,
    path = "/api/v1/events",
    tag = "events",
    request_body(content = Event, content_type = "application/json"),
    responses(
        (status = 200, description = "Processed now, or a duplicate delivery", body = EventAnswer),
        (status = 409, response = ProblemResponse),
        (status = 503, response = ProblemResponse)
    ),
    security(("api_key" = ["events:write"])),
)]
/// The helpdesk posts each customer message here (scope `events:write`). It is processed
/// before the answer: 200 means it is durably recorded; a duplicate delivery answers 200
/// with `"duplicate": true` and does nothing else.
pub(crate) async fn post_event(
    State(state): State<AppState>,
    auth: Scoped<EventsWrite>,
    JsonBody(body): JsonBody<Event, EVENT_BODY_LIMIT>,
) -> Result<Json<EventAnswer>, Problem> {
    let principal = &auth.principal;
    let incoming = Incoming::try_from(body)?;
    let actor = format!("api:{}", principal.name);
    match state.ingest.ingest(&incoming, &actor).await {
        Ok(Outcome::Processed {
            record,
            decision,
            actions,
        }) => Ok(Json(EventAnswer {
            event_key: record.event_id,
            duplicate: false,
            status: record.status,
            mode: Some(decision.mode),
            safe_mode: Some(record.safe_mode),
            intent: Some(decision.intent),
            team: Some(decision.team),
            confidence: Some(decision.confidence),
            tags: Some(decision.tags),
            risk_flags: Some(decision.risk_flags),
            actions: Some(
                actions
                    .into_iter()
                    .map(|a| PlannedEffect {
                        action_type: a.action_type,
                        target: a.target,
                        key: a.key,
                        result: a.result,
                    })
                    .collect(),
            ),
        })),
        Ok(Outcome::Duplicate { record }) => Ok(Json(EventAnswer {
            event_key: record.event_id,
            duplicate: true,
            status: record.status,
            intent: record.intent,
            mode: None,
            safe_mode: None,
            team: None,
            confidence: None,
            tags: None,
            risk_flags: None,
            actions: None,
        })),
        Err(IngestError::InProgress { retry_after }) => {
            Err(Problem::from(crate::model::AppError::InProgress {
                retry_after_secs: retry_after as u64,
            }))
        }
        Err(e @ (IngestError::DeliveryFailed(_) | IngestError::SimulatedCrash)) => {
            Err(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "retry-later",
                "Retry later",
                e.to_string(),
            )
            .header(header::RETRY_AFTER, "5")
            .with("retry_after", 5))
        }
        Err(IngestError::Store(e)) => Err(e.into()),
    }
}
