//! (Being replaced by the outbox dispatcher.) Delivers side effects to the configured webhook: JSON with an `Idempotency-Key` header
//! (the action key, so the receiver can drop a re-delivery too), retried with exponential
//! backoff on 429, 5xx, timeouts and connection errors.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::server::config::EventsSection;

#[derive(Clone)]
enum Transport {
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

#[derive(Clone)]
pub struct Webhook {
    uri: Uri,
    transport: Transport,
    timeout: Duration,
    max_attempts: u32,
    backoff: Duration,
}

#[derive(Debug, PartialEq, Eq)]
pub enum DeliveryError {
    /// Worth retrying later (429, 5xx, timeout, no connection), after every attempt failed.
    Retryable(String),
    /// The receiver refused it; retrying will not help.
    Rejected(u16),
}

impl Webhook {
    /// `None` when no webhook is configured (side effects go to the outbox).
    pub fn from_config(cfg: &EventsSection) -> Result<Option<Webhook>, String> {
        let url = cfg.webhook_url.trim();
        if url.is_empty() {
            return Ok(None);
        }
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("events.webhook_url is not a URL: {e}"))?;
        let transport = if uri.scheme_str() == Some("https") {
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_native_roots()
                .map_err(|e| format!("no CA certificates for events.webhook_url: {e}"))?
                .https_only()
                .enable_http1()
                .build();
            Transport::Tls(Client::builder(TokioExecutor::new()).build(connector))
        } else {
            Transport::Plain(Client::builder(TokioExecutor::new()).build_http())
        };
        Ok(Some(Webhook {
            uri,
            transport,
            timeout: Duration::from_millis(cfg.webhook_timeout_ms.max(1) as u64),
            max_attempts: cfg.webhook_max_attempts.max(1) as u32,
            backoff: Duration::from_millis(cfg.webhook_backoff_ms.max(0) as u64),
        }))
    }

    pub fn url(&self) -> String {
        self.uri.to_string()
    }

    async fn once(&self, key: &str, body: &Bytes) -> Result<u16, String> {
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("idempotency-key", key)
            .body(Full::new(body.clone()))
            .map_err(|e| e.to_string())?;
        let sent = async {
            match &self.transport {
                Transport::Plain(c) => c.request(req).await,
                Transport::Tls(c) => c.request(req).await,
            }
        };
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(res)) => Ok(res.status().as_u16()),
            Ok(Err(e)) => Err(format!("connection failed: {e}")),
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }

    /// Posts `body` until the receiver takes it (2xx), refuses it (4xx but 429), or every
    /// attempt failed.
    pub async fn deliver(&self, key: &str, body: Bytes) -> Result<u16, DeliveryError> {
        let mut last = String::new();
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                let factor = 1u32 << (attempt - 1).min(10);
                tokio::time::sleep(self.backoff.saturating_mul(factor)).await;
            }
            match self.once(key, &body).await {
                Ok(status) if (200..300).contains(&status) => return Ok(status),
                Ok(status) if status == 429 || status >= 500 => {
                    last = format!("receiver answered {status}");
                }
                Ok(status) => return Err(DeliveryError::Rejected(status)),
                Err(e) => last = e,
            }
        }
        Err(DeliveryError::Retryable(format!(
            "{last} (after {} attempts)",
            self.max_attempts
        )))
    }
}
