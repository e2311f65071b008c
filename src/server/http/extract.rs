//! What every REST handler takes from a request: the caller (a bearer API key with its
//! scopes) and a body of bounded size.

use crate::model::api_keys::ApiScope;
use std::marker::PhantomData;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};

use serde::de::DeserializeOwned;

use super::problem::Problem;
use crate::server::services::api_keys::ApiPrincipal;
use crate::server::state::AppState;

/// The client's address: the connection's own, or, when the connection comes from a
/// trusted proxy (`auth.trusted_proxies`), the nearest address in `X-Forwarded-For` that is
/// not one of those proxies (a client can write anything into the header; only what the
/// proxies appended is believed). `None` where the server does not know it (tests that
/// call the router directly).
pub struct ClientAddress(pub Option<std::net::IpAddr>);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        use axum::extract::ConnectInfo;
        let peer = parts
            .extensions
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        let trusted =
            crate::server::outbound::networks::Networks::parse(state.config.auth.proxies())
                .unwrap_or_default();
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        Ok(ClientAddress(client_address(peer, &forwarded, &trusted)))
    }
}

/// The client among a connection's peer and the `X-Forwarded-For` hops (oldest first).
pub fn client_address(
    peer: Option<std::net::IpAddr>,
    forwarded: &[&str],
    trusted: &crate::server::outbound::networks::Networks,
) -> Option<std::net::IpAddr> {
    let mut client = peer?;
    for hop in forwarded.iter().rev() {
        if !trusted.contains(client) {
            break;
        }
        match hop.parse() {
            Ok(ip) => client = ip,
            // A hop a proxy would not write: stop believing the header here.
            Err(_) => break,
        }
    }
    Some(client)
}

/// The caller of a REST endpoint, from `Authorization: Bearer <key>`.
pub struct ApiAuth(pub ApiPrincipal);

impl ApiAuth {
    /// 403 unless the key carries `scope`.
    pub fn require(&self, scope: ApiScope) -> Result<&ApiPrincipal, Problem> {
        if self.0.has_scope(scope) {
            Ok(&self.0)
        } else {
            Err(
                Problem::forbidden(format!("This API key lacks the scope {scope}."))
                    .with("required_scope", scope.as_str()),
            )
        }
    }
}

impl FromRequestParts<AppState> for ApiAuth {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // The idempotency layer has already resolved it.
        if let Some(principal) = parts.extensions.get::<ApiPrincipal>() {
            return Ok(ApiAuth(principal.clone()));
        }
        let key = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                Problem::unauthorized("Send an API key: Authorization: Bearer <key>.")
            })?;
        match state.api_keys.resolve_api_key(key).await? {
            Some(principal) => Ok(ApiAuth(principal)),
            None => Err(Problem::unauthorized("This API key is not valid.")),
        }
    }
}

/// A scope an endpoint requires (see [`Scoped`]).
pub trait Scope: Send + Sync + 'static {
    const SCOPE: ApiScope;
}

macro_rules! scopes {
    ($($ty:ident),* $(,)?) => {
        $(
            #[doc = concat!("The scope [`ApiScope::", stringify!($ty), "`].")]
            pub struct $ty;
            impl Scope for $ty {
                const SCOPE: ApiScope = ApiScope::$ty;
            }
        )*
    };
}

scopes!(
    EventsWrite,
    SwitchesRead,
    SwitchesWrite,
    ConversationsRead,
    ConversationsWrite,
    InboxRead,
    InboxWrite,
    MeasurementsWrite,
    MetricsRead,
    ReceiverRead,
    ReceiverWrite,
);

/// The caller of a REST endpoint holding the scope `S`: 401 without a valid key, 403
/// without the scope, before the body is read (a caller without the right learns nothing
/// about what its body lacks).
pub struct Scoped<S: Scope> {
    pub principal: ApiPrincipal,
    scope: PhantomData<S>,
}

impl<S: Scope> FromRequestParts<AppState> for Scoped<S> {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let auth = ApiAuth::from_request_parts(parts, state).await?;
        auth.require(S::SCOPE)?;
        Ok(Scoped {
            principal: auth.0,
            scope: PhantomData,
        })
    }
}

/// A request body of at most `limit` bytes, or 413 problem+json.
pub async fn read_body(body: axum::body::Body, limit: usize) -> Result<Bytes, Problem> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            "Payload too large",
            format!("The body is at most {} KiB.", limit / 1024),
        )
        .with("limit_bytes", limit)
    })
}

/// A JSON body of at most `LIMIT` bytes (else 413), parsed into `T` (else a 400 that names
/// the field, from its path in the body).
pub struct JsonBody<T, const LIMIT: usize = { 256 * 1024 }>(pub T);

impl<T: DeserializeOwned, const LIMIT: usize> FromRequest<AppState> for JsonBody<T, LIMIT> {
    type Rejection = Problem;

    async fn from_request(req: Request, _state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req.into_body(), LIMIT).await?;
        Ok(JsonBody(crate::server::contract::from_json(&bytes)?))
    }
}

#[cfg(test)]
mod tests {
    use super::client_address;
    use crate::server::outbound::networks::Networks;

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let lb = Networks::parse("10.0.0.0/16").unwrap();
        let none = Networks::default();
        // Straight from a client: its own address, whatever the header says.
        assert_eq!(
            client_address(Some(ip("203.0.113.9")), &["1.2.3.4"], &lb),
            Some(ip("203.0.113.9"))
        );
        // Through the load balancer: the address it appended.
        assert_eq!(
            client_address(Some(ip("10.0.1.5")), &["198.51.100.7"], &lb),
            Some(ip("198.51.100.7"))
        );
        // A client that writes its own header first is not believed for it.
        assert_eq!(
            client_address(Some(ip("10.0.1.5")), &["1.1.1.1", "198.51.100.7"], &lb),
            Some(ip("198.51.100.7"))
        );
        // No trusted proxies: the peer.
        assert_eq!(
            client_address(Some(ip("10.0.1.5")), &["198.51.100.7"], &none),
            Some(ip("10.0.1.5"))
        );
        assert_eq!(
            client_address(Some(ip("10.0.1.5")), &["junk"], &lb),
            Some(ip("10.0.1.5"))
        );
        assert_eq!(client_address(None, &["198.51.100.7"], &lb), None);
    }
}
