//! The clients: each sends events, publishes, measurements and kill-switch flips to one of
//! the consoles (picked per attempt, as a load balancer would), and retries any request
//! that got no final answer with the same keys and body, as a careful client would. What
//! came back 2xx is acknowledged: it must be stored.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use chrono::{Duration as Span, Utc};
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::time::Instant;

use ops_console::server::ids::random_hex;
use ops_console::server::seed::Rng;

/// What a client sent (acknowledged or not): what the duplicate checks count against.
#[derive(Clone, Debug)]
pub enum Sent {
    /// An event: its key as the console makes it (`evt:rp:<conversation>:<message>`).
    Event { key: String },
    /// A publish, by its `Idempotency-Key` (also in its title).
    Publish { key: String },
    /// A kill-switch flip, by its `Idempotency-Key` (also in its reason).
    Flip { key: String },
    /// A measurement, by its user and id, with the weight it carried (its payload: the
    /// conflict probes send another weight under the same id).
    Measurement {
        user: String,
        id: String,
        weight: f64,
    },
}

/// One client's run.
#[derive(Debug, Default)]
pub struct ClientRun {
    pub acked: Vec<Acked>,
    pub sent: Vec<Sent>,
    /// Requests sent again after their acknowledgement (as a client whose answer was lost
    /// would) that got another answer than the first.
    pub repeats_differed: Vec<String>,
    pub repeats: u64,
}

/// A key in lower-case letters only: it appears in a title or a reason, and a run of digits
/// there could be redacted as a phone number.
fn letters_key() -> String {
    random_hex(12)
        .bytes()
        .map(|b| (b'a' + (b as char).to_digit(16).unwrap_or(0) as u8) as char)
        .collect()
}

/// What a 2xx answer promised.
#[derive(Clone, Debug)]
pub enum Acked {
    Event {
        key: String,
    },
    Publish {
        id: String,
        uids: Option<Vec<String>>,
        /// `ops` messages live an hour: the expiry phase removes them as TTL would.
        short_lived: bool,
    },
    Measurement {
        user: String,
        id: String,
    },
    /// A kill-switch flip, by its key (its change's reason is `chaos flip <key>`).
    Flip {
        key: String,
    },
}

/// The kinds of operation the clients make: each must end acknowledged often enough on
/// its own, or a whole kind could fail unseen behind the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Event,
    Publish,
    Measurement,
    /// A kill-switch flip: a 409 (another flip came first) is a final answer too.
    Flip,
}

impl Operation {
    pub const ALL: [Operation; 4] = [
        Operation::Event,
        Operation::Publish,
        Operation::Measurement,
        Operation::Flip,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operation::Event => "event",
            Operation::Publish => "publish",
            Operation::Measurement => "measurement",
            Operation::Flip => "kill-switch flip",
        }
    }
}

