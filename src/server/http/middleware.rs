//! Request middleware: cross-origin refusal, session lookup, page guards, and the status
//! codes of server-function errors.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use tracing::Instrument;

use crate::model::users::{CurrentUser, Role};
use crate::model::AppError;
use crate::server::state::AppState;
use crate::server::telemetry::traces;

pub const SESSION_COOKIE: &str = "ops_session";

/// The session id from the request's cookies.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == SESSION_COOKIE)
        .map(|(_, v)| v.to_string())
}

/// Is this a browser request from another site? Same rules as Go's
/// `http.CrossOriginProtection`: `Sec-Fetch-Site` when present, else `Origin` against `Host`;
/// a request with neither is not from a browser and carries no ambient authority to abuse.
fn cross_origin(headers: &HeaderMap) -> bool {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site") {
        return !matches!(site, "same-origin" | "none");
    }
    let Some(origin) = get("origin") else {
        return false;
    };
    let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or("");
    origin == "null" || Some(origin_host) != get("host")
}

/// Refuses state-changing browser requests from other origins (CSRF).
pub async fn same_origin(req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    // The REST API authenticates with bearer keys, never cookies: nothing to forge.
    let bearer_api = req.uri().path().starts_with("/api/v1/");
    if !safe && !bearer_api && cross_origin(req.headers()) {
        // The route's template, not the path: a path can hold ids, or anything a sender likes.
        let route = req
            .extensions()
            .get::<axum::extract::MatchedPath>()
            .map_or("unmatched", |m| m.as_str());
        tracing::warn!(route, "refused a cross-origin request");
        return (StatusCode::FORBIDDEN, "Cross-origin request refused.").into_response();
    }
    next.run(req).await
}

/// Resolves the session cookie to a user and puts it on the request.
pub async fn session(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Some(id) = session_cookie(req.headers()) {
        match state.users.resolve_session(&id).await {
            Ok(Some(user)) => {
                req.extensions_mut().insert(user);
            }
            Ok(None) => {}
            Err(e) => return error_page(e),
        }
    }
    next.run(req).await
}

fn is_public(path: &str) -> bool {
    path == "/login"
        || path == "/logout"
        || path == "/healthz"
        || path == "/readyz"
        || path == "/metrics"
        || path.starts_with("/api/")
        || path.starts_with("/pkg/")
        || path == "/favicon.ico"
        || path == "/favicon.svg"
        || path == "/local-time.js"
        || path == "/robots.txt"
}

/// Pages that need more than a signed-in viewer.
fn page_role(path: &str) -> Role {
    let admin = ["/users", "/api-keys"];
    if admin
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
    {
        Role::Admin
    } else {
        Role::Viewer
    }
}

/// Pages need a session (else: to the login page) and, for some, a role (else: 403).
pub async fn guard_pages(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    if req.method() != Method::GET || is_public(&path) {
        return next.run(req).await;
    }
    let Some(user) = req.extensions().get::<CurrentUser>().cloned() else {
        let target = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        return Redirect::to(&format!("/login?next={}", url_encode(target))).into_response();
    };
    if !user.role.allows(page_role(&path)) {
        // The page is rendered in the console's frame, where its data (refused by its own
        // server functions, which check the role again) shows as "Not allowed"; the status
        // says 403.
        let mut res = next.run(req).await;
        if res.status().is_success() {
            *res.status_mut() = StatusCode::FORBIDDEN;
        }
        return res;
    }
    next.run(req).await
}

/// The methods the console serves anywhere. Any other is refused before any other layer
/// runs: nothing a client invents reaches a session lookup, a metric label or an
/// idempotency scope.
pub const METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// 405 for a method outside [`METHODS`].
pub async fn known_methods(req: Request, next: Next) -> Response {
    if METHODS.contains(req.method()) {
        return next.run(req).await;
    }
    super::problem::Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        "The console serves GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS only.",
    )
    .into_response()
}

