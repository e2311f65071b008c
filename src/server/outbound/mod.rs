//! Delivering side effects to the receiver: one signed POST per attempt (Standard Webhooks
//! headers, see [`signature`]), and what its answer means for the next attempt. Which
//! action to send, when, and what to record is the events outbox's business
//! (`domain/events/outbox.rs`); this module only talks HTTP.

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

use signature::SigningSecret;

/// One message to a receiver.
pub struct Message<'a> {
    /// `webhook-id`: the action key, the same on every attempt.
    pub id: &'a str,
    /// `webhook-timestamp`, Unix seconds.
    pub timestamp: i64,
    pub body: Bytes,
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
            Answer::Unreachable(why) => format!("no connection: {why}"),
            Answer::Unknown(why) => format!("unknown: {why}"),
        }
    }
}

/// The HTTP client of deliveries (plain and TLS), shared by every attempt of this console.
#[derive(Clone)]
pub struct Sender {
    plain: Client<HttpConnector, Full<Bytes>>,
    tls: Option<Client<HttpsConnector<HttpConnector>, Full<Bytes>>>,
    timeout: Duration,
}

fn connector(timeout: Duration) -> HttpConnector {
    let mut c = HttpConnector::new();
    // A connection that cannot be made in this time was not made: the request did not go
    // out, so the attempt is "unreachable", not "unknown".
    c.set_connect_timeout(Some(timeout.min(Duration::from_secs(3))));
    c.enforce_http(false);
    c
}

impl Sender {
    /// A sender whose attempts wait at most `timeout` for an answer.
    pub fn new(timeout: Duration) -> Sender {
        let plain = Client::builder(TokioExecutor::new()).build(connector(timeout));
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .ok()
            .map(|b| {
                b.https_or_http()
                    .enable_http1()
                    .wrap_connector(connector(timeout))
            })
            .map(|c| Client::builder(TokioExecutor::new()).build(c));
        Sender {
            plain,
            tls,
            timeout,
        }
    }

    /// Posts `msg` to `url`, signed with every secret in `secrets`.
    pub async fn send(&self, url: &Uri, secrets: &[SigningSecret], msg: &Message<'_>) -> Answer {
        self.exchange(url, secrets, msg, 0).await.0
    }

    /// As [`Sender::send`], and the start of the receiver's answer (at most `max_body`
    /// bytes, as text): what an admin's test message shows.
    pub async fn probe(
        &self,
        url: &Uri,
        secrets: &[SigningSecret],
        msg: &Message<'_>,
        max_body: usize,
    ) -> (Answer, String) {
        self.exchange(url, secrets, msg, max_body).await
    }

    async fn exchange(
        &self,
        url: &Uri,
        secrets: &[SigningSecret],
        msg: &Message<'_>,
        max_body: usize,
    ) -> (Answer, String) {
        let signature = signature::header(secrets, msg.id, msg.timestamp, &msg.body);
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("webhook-id", msg.id)
            .header("webhook-timestamp", msg.timestamp.to_string())
            .header("webhook-signature", signature)
            .body(Full::new(msg.body.clone()));
        let req = match req {
            Ok(r) => r,
            Err(e) => {
                let why = format!("the request cannot be built: {e}");
                return (Answer::Unreachable(why), String::new());
            }
        };
        let https = url.scheme_str() == Some("https");
        if https && self.tls.is_none() {
            let why = "this console found no CA certificates for https".to_string();
            return (Answer::Unreachable(why), String::new());
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
            let body = if max_body > 0 {
                read_start(res.into_body(), max_body).await
            } else {
                String::new()
            };
            Ok::<_, hyper_util::client::legacy::Error>((status, retry_after, body))
        };
        match tokio::time::timeout(self.timeout, exchanged).await {
            Ok(Ok((status, retry_after, body))) => (classify(status, retry_after.as_deref()), body),
            Ok(Err(e)) if e.is_connect() => (Answer::Unreachable(e.to_string()), String::new()),
            Ok(Err(e)) => (
                Answer::Unknown(format!("the connection broke: {e}")),
                String::new(),
            ),
            Err(_) => (
                Answer::Unknown(format!("no answer within {} ms", self.timeout.as_millis())),
                String::new(),
            ),
        }
    }

    /// Whether this console can reach https receivers (it found CA certificates).
    pub fn has_tls(&self) -> bool {
        self.tls.is_some()
    }
}

/// The first `max` bytes of a body, as text (control characters dropped).
async fn read_start(body: hyper::body::Incoming, max: usize) -> String {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut out: Vec<u8> = Vec::new();
    while out.len() < max {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    out.extend_from_slice(data);
                }
            }
            _ => break,
        }
    }
    out.truncate(max);
    String::from_utf8_lossy(&out)
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .collect()
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

/// A receiver URL as the console accepts it: http or https, with a host.
pub fn parse_url(text: &str) -> Result<Uri, String> {
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
    }
}
