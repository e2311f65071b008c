//! Delivering side effects to the receiver: one signed POST per attempt (Standard Webhooks
//! headers, see [`signature`]), and what its answer means for the next attempt. Which
//! action to send, when, and what to record is the events outbox's business
//! (`domain/events/outbox.rs`); this module only talks HTTP. Every request the console
//! makes goes through one [`Sender`], whose connections reach only the public internet and
//! the networks the settings list ([`networks`]).

pub mod networks;
pub mod schedule;
pub mod signature;

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use networks::Resolver;
use signature::SigningSecret;

/// One message to a receiver.
pub struct Message<'a> {
    /// `webhook-id`: the action key, the same on every attempt.
    pub id: &'a str,
    /// `webhook-timestamp`, Unix seconds.
    pub timestamp: i64,
    pub body: Bytes,
    /// W3C trace context: the receiver's own trace continues the delivery's.
    pub traceparent: Option<String>,
}

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the receiver has it.
    Delivered(u16),
    /// 410: the receiver is gone for good; stop sending to it.
    Gone,
    /// Another 4xx (but 408, 409, 425, 429): sending it again will not help.
    Refused(u16),
    /// 408, 409, 425, 429 or 5xx: try again, not sooner than `retry_after`.
    Retry {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// No connection was made: the request did not go out.
    Unreachable(String),
    /// The request went out and no answer came in time: the receiver may have it. Sent
    /// again with the same `webhook-id`, which the receiver dedupes by.
    Unknown(String),
}

impl Answer {
    /// The receiver failed, not the message: a timeout, a 5xx (or 408), no connection.
    /// What a breaker counts; a 4xx refusal or a 429 says the receiver is up.
    pub fn receiver_failed(&self) -> bool {
        match self {
            Answer::Retry { status, .. } => *status == 408 || *status >= 500,
            Answer::Unreachable(_) | Answer::Unknown(_) => true,
            Answer::Delivered(_) | Answer::Gone | Answer::Refused(_) => false,
        }
    }

    /// The cause a dead letter is grouped by: `http 503`, `timeout`, `connection`.
    pub fn cause(&self) -> String {
        match self {
            Answer::Delivered(code) | Answer::Refused(code) => format!("http {code}"),
            Answer::Retry { status, .. } => format!("http {status}"),
            Answer::Gone => "http 410".into(),
            Answer::Unreachable(_) => "connection".into(),
            Answer::Unknown(_) => "timeout".into(),
        }
    }

    /// A line for the attempt's record.
    pub fn describe(&self) -> String {
        match self {
            Answer::Delivered(code) => format!("receiver answered {code}"),
            Answer::Gone => "receiver answered 410 Gone: delivery to it stopped".into(),
            Answer::Refused(code) => format!("receiver refused it ({code})"),
            Answer::Retry {
                status,
                retry_after: Some(r),
            } => format!("receiver answered {status}, retry after {} s", r.as_secs()),
            Answer::Retry { status, .. } => format!("receiver answered {status}"),
            Answer::Unreachable(why) => format!("could not connect: {why}"),
            Answer::Unknown(why) => format!("no answer, it may have arrived: {why}"),
        }
    }
}

/// The HTTP client of deliveries (plain and TLS), shared by every attempt of this console.
#[derive(Clone)]
pub struct Sender {
    plain: Client<HttpConnector<Resolver>, Full<Bytes>>,
    tls: Option<Client<HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>>,
    resolver: Resolver,
    timeout: Duration,
}

fn connector(timeout: Duration, resolver: &Resolver) -> HttpConnector<Resolver> {
    let mut c = HttpConnector::new_with_resolver(resolver.clone());
    // A connection that cannot be made in this time was not made: the request did not go
    // out, so the attempt is "unreachable", not "unknown".
    c.set_connect_timeout(Some(timeout.min(Duration::from_secs(3))));
    c.enforce_http(false);
    c
}

impl Sender {
    /// A sender whose attempts wait at most `timeout` for an answer, and connect only where
    /// `resolver` allows.
    pub fn new(timeout: Duration, resolver: Resolver) -> Sender {
        let plain = Client::builder(TokioExecutor::new()).build(connector(timeout, &resolver));
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .ok()
            .map(|b| {
                b.https_or_http()
                    .enable_http1()
                    .wrap_connector(connector(timeout, &resolver))
            })
            .map(|c| Client::builder(TokioExecutor::new()).build(c));
        Sender {
            plain,
            tls,
            resolver,
            timeout,
        }
    }

