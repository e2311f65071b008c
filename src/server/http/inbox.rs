//! The inbox API for apps (docs/inbox.md): tenants and inboxes, publishing (with a required
//! `Idempotency-Key`), feeds, counts, and reads.

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};

use super::extract::{InboxRead, InboxWrite, JsonBody, Scoped};
use super::idempotency::{self, ClaimedKey};
use super::problem::{Problem, ProblemResponse};
use crate::model::AppError;
use crate::server::contract::inbox::{
    Counts, Cursor, FeedPage, InboxSaved, InboxSettings, PublishAnswer, PublishRequest,
    ReadAllAnswer, ReadAnswer, TenantSaved, TenantSettings,
};
use crate::server::domain::inbox::keys::{InboxKey, MessageKey, TenantKey, UserKey};
use crate::server::services::inbox::feed::{Marked, PAGE_SIZE};
use crate::server::services::inbox::publish::Publish;
use crate::server::state::AppState;

const BODY_LIMIT: usize = 256 * 1024;
const BASE: &str = "/api/v1/inbox/tenants/{tenant}";

pub fn routes(state: &AppState) -> Router<AppState> {
    let user = format!("{BASE}/inboxes/{{inbox}}/users/{{uid}}");
    Router::new()
        .route(BASE, put(put_tenant))
        .route(&format!("{BASE}/inboxes/{{inbox}}"), put(put_inbox))
        .route(
            &format!("{BASE}/inboxes/{{inbox}}/messages"),
            post(publish).route_layer(from_fn_with_state(state.clone(), idempotency::require_key)),
        )
        .route(&format!("{user}/feed"), get(feed))
        .route(&format!("{user}/counts"), get(counts))
        .route(
            &format!("{user}/messages/{{message_id}}/read"),
            post(mark_read)
                .route_layer(from_fn_with_state(state.clone(), idempotency::optional_key)),
        )
        .route(
            &format!("{user}/read-all"),
            post(mark_all)
                .route_layer(from_fn_with_state(state.clone(), idempotency::optional_key)),
        )
}

/// A user's path, its keys checked.
fn user_keys(
    tenant: &str,
    inbox: &str,
    uid: &str,
) -> Result<(TenantKey, InboxKey, UserKey), AppError> {
    Ok((
        TenantKey::parse(tenant)?,
        InboxKey::parse(inbox)?,
        UserKey::parse(uid)?,
    ))
}

#[utoipa::path(
    put,
    path = "/api/v1/inbox/tenants/{tenant}",
    tag = "inbox",
    request_body(content = TenantSettings, content_type = "application/json"),
    params(
        ("tenant" = TenantKey, Path)
    ),
    responses(
        (status = 200, description = "OK", body = TenantSaved),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:write"])),
)]
pub(crate) async fn put_tenant(
    State(state): State<AppState>,
    _auth: Scoped<InboxWrite>,
    Path(tenant): Path<String>,
    JsonBody(body): JsonBody<TenantSettings, BODY_LIMIT>,
) -> Result<Response, Problem> {
    let tenant = TenantKey::parse(&tenant)?;
    let s = state
        .inbox
        .put_tenant(&tenant, body, state.clock.now())
        .await?;
    Ok(Json(TenantSaved {
        tenant: s.tenant_key,
        title: s.title,
        ttl: s.ttl,
    })
    .into_response())
}

