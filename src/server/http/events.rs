//! `POST /api/v1/events`: the helpdesk's webhook.

use axum::extract::State;
use axum::Json;

use super::extract::{EventsWrite, JsonBody, Scoped};
use super::problem::{Problem, ProblemResponse};
use crate::model::AppError;
use crate::server::contract::events::{Event, EventAnswer, PlannedEffect};
use crate::server::domain::events::Incoming;
use crate::server::services::events::{ActionOutcome, IngestError, Outcome};
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
    let incoming = Incoming::try_from(body)?;
    let actor = format!("api:{}", auth.principal.name);
    let outcome = state.events.ingest(&incoming, &actor).await?;
    Ok(Json(EventAnswer::from(outcome)))
}

impl From<Outcome> for EventAnswer {
    /// A first delivery answers with the whole decision; a duplicate with the record only.
    fn from(outcome: Outcome) -> EventAnswer {
        match outcome {
            Outcome::Processed {
                record,
                decision,
                actions,
            } => EventAnswer {
                event_key: record.event_id,
                duplicate: false,
                status: record.status.as_str().to_string(),
                mode: Some(decision.mode.as_str().to_string()),
                safe_mode: Some(record.safe_mode),
                intent: Some(decision.intent),
                team: Some(decision.team),
                confidence: Some(decision.confidence),
                tags: Some(decision.tags),
                risk_flags: Some(decision.risk_flags),
                actions: Some(actions.into_iter().map(PlannedEffect::from).collect()),
            },
            Outcome::Duplicate { record } => EventAnswer {
                event_key: record.event_id,
                duplicate: true,
                status: record.status.as_str().to_string(),
                intent: record.intent,
                mode: None,
                safe_mode: None,
                team: None,
                confidence: None,
                tags: None,
                risk_flags: None,
                actions: None,
            },
        }
    }
}

impl From<ActionOutcome> for PlannedEffect {
    fn from(a: ActionOutcome) -> PlannedEffect {
        PlannedEffect {
            action_type: a.action_type.as_str().to_string(),
            target: a.target,
            key: a.key,
            result: a.result,
        }
    }
}

impl From<IngestError> for Problem {
    /// Busy (another delivery of the event is being processed): 409 with `Retry-After`.
    fn from(e: IngestError) -> Problem {
        match e {
            IngestError::InProgress { retry_after } => Problem::from(AppError::InProgress {
                retry_after_secs: retry_after as u64,
            }),
            IngestError::Store(e) => e.into(),
        }
    }
}