    /// Where this sender may connect.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// Posts `msg` to `url`, signed with every secret in `secrets`.
    pub async fn send(&self, url: &Uri, secrets: &[SigningSecret], msg: &Message<'_>) -> Answer {
        // A literal address is connected to without a name to resolve: checked here.
        let refused = url
            .host()
            .and_then(networks::literal)
            .and_then(|ip| self.resolver.allowed().refusal(ip));
        if let Some(r) = refused {
            return Answer::Unreachable(format!("refused: {r}"));
        }
        let signature = signature::header(secrets, msg.id, msg.timestamp, &msg.body);
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("webhook-id", msg.id)
            .header("webhook-timestamp", msg.timestamp.to_string())
            .header("webhook-signature", signature);
        let req = match &msg.traceparent {
            Some(tp) => req.header("traceparent", tp),
            None => req,
        }
        .body(Full::new(msg.body.clone()));
        let req = match req {
            Ok(r) => r,
            Err(e) => return Answer::Unreachable(format!("the request cannot be built: {e}")),
        };
        let https = url.scheme_str() == Some("https");
        if https && self.tls.is_none() {
            return Answer::Unreachable("this console found no CA certificates for https".into());
        }
        let exchanged = async {
            let res = match &self.tls {
                Some(c) if https => c.request(req).await,
                _ => self.plain.request(req).await,
            }?;
            let status = res.status().as_u16();
            let retry_after = res
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            Ok::<_, hyper_util::client::legacy::Error>((status, retry_after))
        };
        match tokio::time::timeout(self.timeout, exchanged).await {
            Ok(Ok((status, retry_after))) => classify(status, retry_after.as_deref()),
            Ok(Err(e)) if e.is_connect() => Answer::Unreachable(connect_error(&e)),
            Ok(Err(_)) => Answer::Unknown("the connection broke before the answer".into()),
            Err(_) => Answer::Unknown(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }

    /// Whether this console can reach https receivers (it found CA certificates).
    pub fn has_tls(&self) -> bool {
        self.tls.is_some()
    }
}

/// Why a connection was not made, in words: the refusal of a destination when it was
/// one, else the connector's own error.
fn connect_error(e: &hyper_util::client::legacy::Error) -> String {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|i| i.downcast_ref::<networks::Refused>());
        if let Some(r) = inner {
            return format!("refused: {r}");
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io_words(io);
        }
        source = s.source();
    }
    "the connection could not be made".into()
}

/// A connection's failure as people say it (never the connector's `client error (Connect)`).
fn io_words(io: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match io.kind() {
        K::ConnectionRefused => "connection refused (nothing listens at that address)".into(),
        K::TimedOut => "connecting took too long".into(),
        K::ConnectionReset | K::ConnectionAborted => "the connection was cut".into(),
        K::AddrNotAvailable | K::NetworkUnreachable | K::HostUnreachable => {
            "no route to the receiver's address".into()
        }
        K::InvalidData => "the secure connection was refused (its certificate or TLS)".into(),
        _ if io.to_string().contains("dns") || io.to_string().contains("resolve") => {
            "the receiver's name does not resolve".into()
        }
        // Never the error's own text: a TLS error names hosts and addresses the
        // certificate covers, and these words reach every role and the alert channels.
        kind => format!("the connection failed ({kind})"),
    }
}

/// An HTTP status (and `Retry-After`) as an [`Answer`].
pub fn classify(status: u16, retry_after: Option<&str>) -> Answer {
    match status {
        200..=299 => Answer::Delivered(status),
        410 => Answer::Gone,
        408 | 409 | 425 | 429 | 500..=599 => Answer::Retry {
            status,
            retry_after: schedule::retry_after(retry_after),
        },
        _ => Answer::Refused(status),
    }
}

/// The longest URL the console keeps or sends to (what browsers and most servers take).
pub const MAX_URL_LEN: usize = 2_048;

/// A receiver URL as the console accepts it: http or https, with a host, at most
/// [`MAX_URL_LEN`] characters.
pub fn parse_url(text: &str) -> Result<Uri, String> {
    if text.trim().len() > MAX_URL_LEN {
        return Err(format!("longer than {MAX_URL_LEN} characters"));
    }
    let uri: Uri = text.trim().parse().map_err(|e| format!("not a URL: {e}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err("an http:// or https:// URL with a host".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_mean_what_receivers_mean() {
        assert_eq!(classify(204, None), Answer::Delivered(204));
        assert_eq!(classify(410, None), Answer::Gone);
        assert_eq!(classify(400, None), Answer::Refused(400));
        assert_eq!(
            classify(429, Some("30")),
            Answer::Retry {
                status: 429,
                retry_after: Some(Duration::from_secs(30))
            }
        );
        assert_eq!(
            classify(503, None),
            Answer::Retry {
                status: 503,
                retry_after: None
            }
        );
        assert_eq!(classify(503, None).cause(), "http 503");
        assert_eq!(Answer::Unknown("x".into()).cause(), "timeout");
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://127.0.0.1:9/hook").is_ok());
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(parse_url(&long).unwrap_err(), "longer than 2048 characters");
        assert!(parse_url(&long[..MAX_URL_LEN]).is_ok());
    }
}