#[utoipa::path(
    put,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}",
    tag = "inbox",
    request_body(content = InboxSettings, content_type = "application/json"),
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path)
    ),
    responses(
        (status = 200, description = "OK", body = InboxSaved),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:write"])),
)]
pub(crate) async fn put_inbox(
    State(state): State<AppState>,
    _auth: Scoped<InboxWrite>,
    Path((tenant, inbox)): Path<(String, String)>,
    JsonBody(body): JsonBody<InboxSettings, BODY_LIMIT>,
) -> Result<Response, Problem> {
    let (tenant, inbox) = (TenantKey::parse(&tenant)?, InboxKey::parse(&inbox)?);
    let c = state
        .inbox
        .put_inbox(&tenant, &inbox, body, state.clock.now())
        .await?;
    Ok(Json(InboxSaved {
        inbox: c.inbox_key,
        title: c.title,
        description: c.description,
        ttl: c.ttl,
    })
    .into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/messages",
    tag = "inbox",
    request_body(content = PublishRequest, content_type = "application/json"),
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path),
        ("Idempotency-Key" = String, Header, description = "Required: a unique value per request, sent again unchanged on retry")
    ),
    responses(
        (status = 201, description = "Created", body = PublishAnswer),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:write"])),
)]
/// Publishes once per `Idempotency-Key`: a retry after a crash finishes the same message.
pub(crate) async fn publish(
    State(state): State<AppState>,
    auth: Scoped<InboxWrite>,
    Extension(ClaimedKey(job)): Extension<ClaimedKey>,
    Path((tenant, inbox)): Path<(String, String)>,
    JsonBody(body): JsonBody<PublishRequest, BODY_LIMIT>,
) -> Result<Response, Problem> {
    let (tenant, inbox) = (TenantKey::parse(&tenant)?, InboxKey::parse(&inbox)?);
    let p = Publish::new(body, &format!("api:{}", auth.principal.name))?;
    let done = state
        .inbox
        .publish(&tenant, &inbox, &p, &job, state.clock.now())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(PublishAnswer {
            message_id: done.message_id,
            recipients: done.recipients as u64,
            audience: p.audience_kind().as_str().into(),
        }),
    )
        .into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/feed",
    tag = "inbox",
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path),
        ("uid" = UserKey, Path),
        ("cursor" = Option<String>, Query)
    ),
    responses(
        (status = 200, description = "OK", body = FeedPage),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:read"])),
)]
pub(crate) async fn feed(
    State(state): State<AppState>,
    _auth: Scoped<InboxRead>,
    Path((tenant, inbox, uid)): Path<(String, String, String)>,
    Query(q): Query<Cursor>,
) -> Result<Response, Problem> {
    let (tenant, inbox, uid) = user_keys(&tenant, &inbox, &uid)?;
    let page = state
        .inbox
        .feed(
            &tenant,
            &inbox,
            &uid,
            q.cursor.as_deref(),
            PAGE_SIZE,
            state.clock.now(),
        )
        .await?;
    Ok(Json(page).into_response())
}

#[utoipa::path(
    get,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/counts",
    tag = "inbox",
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path),
        ("uid" = UserKey, Path)
    ),
    responses(
        (status = 200, description = "OK", body = Counts),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:read"])),
)]
pub(crate) async fn counts(
    State(state): State<AppState>,
    _auth: Scoped<InboxRead>,
    Path((tenant, inbox, uid)): Path<(String, String, String)>,
) -> Result<Response, Problem> {
    let (tenant, inbox, uid) = user_keys(&tenant, &inbox, &uid)?;
    Ok(Json(state.inbox.counts(&tenant, &inbox, &uid).await?).into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/messages/{message_id}/read",
    tag = "inbox",
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path),
        ("uid" = UserKey, Path),
        ("message_id" = MessageKey, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of this request return the first answer")
    ),
    responses(
        (status = 200, description = "OK", body = ReadAnswer),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:write"])),
)]
pub(crate) async fn mark_read(
    State(state): State<AppState>,
    _auth: Scoped<InboxWrite>,
    Path((tenant, inbox, uid, id)): Path<(String, String, String, String)>,
) -> Result<Response, Problem> {
    let (tenant, inbox, uid) = user_keys(&tenant, &inbox, &uid)?;
    let id = MessageKey::parse(&id)?;
    let m = state
        .inbox
        .mark_read(&tenant, &inbox, &uid, &id, state.clock.now())
        .await?;
    Ok(Json(ReadAnswer {
        read: true,
        already: m == Marked::Already,
    })
    .into_response())
}

#[utoipa::path(
    post,
    path = "/api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/read-all",
    tag = "inbox",
    params(
        ("tenant" = TenantKey, Path),
        ("inbox" = InboxKey, Path),
        ("uid" = UserKey, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes a retry of this request return the first answer")
    ),
    responses(
        (status = 200, description = "OK", body = ReadAllAnswer),
        (status = 404, response = ProblemResponse)
    ),
    security(("api_key" = ["inbox:write"])),
)]
pub(crate) async fn mark_all(
    State(state): State<AppState>,
    _auth: Scoped<InboxWrite>,
    Path((tenant, inbox, uid)): Path<(String, String, String)>,
) -> Result<Response, Problem> {
    let (tenant, inbox, uid) = user_keys(&tenant, &inbox, &uid)?;
    let n = state
        .inbox
        .mark_all_read(&tenant, &inbox, &uid, state.clock.now())
        .await?;
    Ok(Json(ReadAllAnswer { marked: n as u64 }).into_response())
}
