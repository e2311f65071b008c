//! Users over HTTP: sign-in and sign-out (plain form posts answered with redirects, so
//! they work the same with or without JavaScript and always end in a full page load), and
//! `GET /api/v1/whoami` for machine clients.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use serde::Deserialize;

use super::extract::{ApiAuth, ClientAddress};
use super::middleware::{session_cookie, url_encode, SESSION_COOKIE};
use crate::model::pages::PAGE_PATHS;
use crate::server::config::Environment;
use crate::server::contract::users::WhoAmI;
use crate::server::services::users::sessions::LoginError;
use crate::server::state::AppState;

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// Where a sign-in goes on to: a page of the console's own (one of [`PAGE_PATHS`], with
/// its query), written in visible ASCII without a backslash; anything else (another site,
/// `//evil.example`, `/\\evil.example`, a control character a browser would drop) is `/`.
pub fn safe_next(next: &str) -> &str {
    let visible = next
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) && b != b'\\');
    let path = next.split(['?', '#']).next().unwrap_or_default();
    if visible && PAGE_PATHS.contains(&path) {
        next
    } else {
        "/"
    }
}

fn back_to_login(error: &str, next: &str) -> Response {
    Redirect::to(&format!(
        "/login?error={error}&next={}",
        url_encode(safe_next(next))
    ))
    .into_response()
}

fn cookie(state: &AppState, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.config.env == Environment::Dev {
        ""
    } else {
        "; Secure"
    };
    let c = format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    );
    HeaderValue::from_str(&c).unwrap_or_else(|_| HeaderValue::from_static(""))
}

pub async fn login(
    State(state): State<AppState>,
    ClientAddress(from): ClientAddress,
    Form(form): Form<LoginForm>,
) -> Response {
    if form.name.trim().is_empty() || form.password.is_empty() {
        return back_to_login("missing", &form.next);
    }
    match state.users.login(&form.name, &form.password, from).await {
        Ok(Ok((id, _user))) => {
            let max_age = state.config.auth.session_absolute_days * 24 * 3600;
            let mut res = Redirect::to(safe_next(&form.next)).into_response();
            res.headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, &id, max_age));
            res
        }
        Ok(Err(LoginError::Invalid)) => back_to_login("invalid", &form.next),
        Ok(Err(LoginError::Locked { .. })) => back_to_login("locked", &form.next),
        Ok(Err(LoginError::Slowed { until })) => {
            let wait = (until - state.clock.now()).num_seconds().clamp(1, 60);
            let mut res = back_to_login("slowed", &form.next);
            if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
            res
        }
        Ok(Err(LoginError::Busy)) => {
            let mut res = back_to_login("busy", &form.next);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            res
        }
        Err(_) => back_to_login("unavailable", &form.next),
    }
}

pub async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = session_cookie(&headers) {
        // A failed delete leaves a session that still expires on its own; the cookie goes.
        let _ = state.users.logout(&id).await;
    }
    let mut res = Redirect::to("/login").into_response();
    res.headers_mut()
        .insert(header::SET_COOKIE, cookie(&state, "", 0));
    res
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(safe_next("/kill-switches?x=1"), "/kill-switches?x=1");
        assert_eq!(safe_next("//evil.example"), "/");
        assert_eq!(safe_next("https://evil.example"), "/");
        assert_eq!(safe_next("/\\evil.example"), "/");
        assert_eq!(safe_next(""), "/");
        // What browsers turn into another site after a real sign-in.
        for bad in [
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r\n//evil.example",
            "/\\/evil.example",
            "\\\\evil.example",
            "/%2F%2Fevil.example",
            "/ /evil.example",
            "/\u{0}//evil.example",
            "/login",
            "/logout",
            "/api/v1/whoami",
            "/outbox/../..//evil.example",
            "https:evil.example",
        ] {
            assert_eq!(safe_next(bad), "/", "{bad:?}");
        }
        assert_eq!(safe_next("/outbox?group=dead#x"), "/outbox?group=dead#x");
        assert_eq!(safe_next("/"), "/");
    }
}

#[utoipa::path(
    get,
    path = "/api/v1/whoami",
    tag = "console",
    responses(
        (status = 200, description = "OK", body = WhoAmI)
    ),
    security(("api_key" = [])),
)]
pub(crate) async fn whoami(auth: ApiAuth) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: auth.0.name.clone(),
        scopes: auth.0.scopes.clone(),
    })
}