#[derive(Default)]
pub struct Tally {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    /// Operations of each kind (in [`Operation::ALL`]'s order) begun, and those that got
    /// their final answer: acknowledged (or, for a flip, refused because another came first).
    pub tried: [AtomicU64; 4],
    pub settled: [AtomicU64; 4],
    pub unanswered: AtomicU64,
    /// 5xx answers, and those of them without `Retry-After`.
    pub server_errors: AtomicU64,
    pub without_retry_after: AtomicU64,
    /// The first few 5xx answers without `Retry-After`, for the report.
    pub bad_answers: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn tried(&self, op: Operation) {
        self.tried[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn settled(&self, op: Operation) {
        self.settled[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Operations begun, of every kind.
    pub fn operations(&self) -> u64 {
        self.tried.iter().map(|t| t.load(Ordering::Relaxed)).sum()
    }

    /// Operations of `op`'s kind begun, and settled.
    pub fn of(&self, op: Operation) -> (u64, u64) {
        (
            self.tried[op as usize].load(Ordering::Relaxed),
            self.settled[op as usize].load(Ordering::Relaxed),
        )
    }
}

#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    ports: Vec<u16>,
    next: Arc<AtomicU64>,
    key: String,
    tally: Arc<Tally>,
}

const TEXTS: &[&str] = &[
    "Where is my order? It has not arrived",
    "I would like a refund please",
    "Please cancel my order",
    "hello, a quick question",
    "I dispute the charge on my card, chargeback",
    "my order number is 123456",
];

impl Http {
    pub fn new(ports: Vec<u16>, key: String, tally: Arc<Tally>, first: u64) -> Http {
        Http {
            client: Client::builder(TokioExecutor::new()).build_http(),
            ports,
            next: Arc::new(AtomicU64::new(first)),
            key,
            tally,
        }
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The console this attempt goes to: round robin, like a load balancer.
    fn base(&self) -> String {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize % self.ports.len().max(1);
        format!(
            "http://127.0.0.1:{}",
            self.ports.get(i).copied().unwrap_or(0)
        )
    }

    async fn once(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        idem: Option<&str>,
    ) -> Result<(u16, Value), String> {
        self.once_with(method, path, body, idem, None).await
    }

    /// One attempt, to the next console; with `cookie`, as a signed-in browser (no API key).
    pub async fn once_with(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        idem: Option<&str>,
        cookie: Option<&str>,
    ) -> Result<(u16, Value), String> {
        self.tally.requests.fetch_add(1, Ordering::Relaxed);
        let mut req = Request::builder()
            .method(method.clone())
            .uri(format!("{}{path}", self.base()))
            .header("content-type", "application/json");
        req = match cookie {
            Some(c) => req.header("cookie", c).header("host", "localhost"),
            None => req.header("authorization", format!("Bearer {}", self.key)),
        };
        if let Some(k) = idem {
            req = req.header("idempotency-key", k);
        }
        let bytes = if method == Method::GET {
            Bytes::new()
        } else {
            Bytes::from(body.to_string())
        };
        let req = req.body(Full::new(bytes)).map_err(|e| e.to_string())?;
        let res = tokio::time::timeout(Duration::from_secs(15), self.client.request(req))
            .await
            .map_err(|_| "timeout".to_string())?
            .map_err(|e| e.to_string())?;
        let status = res.status().as_u16();
        if status >= 500 {
            self.tally.server_errors.fetch_add(1, Ordering::Relaxed);
            if !res.headers().contains_key("retry-after") {
                self.tally
                    .without_retry_after
                    .fetch_add(1, Ordering::Relaxed);
                if let Ok(mut bad) = self.tally.bad_answers.lock() {
                    if bad.len() < 5 {
                        bad.push(format!("{method} {path}: {status}"));
                    }
                }
            }
        }
        let body = res
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    /// Sends until a final answer (anything but no answer, 5xx, or 409 "in progress"), or
    /// until `give_up`.
    pub async fn until_final(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        idem: Option<&str>,
        give_up: Instant,
    ) -> Option<(u16, Value)> {
        let mut pause = 100u64;
        loop {
            match self.once(method.clone(), path, body, idem).await {
                Ok((s, v))
                    if s < 500
                        && !(s == 409
                            && v["type"]
                                .as_str()
                                .is_some_and(|t| t.ends_with("in-progress"))) =>
                {
                    return Some((s, v))
                }
                _ if Instant::now() >= give_up => {
                    self.tally.unanswered.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                _ => {
                    self.tally.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    pause = (pause * 2).min(1000);
                }
            }
        }
    }
}

impl Http {
    /// The switches as a console reads them (`GET /api/v1/kill-switches`).
    pub async fn switches(&self, give_up: Instant) -> Result<Value, String> {
        match self
            .until_final(
                Method::GET,
                "/api/v1/kill-switches",
                &Value::Null,
                None,
                give_up,
            )
            .await
        {
            Some((200, now)) => Ok(now),
            other => Err(format!("the switches could not be read: {other:?}")),
        }
    }
}

/// Sends an acknowledged request once more with the same key and body, as a client whose
/// answer was lost would; the answer must say the same (`same` compares the two).
async fn repeat(
    http: &Http,
    run: &mut ClientRun,
    what: &str,
    (method, path, body, idem): (Method, &str, &Value, Option<&str>),
    give_up: Instant,
    same: impl Fn(u16, &Value) -> bool,
) {
    run.repeats += 1;
    if let Some((s, v)) = http.until_final(method, path, body, idem, give_up).await {
        if !same(s, &v) {
            run.repeats_differed
                .push(format!("{what}: sent again, answered {s} {v}"));
        }
    }
}

/// How a client names its flips: in letters (`chaos flip <letters>`), or, in a broken run,
/// in digits that the console redacts from a reason as it would a phone number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlipKeys {
    Letters,
    Redacted,
}

/// One client's run: operations until `stop`, retries until `give_up`. Every acknowledged
/// publish and a quarter of the other acknowledged requests are sent once more (round
/// robin: to another console) and must be answered the same; an eighth of the
/// acknowledged measurements is sent again with another weight and must be refused (409).
pub async fn client(
    http: Http,
    id: usize,
    seed: u64,
    (stop, give_up): (Instant, Instant),
    flip_keys: FlipKeys,
) -> Result<ClientRun, String> {
    let mut rng = Rng::new(seed ^ ((id as u64 + 1) * 0x9E37));
    let mut run = ClientRun::default();
    let acked = &mut Vec::new();
    let start = Utc::now() - Span::days(1);
    let mut n = 0i64;
    while Instant::now() < stop {
        n += 1;
        // A run whose flips carry a phone number flips first (twice a client), so that
        // some flip is acknowledged however short the run: its check must have one to fail.
        let roll = if matches!(flip_keys, FlipKeys::Redacted) && n <= 2 {
            95
        } else {
            rng.below(100)
        };
        if roll < 40 {
            http.tally.tried(Operation::Event);
            let conversation = format!("chaos-conv-{}", rng.below(8));
            let message = format!("c{id}-m{n}");
            let body = json!({"conversation_id": conversation, "message_id": message, "created_at": Utc::now().to_rfc3339(),
                              "channel": "email", "text": rng.pick(TEXTS), "customer": {"id": format!("cust-{id}")}});
            run.sent.push(Sent::Event {
                key: format!("evt:rp:{conversation}:{message}"),
            });
            if let Some((s, v)) = http
                .until_final(Method::POST, "/api/v1/events", &body, None, give_up)
                .await
            {
                if s == 200 {
                    let key = v["event_key"].as_str().unwrap_or_default().to_string();
                    if rng.below(4) == 0 {
                        let request = (Method::POST, "/api/v1/events", &body, None);
                        let same =
                            |s: u16, again: &Value| s == 200 && again["event_key"] == key.as_str();
                        repeat(
                            &http,
                            &mut run,
                            &format!("event {key}"),
                            request,
                            give_up,
                            same,
                        )
                        .await;
                    }
                    http.tally.settled(Operation::Event);
                    acked.push(Acked::Event { key });
                } else {
                    return Err(format!("event {message}: unexpected {s} {v}"));
                }
            }
        } else if roll < 60 {
            http.tally.tried(Operation::Publish);
            let everyone = rng.below(5) == 0;
            let uids: Option<Vec<String>> =
                (!everyone).then(|| (0..1 + rng.below(60)).map(|u| format!("u{u}")).collect());
            let audience = match &uids {
                None => json!({"kind": "everyone"}),
                Some(u) => json!({"kind": "users", "uids": u}),
            };
            let category = *rng.pick(&["billing", "news", "ops"]);
            let key = letters_key();
            let body = json!({"audience": audience, "category": category, "title": format!("Chaos {key}"), "body": "Under fire."});
            run.sent.push(Sent::Publish { key: key.clone() });
            let path = "/api/v1/inbox/tenants/chaos/inboxes/news/messages";
            if let Some((s, v)) = http
                .until_final(Method::POST, path, &body, Some(&key), give_up)
                .await
            {
                if s == 201 {
                    let id = v["message_id"].as_str().unwrap_or_default().to_string();
                    // Every publish: a second job would be a second message to every
                    // recipient, the costliest duplicate there is.
                    {
                        let request = (Method::POST, path, &body, Some(key.as_str()));
                        let same =
                            |s: u16, again: &Value| s == 201 && again["message_id"] == id.as_str();
                        repeat(
                            &http,
                            &mut run,
                            &format!("publish {key}"),
                            request,
                            give_up,
                            same,
                        )
                        .await;
                    }
                    http.tally.settled(Operation::Publish);
                    acked.push(Acked::Publish {
                        id,
                        uids,
                        short_lived: category == "ops",
                    });
                } else {
                    return Err(format!("publish: unexpected {s} {v}"));
                }
            }
        } else if roll < 90 {
            http.tally.tried(Operation::Measurement);
            let user = format!("chaos-u{id}");
            let mid = format!("c{id}-w{n}");
            let at = start + Span::minutes(n);
            let weight = 70.0 + (n % 30) as f64 / 10.0;
            let body = json!({"measurement_id": mid, "user_id": user, "weight": weight,
                              "unit": "kg", "timestamp": at.to_rfc3339(), "source": "chaos"});
            run.sent.push(Sent::Measurement {
                user: user.clone(),
                id: mid.clone(),
                weight,
            });
            if let Some((s, v)) = http
                .until_final(Method::POST, "/api/v1/measurements", &body, None, give_up)
                .await
            {
                if s == 201 || s == 200 {
                    if rng.below(4) == 0 {
                        let request = (Method::POST, "/api/v1/measurements", &body, None);
                        let same = |s: u16, _: &Value| s == 200 || s == 201;
                        repeat(
                            &http,
                            &mut run,
                            &format!("measurement {mid}"),
                            request,
                            give_up,
                            same,
                        )
                        .await;
                    }
                    if rng.below(8) == 0 {
                        // Another payload under the same id: a conflict, and nothing of it
                        // stored (the check compares the stored weight with `weight`).
                        let mut other = body.clone();
                        other["weight"] = json!(weight + 1.0);
                        let request = (Method::POST, "/api/v1/measurements", &other, None);
                        repeat(
                            &http,
                            &mut run,
                            &format!("measurement {mid} with another weight"),
                            request,
                            give_up,
                            |s: u16, _: &Value| s == 409,
                        )
                        .await;
                    }
                    http.tally.settled(Operation::Measurement);
                    acked.push(Acked::Measurement { user, id: mid });
                } else {
                    return Err(format!("measurement {mid}: unexpected {s} {v}"));
                }
            }
        } else {
            // A switch flipped to stop the side effects (safe mode on, automation off) is
            // flipped back by the same client at once: the storm keeps deciding side
            // effects, whatever the draw (a run left with automation off delivered 6).
            let switch = *rng.pick(&["safe_mode", "automation_enabled"]);
            for _ in 0..2 {
                http.tally.tried(Operation::Flip);
                let Ok(now) = http.switches(give_up).await else {
                    break;
                };
                let key = letters_key();
                // What its reason names it by (the key itself, but for a broken run).
                let named = match flip_keys {
                    FlipKeys::Letters => key.clone(),
                    FlipKeys::Redacted => format!("+1415555{:04}", rng.below(10_000)),
                };
                let enable = !now[switch].as_bool().unwrap_or(false);
                let body = json!({"switch": switch, "enable": enable,
                                  "expected_version": now["version"], "reason": format!("chaos flip {named}"), "confirm": true});
                run.sent.push(Sent::Flip { key: named.clone() });
                let path = "/api/v1/kill-switches";
                match http
                    .until_final(Method::POST, path, &body, Some(&key), give_up)
                    .await
                {
                    Some((200, first)) => {
                        if rng.below(4) == 0 {
                            let request = (Method::POST, path, &body, Some(key.as_str()));
                            let same = |s: u16, again: &Value| s == 200 && *again == first;
                            repeat(
                                &http,
                                &mut run,
                                &format!("flip {key}"),
                                request,
                                give_up,
                                same,
                            )
                            .await;
                        }
                        http.tally.settled(Operation::Flip);
                        acked.push(Acked::Flip { key: named });
                        let stops = (switch == "safe_mode") == enable;
                        if !stops {
                            break;
                        }
                    }
                    // Someone else changed it first: a final answer, nothing applied.
                    Some((409, _)) => {
                        http.tally.settled(Operation::Flip);
                        break;
                    }
                    None => break,
                    Some((s, v)) => return Err(format!("flip: unexpected {s} {v}")),
                }
            }
        }
    }
    run.acked = std::mem::take(acked);
    Ok(run)
}
