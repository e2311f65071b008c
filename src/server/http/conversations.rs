//! The conversations API for channel processors (docs/conversations.md): create from a
//! Context Object, append messages, move the status, find by company number and recipient.
//! Write responses carry no personal data (the idempotency layer keeps them).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use super::extract::{ConversationsRead, ConversationsWrite, JsonBody, Scoped};
use super::idempotency;
use super::problem::{Problem, ProblemResponse};
use crate::server::contract::conversations::{
    Appended, ContextObject, Conversation, ConversationChanges, ConversationRef, Created, Lookup,
    LookupQuery, NewMessage, Updated,
};
use crate::server::domain::conversations::ids::{ConversationId, PrimaryChannel};
use crate::server::services::conversations::context::{CONTEXT_BODY_LIMIT, MESSAGE_BODY_LIMIT};
use crate::server::services::conversations::{search, AppendOutcome, CreateOutcome};
use crate::server::state::AppState;

/// A conversation's key from the path, within DynamoDB's key sizes (else 400).
/// The conversation a path names, checked.
fn key_of_path(pc: String, id: String) -> Result<(PrimaryChannel, ConversationId), Problem> {
    Ok((PrimaryChannel::parse(pc)?, ConversationId::parse(id)?))
}

/// The idempotency layer wraps the methods each route serves, so a method it does not
/// serve is a 405 before anything is claimed.
pub fn routes(state: &AppState) -> Router<AppState> {
    let keyed = || from_fn_with_state(state.clone(), idempotency::optional_key);
    Router::new()
        .route("/api/v1/conversations", post(create).route_layer(keyed()))
        .route("/api/v1/conversations/lookup", get(lookup))
        .route(
            "/api/v1/conversations/{primary_channel}/{conversation_id}",
            get(read).patch(update).route_layer(keyed()),
        )
        .route(
            "/api/v1/conversations/{primary_channel}/{conversation_id}/messages",
            post(append).route_layer(keyed()),
        )
}

#[utoipa::path(
    post,
    path = "/api/v1/conversations",
    tag = "conversations",
    request_body(content = ContextObject, content_type = "application/json"),
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of this request return the first answer")
    ),
    responses(
        (status = 201, description = "Created", body = Created),
        (status = 200, description = "It existed with the same content", body = Created)
    ),
    security(("api_key" = ["conversations:write"])),
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    _auth: Scoped<ConversationsWrite>,
    JsonBody(body): JsonBody<ContextObject, CONTEXT_BODY_LIMIT>,
) -> Result<Response, Problem> {
    let now = state.clock.now();
    let (status, created, c) = match state.conversations.create(body, now).await? {
        CreateOutcome::Created(c) => (StatusCode::CREATED, true, c),
        CreateOutcome::Existing(c) => (StatusCode::OK, false, c),
    };
    if created {
        tracing::info!(channel = %c.channel_method, company = %c.company_id, "conversation created");
    }
    Ok((
        status,
        Json(Created {
            created,
            conversation_status: c.conversation_status.as_str().to_string(),
            message_count: c.message_count,
        }),
    )
        .into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/conversations/{primary_channel}/{conversation_id}",
    tag = "conversations",
    params(
        ("primary_channel" = PrimaryChannel, Path),
        ("conversation_id" = ConversationId, Path)
    ),
    responses(
        (status = 200, description = "OK", body = Conversation),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["conversations:read"])),
)]
pub(crate) async fn read(
    State(state): State<AppState>,
    _auth: Scoped<ConversationsRead>,
    Path((pc, id)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let (pc, id) = key_of_path(pc, id)?;
    let c = state.conversations.get(&pc, &id).await?;
    let mut v = serde_json::to_value(&c).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        // Our own bookkeeping, not attributes the Channel Router knows.
        m.remove("context_sha256");
        m.remove("item_bytes");
    }
    Ok(Json(v).into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/conversations/{primary_channel}/{conversation_id}/messages",
    tag = "conversations",
    request_body(content = NewMessage, content_type = "application/json"),
    params(
        ("primary_channel" = PrimaryChannel, Path),
        ("conversation_id" = ConversationId, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of this request return the first answer")
    ),
    responses(
        (status = 201, description = "Created", body = Appended),
        (status = 200, description = "This entry id was appended before", body = Appended),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["conversations:write"])),
)]
pub(crate) async fn append(
    State(state): State<AppState>,
    _auth: Scoped<ConversationsWrite>,
    Path((pc, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<NewMessage, MESSAGE_BODY_LIMIT>,
) -> Result<Response, Problem> {
    let (pc, id) = key_of_path(pc, id)?;
    match state
        .conversations
        .append(&pc, &id, body, state.clock.now())
        .await?
    {
        AppendOutcome::Added { message_count } => Ok((
            StatusCode::CREATED,
            Json(Appended {
                appended: true,
                message_count: Some(message_count),
                duplicate: None,
            }),
        )
            .into_response()),
        AppendOutcome::Duplicate => Ok(Json(Appended {
            appended: false,
            message_count: None,
            duplicate: Some(true),
        })
        .into_response()),
    }
}

#[utoipa::path(
    patch,
    path = "/api/v1/conversations/{primary_channel}/{conversation_id}",
    tag = "conversations",
    request_body(content = ConversationChanges, content_type = "application/json"),
    params(
        ("primary_channel" = PrimaryChannel, Path),
        ("conversation_id" = ConversationId, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of this request return the first answer")
    ),
    responses(
        (status = 200, description = "OK", body = Updated),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["conversations:write"])),
)]
pub(crate) async fn update(
    State(state): State<AppState>,
    _auth: Scoped<ConversationsWrite>,
    Path((pc, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<ConversationChanges, CONTEXT_BODY_LIMIT>,
) -> Result<Response, Problem> {
    let (pc, id) = key_of_path(pc, id)?;
    let c = state
        .conversations
        .update(&pc, &id, body, state.clock.now())
        .await?;
    Ok(Json(Updated {
        conversation_status: c.conversation_status.as_str().to_string(),
        task_complete: c.task_complete == 1,
        hand_off_to_human: c.hand_off_to_human,
        function_call: c.function_call,
        updated_at: c.updated_at,
    })
    .into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/conversations/lookup",
    tag = "conversations",
    params(
        ("channel" = String, Query, description = "whatsapp, sms or email"),
        ("company_number" = String, Query),
        ("recipient" = String, Query)
    ),
    responses(
        (status = 200, description = "OK", body = Lookup)
    ),
    security(("api_key" = ["conversations:read"])),
)]
/// Reply linking: the conversations a company's sending number (or address) has with a
/// recipient, newest index order first page.
pub(crate) async fn lookup(
    State(state): State<AppState>,
    _auth: Scoped<ConversationsRead>,
    Query(q): Query<LookupQuery>,
) -> Result<Response, Problem> {
    let partition = search::lookup(q)?;
    let found = state.conversations.lookup(&partition).await?;
    let rows: Vec<_> = found
        .rows
        .iter()
        .map(|c| ConversationRef {
            primary_channel: c.primary_channel.clone(),
            conversation_id: c.conversation_id.clone(),
            conversation_status: c.conversation_status.as_str().to_string(),
            channel_method: c.channel_method.clone(),
            created_at: c.created_at.clone(),
            updated_at: c.updated_at.clone(),
        })
        .collect();
    Ok(Json(Lookup {
        conversations: rows,
        more: found.next.is_some(),
    })
    .into_response())
}