/// Counts every answer by route template (never the path: ids stay out of labels), method
/// and status, and times it.
pub async fn measure(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_string();
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let started = std::time::Instant::now();
    let res = if traced(&route, req.uri().path()) {
        // Named by the route's template: a path can hold ids, and a trigger URL its secret.
        let span = tracing::info_span!(
            target: traces::TARGET,
            "request",
            otel.name = %format!("{method} {route}"),
            otel.kind = "server",
            http.request.method = method,
            http.route = %route,
            http.response.status_code = tracing::field::Empty,
        );
        traces::continue_from(req.headers(), &span);
        let res = next.run(req).instrument(span.clone()).await;
        span.record(
            "http.response.status_code",
            i64::from(res.status().as_u16()),
        );
        res
    } else {
        next.run(req).await
    };
    crate::server::metrics::http_request(&route, method, res.status().as_u16(), started.elapsed());
    res
}

/// Whether a request is a span of its own: not the health checks, the metrics scrape and
/// the site's files, which come every few seconds and say nothing about an event.
fn traced(route: &str, path: &str) -> bool {
    traces::on()
        && !matches!(route, "/healthz" | "/readyz" | "/metrics")
        && !path.starts_with("/pkg/")
}

/// Pages must not be kept by the browser (after sign-out, Back shows the login page), and
/// their address goes to no other site as a `Referer` (a feed's link leads elsewhere).
/// The site's files (`/pkg/…`, named without a hash) are kept but asked again each time
/// (`no-cache`): a second page reuses the shell with a 304, and a new deployment's files
/// are never mixed with the old ones.
pub async fn cache_headers(req: Request, next: Next) -> Response {
    let site_file = req.uri().path().starts_with("/pkg/");
    let mut res = next.run(req).await;
    if site_file && res.status().is_success() {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    let html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        res.headers_mut().insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
    }
    res
}

/// Server functions answer errors with 500 unless told otherwise; this gives each error
/// its own status (400 for bad input, 403 for a missing role, ...). Form posts without
/// JavaScript are redirects and stay so.
pub async fn server_fn_status(req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    if res.status() != StatusCode::INTERNAL_SERVER_ERROR
        || !res
            .headers()
            .contains_key(leptos::server_fn::error::SERVER_FN_ERROR_HEADER)
    {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    if let Ok(err) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status =
            StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn error_page(e: AppError) -> Response {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, e.to_string()).into_response()
}

pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A request still unanswered at `operations.request_deadline_ms` is answered 503 with
/// `Retry-After` (problem+json; an `AppError` to a server-function call; a line of text to
/// a browser's page load), before the load balancer's idle timeout would drop it. A write
/// is not cut off halfway: it runs in its own task (`contain_panics`) and finishes or
/// fails as if its client had given up, and the same request sent again is made once (its
/// idempotency key, its conditions); a read is stopped.
pub async fn deadline(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let within =
        std::time::Duration::from_millis(state.config.operations.request_deadline_ms as u64);
    let page = wants_html(req.headers());
    let server_fn = server_fn_call(req.uri().path()).then(|| req.uri().path().to_string());
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_string();
    match tokio::time::timeout(within, next.run(req)).await {
        Ok(res) => res,
        Err(_) => {
            crate::server::metrics::request_deadline_passed(&route);
            let e = AppError::Unavailable {
                retry_after_secs: 1,
            };
            let mut res = match server_fn {
                _ if page => error_page(e),
                // As the server function's own errors come: its client reads an `AppError`.
                Some(path) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [
                        (header::CONTENT_TYPE, "application/json".to_string()),
                        (
                            header::HeaderName::from_static(
                                leptos::server_fn::error::SERVER_FN_ERROR_HEADER,
                            ),
                            path,
                        ),
                    ],
                    serde_json::to_string(&e).unwrap_or_default(),
                )
                    .into_response(),
                None => return super::problem::Problem::from(e).into_response(),
            };
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            res
        }
    }
}

/// A server function's address (`/api/<name>`), not the REST API's (`/api/v1/…`).
fn server_fn_call(path: &str) -> bool {
    path.starts_with("/api/") && !path.starts_with("/api/v1/") && path != "/api/openapi.json"
}

/// Handlers running in their own tasks (`contain_panics`), some of them past their
/// deadline: `serve` lets them end before the process does.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Told when the last running handler ends.
static ALL_ENDED: tokio::sync::Notify = tokio::sync::Notify::const_new();

