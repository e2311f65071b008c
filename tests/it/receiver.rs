//! A side-effect receiver on a real socket, as a customer would write one: it verifies the
//! Standard Webhooks signature (and refuses a bad one with 401), and records every message
//! it accepted, in order of arrival, by `webhook-id`. It can be told to fail first, or to
//! answer something else for a while.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;

use ops_console::server::outbound::signature::{verify, SigningSecret};

#[derive(Clone)]
pub struct Receiver {
    /// Accepted messages in order of arrival: (webhook-id, body).
    pub accepted: Arc<Mutex<Vec<(String, String)>>>,
    /// Requests refused because no signature matched.
    pub bad_signatures: Arc<Mutex<usize>>,
    /// Answer this status to this many requests first (before verifying).
    pub fail_first: Arc<Mutex<(usize, u16)>>,
    /// The secrets it verifies with.
    pub secrets: Arc<Mutex<Vec<SigningSecret>>>,
    /// When each request arrived, answered or not (this process's clock).
    pub arrivals: Arc<Mutex<Vec<std::time::Instant>>>,
    /// Messages it answers 503 whenever they come (by webhook-id).
    pub chokes_on: Arc<Mutex<Vec<String>>>,
    /// How long it takes to answer each request (ms).
    pub answer_ms: Arc<AtomicU64>,
    /// Requests it is answering now, and the most it ever answered at once.
    pub in_flight: Arc<(AtomicUsize, AtomicUsize)>,
    /// The `traceparent` of each accepted message that had one, in order of arrival.
    pub traceparents: Arc<Mutex<Vec<String>>>,
}

/// A request being answered: counted in `in_flight` until dropped.
struct Answering(Arc<(AtomicUsize, AtomicUsize)>);

impl Answering {
    fn enter(counts: &Arc<(AtomicUsize, AtomicUsize)>) -> Answering {
        let now = counts.0.fetch_add(1, Ordering::SeqCst) + 1;
        counts.1.fetch_max(now, Ordering::SeqCst);
        Answering(counts.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Receiver {
    /// Listens on 127.0.0.1; the URL is `http://addr/hook`.
    pub async fn start(secrets: Vec<SigningSecret>) -> (Receiver, String) {
        let r = Receiver {
            accepted: Arc::default(),
            bad_signatures: Arc::default(),
            fail_first: Arc::new(Mutex::new((0, 503))),
            secrets: Arc::new(Mutex::new(secrets)),
            arrivals: Arc::default(),
            chokes_on: Arc::default(),
            answer_ms: Arc::default(),
            in_flight: Arc::default(),
            traceparents: Arc::default(),
        };
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(r.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (r, format!("http://{addr}/hook"))
    }

    pub fn fail_next(&self, n: usize, status: u16) {
        *self.fail_first.lock().unwrap() = (n, status);
    }

    /// Accepted deliveries by webhook-id.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut out = HashMap::new();
        for (id, _) in self.accepted.lock().unwrap().iter() {
            *out.entry(id.clone()).or_default() += 1;
        }
        out
    }

    /// The most requests it answered at once.
    pub fn most_at_once(&self) -> usize {
        self.in_flight.1.load(Ordering::SeqCst)
    }

    pub fn total(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }

    pub fn order(&self) -> Vec<String> {
        self.accepted
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// A 429 asks for this long (`Retry-After`, in seconds).
pub const RETRY_AFTER_SECS: i64 = 30;

async fn receive(
    State(r): State<Receiver>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let _answering = Answering::enter(&r.in_flight);
    let wait = r.answer_ms.load(Ordering::SeqCst);
    if wait > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }
    answer(r, headers, body)
}

fn answer(r: Receiver, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    r.arrivals.lock().unwrap().push(std::time::Instant::now());
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if r.chokes_on.lock().unwrap().iter().any(|c| c == id) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    {
        let mut fail = r.fail_first.lock().unwrap();
        if fail.0 > 0 {
            fail.0 -= 1;
            let status = StatusCode::from_u16(fail.1).unwrap();
            if status == StatusCode::TOO_MANY_REQUESTS {
                let wait = RETRY_AFTER_SECS.to_string();
                return (status, [("retry-after", wait)]).into_response();
            }
            return status.into_response();
        }
    }
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (id, ts, sig) = (
        h("webhook-id"),
        h("webhook-timestamp"),
        h("webhook-signature"),
    );
    let now = ts.parse::<i64>().unwrap_or(0); // The tests move the console's clock, not ours.
    let secrets = r.secrets.lock().unwrap().clone();
    if verify(&secrets, &id, &ts, &body, &sig, now).is_err() {
        *r.bad_signatures.lock().unwrap() += 1;
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        r.traceparents.lock().unwrap().push(tp.to_string());
    }
    r.accepted
        .lock()
        .unwrap()
        .push((id, String::from_utf8_lossy(&body).to_string()));
    StatusCode::NO_CONTENT.into_response()
}
