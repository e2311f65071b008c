//! The long hang: DynamoDB accepts connections and answers nothing for longer than the
//! SDK's own timeouts (10 s an attempt, 30 s an operation), as AWS in a brownout, while
//! clients ask. Every request must still be answered by the console's request deadline,
//! 503 with `Retry-After` (the tally checks the header on every 5xx). Once DynamoDB
//! answers again, the events sent meanwhile are sent again until acknowledged: the checks
//! that follow count them with the storm's (each decided once, its side effects delivered
//! once, whatever the attempts stuck in the hang did when it ended).

use std::time::Duration;

use dynamodb_faults::{Outage, Proxy};
use hyper::Method;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::clients::{Acked, Http, Sent};

/// Longer than the SDK's operation timeout: every console's background loops meet it.
pub const LONG_HANG: Duration = Duration::from_secs(31);

/// The consoles' request deadline in a chaos run: past the SDK's 10 s attempt timeout, so
/// a request stuck in the hang has its first attempt time out and retried before its
/// deadline answers; below the clients' 15 s.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(12);

/// A console's answer may come this much after its deadline (the deadline is checked
/// between awaits; the machine may be loaded).
const SLACK: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct HangRun {
    /// Requests made during the hang.
    pub asked: usize,
    /// Of those, answered 503 by the deadline.
    pub in_time: usize,
    pub longest: Duration,
    pub acked: Vec<Acked>,
    pub sent: Vec<Sent>,
    pub violations: Vec<String>,
}

/// One request during the hang: how it was answered, and how long it took.
async fn ask(
    http: &Http,
    method: Method,
    path: &str,
    body: &Value,
) -> (Result<u16, String>, Duration) {
    let began = Instant::now();
    let answer = http
        .once_with(method, path, body, None, None)
        .await
        .map(|(s, _)| s);
    (answer, began.elapsed())
}

fn event(i: usize) -> Value {
    json!({"conversation_id": format!("chaos-hang-{}", i % 2), "message_id": format!("hang-m{i}"),
           "created_at": chrono::Utc::now().to_rfc3339(), "channel": "email",
           "text": "Where is my order? It has not arrived", "customer": {"id": "cust-hang"}})
}

pub async fn run(proxy: &Proxy, http: &Http, consoles: usize) -> HangRun {
    let mut out = HangRun::default();
    proxy.update(|f| f.outage = Outage::Hang);
    let began = Instant::now();
    // Each console is asked twice (a read and an event), at once and again past the SDK's
    // first attempt's timeout.
    let mut events = Vec::new();
    let mut asks = tokio::task::JoinSet::new();
    for wave in 0..2u64 {
        let at = began + Duration::from_secs(wave * 12);
        for c in 0..consoles * 2 {
            let i = (wave as usize) * consoles * 2 + c;
            let http = http.clone();
            let (method, path, body) = if c % 2 == 0 {
                (Method::GET, "/api/v1/kill-switches", Value::Null)
            } else {
                let body = event(i);
                events.push(body.clone());
                (Method::POST, "/api/v1/events", body)
            };
            asks.spawn(async move {
                tokio::time::sleep_until(at).await;
                (path, ask(&http, method, path, &body).await)
            });
        }
    }
    while let Some(joined) = asks.join_next().await {
        let Ok((path, (answer, took))) = joined else {
            out.violations
                .push("during the long hang a request's task failed".into());
            continue;
        };
        out.asked += 1;
        out.longest = out.longest.max(took);
        match answer {
            Ok(503) if took <= REQUEST_DEADLINE + SLACK => out.in_time += 1,
            Ok(s) => out.violations.push(format!(
                "during the long hang {path} was answered {s} after {took:.1?} (503 by the {REQUEST_DEADLINE:?} deadline expected)"
            )),
            Err(e) => out.violations.push(format!(
                "during the long hang {path} got no answer ({e}) after {took:.1?}: the request deadline did not answer it"
            )),
        }
    }
    tokio::time::sleep_until(began + LONG_HANG).await;
    proxy.update(|f| f.outage = Outage::None);
    // DynamoDB is back: each event sent during the hang is sent again until acknowledged.
    let give_up = Instant::now() + Duration::from_secs(90);
    for body in events {
        let conversation = body["conversation_id"].as_str().unwrap_or_default();
        let message = body["message_id"].as_str().unwrap_or_default();
        out.sent.push(Sent::Event {
            key: format!("evt:rp:{conversation}:{message}"),
        });
        match http
            .until_final(Method::POST, "/api/v1/events", &body, None, give_up)
            .await
        {
            Some((200, v)) => out.acked.push(Acked::Event {
                key: v["event_key"].as_str().unwrap_or_default().to_string(),
            }),
            Some((s, v)) => out
                .violations
                .push(format!("after the long hang, event {message}: {s} {v}")),
            None => out.violations.push(format!(
                "after the long hang, event {message} was never acknowledged"
            )),
        }
    }
    if out.asked == 0 {
        out.violations
            .push("the long hang asked nothing: it proves nothing".into());
    }
    out
}