struct Running;

impl Running {
    fn start() -> Running {
        RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            ALL_ENDED.notify_waiters();
        }
    }
}

/// Waits, `within` at most, until no handler is running (writes answered at their
/// deadline run on: a console that is stopping lets them end).
pub async fn handlers_ended(within: std::time::Duration) {
    let ended = async {
        loop {
            let told = ALL_ENDED.notified();
            tokio::pin!(told);
            // Listening before looking: an end between the two is not missed.
            told.as_mut().enable();
            if RUNNING.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            told.await;
        }
    };
    if tokio::time::timeout(within, ended).await.is_err() {
        tracing::warn!("requests answered at their deadline still ran when the console stopped");
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A browser loading a page (not a script's request).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// A handler that panics answers 500 problem+json instead of dropping the connection
/// (which a client cannot tell from a lost answer). The server's panic hook logs where
/// (`telemetry::withhold_panic_messages`).
pub async fn contain_panics(req: Request, next: Next) -> Response {
    // A read stops when its client is answered without it (at the deadline): its work
    // would be for no one. A write runs to its end (`deadline`).
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    let running = Running::start();
    // The task continues the request's span (traces).
    let task = tokio::spawn(
        async move {
            let _running = running;
            next.run(req).await
        }
        .in_current_span(),
    );
    let _abort = read.then(|| AbortOnDrop(task.abort_handle()));
    match task.await {
        Ok(res) => res,
        Err(e) => {
            let cause = if e.is_panic() {
                "a handler panicked"
            } else {
                "a handler was cancelled"
            };
            super::problem::Problem::from(crate::server::telemetry::internal(&cause))
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    /// A stopping console waits for a write still running past its deadline, and no
    /// longer than it runs.
    #[tokio::test]
    async fn a_stopping_console_waits_for_the_handlers_still_running() {
        let running = Running::start();
        let waiter = tokio::spawn(handlers_ended(std::time::Duration::from_secs(600)));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished(), "a handler runs: still waiting");
        drop(running);
        tokio::time::timeout(std::time::Duration::from_secs(60), waiter)
            .await
            .expect("told when it ended")
            .unwrap();
    }

    #[test]
    fn cross_origin_rules() {
        assert!(
            !cross_origin(&headers(&[])),
            "no browser headers: not a browser"
        );
        assert!(!cross_origin(&headers(&[(
            "sec-fetch-site",
            "same-origin"
        )])));
        assert!(cross_origin(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(cross_origin(&headers(&[("sec-fetch-site", "same-site")])));
        assert!(!cross_origin(&headers(&[
            ("origin", "http://127.0.0.1:3000"),
            ("host", "127.0.0.1:3000")
        ])));
        assert!(cross_origin(&headers(&[
            ("origin", "https://evil.example"),
            ("host", "127.0.0.1:3000")
        ])));
        assert!(cross_origin(&headers(&[
            ("origin", "null"),
            ("host", "127.0.0.1:3000")
        ])));
    }

    #[test]
    fn reads_the_session_cookie_among_others() {
        let h = headers(&[("cookie", "a=1; ops_session=abc; b=2")]);
        assert_eq!(session_cookie(&h).as_deref(), Some("abc"));
        assert_eq!(session_cookie(&headers(&[("cookie", "a=1")])), None);
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_problem_json() {
        use axum::routing::get;
        use tower::ServiceExt;
        async fn boom() -> &'static str {
            panic!("input was someone@example.com")
        }
        let app = axum::Router::new()
            .route("/boom", get(boom))
            .route("/fine", get(|| async { "fine" }))
            .layer(axum::middleware::from_fn(contain_panics));
        let req = |path: &str| Request::builder().uri(path).body(Body::empty()).unwrap();
        let res = app.clone().oneshot(req("/boom")).await.unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            res.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let body = axum::body::to_bytes(res.into_body(), 4096).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("\"reference\""), "{body}");
        assert!(!body.contains("example.com"), "{body}");
        let res = app.oneshot(req("/fine")).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
    }
}
