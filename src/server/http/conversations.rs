//! The conversations API for channel processors (design doc 2): create from a Context
//! Object, append messages, move the status, find by company number and recipient.
//! Write responses carry no personal data (the idempotency layer keeps them).

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::api::{read_body, ApiAuth};
use super::idempotency;
use super::openapi::{
    Appended, ContextObject, Conversation, ConversationChanges, Created, Lookup as LookupDoc,
    NewMessage, ProblemResponse, Updated,
};
use super::problem::Problem;
use crate::server::domain::conversations::context::{CONTEXT_BODY_LIMIT, MESSAGE_BODY_LIMIT};
use crate::server::domain::conversations::search::recipient;
use crate::server::domain::conversations::{self as domain, AppendOutcome, CreateOutcome};
use crate::server::domain::fields::parse_json;
use crate::server::state::AppState;
use crate::server::store::conversations::{self as store, Filters, Partition};
use crate::server::store::query::Start;

const READ: &str = "conversations:read";
const WRITE: &str = "conversations:write";

/// A conversation's key from the path, within DynamoDB's key sizes (else 400).
fn key_of_path(pc: &str, id: &str) -> Result<(), Problem> {
    use crate::server::domain::limits;
    limits::key_part("primary_channel", pc, limits::PRIMARY_CHANNEL_BYTES)?;
    limits::key_part("conversation_id", id, limits::CONVERSATION_ID_BYTES)?;
    Ok(())
}

pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/conversations", post(create))
        .route("/api/v1/conversations/lookup", get(lookup))
        .route(
            "/api/v1/conversations/{primary_channel}/{conversation_id}",
            get(read).patch(update),
        )
        .route(
            "/api/v1/conversations/{primary_channel}/{conversation_id}/messages",
            post(append),
        )
        .route_layer(from_fn_with_state(state.clone(), idempotency::optional_key))
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
    auth: ApiAuth,
    body: Body,
) -> Result<Response, Problem> {
    auth.require(WRITE)?;
    let bytes = read_body(body, CONTEXT_BODY_LIMIT).await?;
    let v = parse_json(&bytes)?;
    let now = state.clock.now();
    let ttl = state.config.ttl.conversations_days;
    let (status, created, c) = match domain::create(&state.store, &v, now, ttl).await? {
        CreateOutcome::Created(c) => (StatusCode::CREATED, true, c),
        CreateOutcome::Existing(c) => (StatusCode::OK, false, c),
    };
    if created {
        tracing::info!(channel = %c.channel_method, company = %c.company_id, "conversation created");
    }
    Ok((
        status,
        Json(json!({
            "created": created,
            "conversation_status": c.conversation_status,
            "message_count": c.message_count,
        })),
    )
        .into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/conversations/{primary_channel}/{conversation_id}",
    tag = "conversations",
    params(
        ("primary_channel" = String, Path),
        ("conversation_id" = String, Path)
    ),
    responses(
        (status = 200, description = "OK", body = Conversation),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["conversations:read"])),
)]
pub(crate) async fn read(
    State(state): State<AppState>,
    auth: ApiAuth,
    Path((pc, id)): Path<(String, String)>,
) -> Result<Response, Problem> {
    auth.require(READ)?;
    key_of_path(&pc, &id)?;
    let c = store::get(&state.store, &pc, &id)
        .await?
        .ok_or(crate::model::AppError::NotFound)?;
    let mut v = serde_json::to_value(&c).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        // Ours, not the design's.
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
        ("primary_channel" = String, Path),
        ("conversation_id" = String, Path),
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
    auth: ApiAuth,
    Path((pc, id)): Path<(String, String)>,
    body: Body,
) -> Result<Response, Problem> {
    auth.require(WRITE)?;
    key_of_path(&pc, &id)?;
    let bytes = read_body(body, MESSAGE_BODY_LIMIT).await?;
    let v = parse_json(&bytes)?;
    match domain::append(&state.store, &pc, &id, &v, state.clock.now()).await? {
        AppendOutcome::Added { message_count } => Ok((
            StatusCode::CREATED,
            Json(json!({"appended": true, "message_count": message_count})),
        )
            .into_response()),
        AppendOutcome::Duplicate => {
            Ok(Json(json!({"appended": false, "duplicate": true})).into_response())
        }
    }
}

#[utoipa::path(
    patch,
    path = "/api/v1/conversations/{primary_channel}/{conversation_id}",
    tag = "conversations",
    request_body(content = ConversationChanges, content_type = "application/json"),
    params(
        ("primary_channel" = String, Path),
        ("conversation_id" = String, Path),
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
    auth: ApiAuth,
    Path((pc, id)): Path<(String, String)>,
    body: Body,
) -> Result<Response, Problem> {
    auth.require(WRITE)?;
    key_of_path(&pc, &id)?;
    let bytes = read_body(body, CONTEXT_BODY_LIMIT).await?;
    let v = parse_json(&bytes)?;
    let c = domain::update(&state.store, &pc, &id, &v, state.clock.now()).await?;
    Ok(Json(json!({
        "conversation_status": c.conversation_status,
        "task_complete": c.task_complete == 1,
        "hand_off_to_human": c.hand_off_to_human,
        "function_call": c.function_call,
        "updated_at": c.updated_at,
    }))
    .into_response())
}

#[derive(Deserialize)]
pub(crate) struct Lookup {
    channel: Option<String>,
    company_number: Option<String>,
    recipient: Option<String>,
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
        (status = 200, description = "OK", body = LookupDoc)
    ),
    security(("api_key" = ["conversations:read"])),
)]
/// Reply linking: the conversations a company's sending number (or address) has with a
/// recipient, newest index order first page.
pub(crate) async fn lookup(
    State(state): State<AppState>,
    auth: ApiAuth,
    Query(q): Query<Lookup>,
) -> Result<Response, Problem> {
    auth.require(READ)?;
    let channel = q.channel.unwrap_or_default().to_ascii_lowercase();
    if !matches!(channel.as_str(), "whatsapp" | "sms" | "email") {
        return Err(Problem::invalid(
            "channel",
            "channel is whatsapp, sms or email.",
        ));
    }
    let number = q
        .company_number
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| Problem::invalid("company_number", "company_number is required."))?;
    let number = recipient(&number, "company_number")?;
    let who = q
        .recipient
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| Problem::invalid("recipient", "recipient is required."))?;
    let who = recipient(&who, "recipient")?;
    let partition = Partition::CompanyNumber {
        channel,
        number,
        recipient: Some(who),
    };
    let found = store::search(
        &state.store,
        &partition,
        &Filters::default(),
        Start::First,
        25,
    )
    .await?;
    let rows: Vec<_> = found
        .rows
        .iter()
        .map(|c| {
            json!({
                "primary_channel": c.primary_channel,
                "conversation_id": c.conversation_id,
                "conversation_status": c.conversation_status,
                "channel_method": c.channel_method,
                "created_at": c.created_at,
                "updated_at": c.updated_at,
            })
        })
        .collect();
    Ok(Json(json!({"conversations": rows, "more": found.next.is_some()})).into_response())
}
