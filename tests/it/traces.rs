//! Traces (docs/operations.md, "Traces"): an event posted with a `traceparent`, queued by
//! one console and delivered by the other, exported to a real OTLP receiver
//! (`scripts/otlp-receiver`, decoding with the OpenTelemetry protocol definitions from
//! PyPI): one trace with the documented parent links, the receiver got each delivery's
//! `traceparent`, and nothing personal in any exported span. The spans are also kept in
//! `target/test-logs/`, which `make scan-logs` scans with the logs.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use axum::body::Body;
use axum::http::{header, Request};
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;

use crate::events::event;
use ops_console::server::ids::random_hex;
use ops_console::server::outbound::signature::SigningSecret;
use ops_console::server::telemetry::traces;

/// The OTLP receiver, stopped with the test.
struct Collector(Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the receiver writing to `out`; its `/v1/traces` URL.
fn collector(out: &std::path::Path) -> (Collector, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new(format!("{root}/.venv/bin/python"))
        .arg(format!("{root}/scripts/otlp-receiver"))
        .arg(out)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the OTLP receiver starts (make python-tools installs opentelemetry-proto)");
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let port = port.trim().to_string();
    assert!(!port.is_empty(), "the OTLP receiver printed no port");
    (
        Collector(child),
        format!("http://127.0.0.1:{port}/v1/traces"),
    )
}

fn spans_in(out: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn an_event_delivered_by_the_other_console_is_one_trace_that_reaches_the_receiver() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("spans-{}.log", random_hex(4)));
    let (_collector, endpoint) = collector(&out);
    let provider = traces::provider(Some(&endpoint)).unwrap();
    // This test's thread (a current-thread runtime runs every task of it here) exports.
    let _traced = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(traces::layer(&provider)),
    );

    let secret = SigningSecret::generate();
    let (receiver, url) = crate::receiver::Receiver::start(vec![secret.clone()]).await;
    let app = crate::helpers::spawn_app_with(move |c| {
        c.events.webhook_url = url;
        c.events.webhook_secret = ops_console::server::config::Secret::new(secret.expose());
    })
    .await;
    app.set_switches(false, true).await;
    let other = app.second_console();
    let key = app.api_key(&["events:write"]).await;

    // The helpdesk's own trace, and personal data in the event.
    let (trace_id, caller) = (random_hex(16), random_hex(8));
    let email = format!("jane.{}@example.com", random_hex(3));
    let phone = "+14155550123";
    let text = format!("please refund my order, write to {email} or call {phone}");
    let body = event(&format!("c-trace-{}", random_hex(3)), Some("m-1"), &text);
    let answer = app
        .send(
            Request::post("/api/v1/events")
                .header(header::HOST, "localhost")
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header("traceparent", format!("00-{trace_id}-{caller}-01"))
                .header("tracestate", format!("vendor={}", random_hex(8)))
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let queued = answer.json()["actions"].as_array().unwrap().len();
    assert!(
        queued >= 2,
        "the event has two side effects or more: {}",
        answer.body
    );

    // The other console delivers them all.
    while receiver.total() < queued {
        let round = other.state.events.dispatch_all().await.unwrap();
        assert!(
            round.delivered > 0 || receiver.total() >= queued,
            "{round:?}"
        );
    }
    let p = provider.clone();
    tokio::task::spawn_blocking(move || p.force_flush())
        .await
        .unwrap()
        .expect("the spans were exported");

    let all = spans_in(&out);
    let trace: Vec<&Value> = all.iter().filter(|s| s["trace_id"] == trace_id).collect();
    let named = |name: &str| -> Vec<&Value> {
        trace
            .iter()
            .copied()
            .filter(|s| s["name"].as_str().unwrap().starts_with(name))
            .collect()
    };
    let by_id: HashMap<&str, &Value> = trace
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), *s))
        .collect();
    let parent_name = |s: &Value| -> String {
        by_id
            .get(s["parent_span_id"].as_str().unwrap())
            .map_or("(outside)".into(), |p| {
                p["name"].as_str().unwrap().to_string()
            })
    };

    // The request continues the helpdesk's span.
    let request = named("POST /api/v1/events");
    assert_eq!(request.len(), 1, "{trace:#?}");
    assert_eq!(request[0]["parent_span_id"], caller);
    // The caller's tracestate rides on no span of ours.
    assert!(trace.iter().all(|s| s["trace_state"] == ""), "{trace:#?}");
    assert_eq!(request[0]["attributes"]["http.response.status_code"], 200);
    assert_eq!(request[0]["resource"]["service.name"], "ops-console");
    // The decision, under the request; each action, under the decision.
    let event_span = named("event");
    assert_eq!(event_span.len(), 1);
    assert_eq!(parent_name(event_span[0]), "POST /api/v1/events");
    let actions = named("queue ");
    assert_eq!(actions.len(), queued, "{trace:#?}");
    assert!(actions.iter().all(|a| parent_name(a) == "event"));
    // Each delivery, by the other console, under its action.
    let deliveries = named("deliver ");
    assert_eq!(deliveries.len(), queued, "{trace:#?}");
    for d in &deliveries {
        assert!(parent_name(d).starts_with("queue "), "{d}");
        assert_eq!(d["attributes"]["outcome"], "http 204");
    }
    // DynamoDB calls are children, with their operation and tables (never a key or item).
    let dynamodb = named("DynamoDB.");
    assert!(
        dynamodb
            .iter()
            .any(|s| s["attributes"]["rpc.method"] == "TransactWriteItems"
                && parent_name(s) == "event"),
        "the decision's transaction is a span of the event"
    );
    assert!(
        dynamodb
            .iter()
            .any(|s| parent_name(s).starts_with("deliver ")),
        "a delivery's write is a span of it"
    );
    let env_suffix = format!("-{}", app.state.config.env.as_str());
    for s in &dynamodb {
        let tables = s["attributes"]["aws.dynamodb.table_names"]
            .as_str()
            .unwrap();
        assert!(
            !tables.is_empty() && tables.split(',').all(|t| t.ends_with(&env_suffix)),
            "{s}"
        );
    }

    // The receiver got each delivery's own context: its trace, its span as the parent.
    let got = receiver.traceparents.lock().unwrap().clone();
    assert_eq!(got.len(), queued);
    for tp in &got {
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4, "{tp}");
        assert_eq!(parts[1], trace_id, "{tp}");
        assert!(
            deliveries.iter().any(|d| d["span_id"] == parts[2]),
            "{tp}: the parent is a delivery span"
        );
    }

    // Nothing personal in any exported span, of this trace or any other.
    let raw = std::fs::read_to_string(&out).unwrap();
    assert!(!raw.contains(&email) && !raw.contains(phone) && !raw.contains("refund my order"));
    assert!(!raw.contains(&key), "an API key in a span");
    // Off this thread: the last export runs on this test's runtime.
    tokio::task::spawn_blocking(move || provider.shutdown())
        .await
        .unwrap()
        .unwrap();
}
