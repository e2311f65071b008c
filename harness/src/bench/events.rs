//! Event ingestion against the same writes done plainly.

use std::time::Instant;

use serde_json::json;

use super::{plain_put, print_rows, Series};
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::store::audit::AuditItem;
use ops_console::server::store::{schema, Store};

/// Event ingestion: a new event and its duplicate against the same items written plainly
/// (event record, conversation state, decision audit, one side effect and its audit: what a
/// pipeline without conditions, reads or transactions would write).
pub async fn bench_events(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<serde_json::Value>, String> {
    use ops_console::server::domain::events::decision::{ActionType, Mode};
    use ops_console::server::domain::events::parse;
    use ops_console::server::domain::events::state::ConversationState;
    use ops_console::server::services::events::{Events, Outcome as IngestOutcome};
    use ops_console::server::store::events::{
        ActionRecord, ActionStatus, EventRecord, EventStatus, RecordKind,
    };
    use ops_console::server::store::schema::{MW_CONVERSATION_STATE, MW_IDEMPOTENCY};

    let clock = Clock::default();
    let seal = ops_console::server::crypto::Seal::from_keys([1; 32], [2; 32]);
    let events = Events::new(
        store.clone(),
        clock.clone(),
        std::sync::Arc::new(config.clone()),
        seal,
    )?;
    safe_mode_off(store, &clock).await?;

    let mut plain = Series::new("events: plain puts, no conditions (baseline)");
    let mut fresh = Series::new("events: new event (claim, decide, 1 effect queued)");
    let mut dup = Series::new("events: duplicate delivery");
    let now = chrono::Utc::now();
    for i in 0..n {
        let body = json!({
            "conversation_id": format!("bench-c{}", i % 50),
            "message_id": format!("m-{i}"),
            "created_at": now.to_rfc3339(),
            "channel": "chat",
            "text": "hello, a quick question",
        })
        .to_string();
        let ev = parse(body.as_bytes()).map_err(|e| e.to_string())?;

        // The baseline writes the same five items, unconditionally.
        let r0 = store.requests().total();
        let t = Instant::now();
        let record = EventRecord {
            event_id: format!("plain:{i}"),
            kind: RecordKind::Event,
            status: EventStatus::Processed,
            mode: Mode::RouteOnly,
            conversation_id: ev.conversation_id.to_string(),
            created_at: now.to_rfc3339(),
            last_processed_at: now.to_rfc3339(),
            received_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            safe_mode: false,
            automation_enabled: false,
            source_message_id: ev.message_id.as_deref().map(str::to_string),
            payload_sha256: "0".repeat(64),
            payload_bytes: 100,
            intent: Some("general".into()),
            channel: "chat".into(),
            decision: Some("{}".into()),
            duplicates: 0,
            attempts: 1,
            claim_nonce: "n".into(),
            lease_until_ms: 0,
            event_day: "plain".into(),
            created_sk: format!("plain:{i}"),
        };
        plain_put(store, MW_IDEMPOTENCY.base, &record).await?;
        let state = ConversationState {
            conversation_id: format!("plain-c{}", i % 50),
            version: i as i64 + 1,
            updated_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            ..ConversationState::default()
        };
        plain_put(store, MW_CONVERSATION_STATE.base, &state).await?;
        let audit_item = AuditItem::new("plain", "decision", now, &format!("p{i}"), 1);
        plain_put(store, schema::MW_AUDIT_ACTIONS.base, &audit_item).await?;
        let action = ActionRecord {
            event_id: format!("plain-act:{i}"),
            kind: RecordKind::Action,
            action_type: ActionType::Route,
            target: "support".into(),
            conversation_id: "plain".into(),
            source_event: format!("plain:{i}"),
            status: ActionStatus::Queued,
            result: None,
            created_at: now.to_rfc3339(),
            updated_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            attempts: 0,
            claim_nonce: String::new(),
            lease_until_ms: 0,
            outbox: Some("due#00".into()),
            due: None,
            outbox_sk: Some(format!("{:013}#plain-act:{i}", now.timestamp_millis())),
            next_at_ms: now.timestamp_millis(),
            receiver: None,
            after: None,
            body: "{}".into(),
            tries: Vec::new(),
            cause: None,
            unknown: false,
            held_reason: None,
            round_start: 0,
            trace_parent: None,
        };
        plain_put(store, MW_IDEMPOTENCY.base, &action).await?;
        let audit_item = AuditItem::new("plain", "route", now, &format!("pa{i}"), 1);
        plain_put(store, schema::MW_AUDIT_ACTIONS.base, &audit_item).await?;
        let d = t.elapsed();
        plain.add(d, store.requests().total() - r0);

        let r0 = store.requests().total();
        let t = Instant::now();
        let out = events
            .ingest(&ev, "bench")
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, IngestOutcome::Processed { .. }) {
            return Err(format!("expected a new event, got {out:?}"));
        }
        fresh.add(d, store.requests().total() - r0);

        let r0 = store.requests().total();
        let t = Instant::now();
        let out = events
            .ingest(&ev, "bench")
            .await
            .map_err(|e| e.to_string())?;
        let d = t.elapsed();
        if !matches!(out, IngestOutcome::Duplicate { .. }) {
            return Err(format!("expected a duplicate, got {out:?}"));
        }
        dup.add(d, store.requests().total() - r0);
    }
    Ok(print_rows("event ingestion", &[plain, fresh, dup]))
}

/// Event acknowledgement while the console's dispatcher delivers to a receiver that answers
/// at once, and to one that takes 5 s: the answer must not wait on the receiver.
pub async fn bench_ack(
    store: &Store,
    config: &Config,
    n: usize,
) -> Result<Vec<serde_json::Value>, String> {
    use ops_console::server::config::Secret;
    use ops_console::server::crypto::Seal;
    use ops_console::server::domain::events::parse;
    use ops_console::server::outbound::signature::SigningSecret;
    use ops_console::server::services::events::Events;

    let mut rows = Vec::new();
    for (name, delay_ms) in [
        ("ack: receiver answers at once (baseline)", 0u64),
        ("ack: receiver answers in 5 s", 5_000),
    ] {
        let (url, _) = receiver(delay_ms).await?;
        let mut cfg = config.clone();
        cfg.events.webhook_url = url;
        cfg.events.webhook_secret = Secret::new(SigningSecret::generate().expose());
        cfg.events.webhook_timeout_ms = 10_000;
        let clock = Clock::default();
        let events = Events::new(
            store.clone(),
            clock,
            std::sync::Arc::new(cfg),
            Seal::from_keys([3; 32], [4; 32]),
        )?;
        let (_running, stop) = tokio::sync::watch::channel(false);
        let dispatcher = {
            let events = events.clone();
            tokio::spawn(async move { events.run_dispatcher(stop).await })
        };
        let mut series = Series::new(name);
        let now = chrono::Utc::now();
        for i in 0..n {
            let body = json!({
                "conversation_id": format!("ack-{delay_ms}-c{}", i % 20),
                "message_id": format!("m-{i}"),
                "created_at": now.to_rfc3339(),
                "channel": "chat",
                "text": "I am filing a chargeback with my bank",
            })
            .to_string();
            let ev = parse(body.as_bytes()).map_err(|e| e.to_string())?;
            let r0 = store.requests().total();
            let t = Instant::now();
            events
                .ingest(&ev, "bench")
                .await
                .map_err(|e| e.to_string())?;
            series.add(t.elapsed(), store.requests().total() - r0);
        }
        dispatcher.abort();
        rows.push(series);
    }
    Ok(print_rows(
        "event acknowledgement vs the receiver's speed",
        &rows,
    ))
}

/// A receiver that answers 204 after `delay_ms` and counts what it got.
pub(crate) async fn receiver(
    delay_ms: u64,
) -> Result<(String, std::sync::Arc<std::sync::atomic::AtomicU64>), String> {
    use axum::routing::post;
    use std::sync::atomic::{AtomicU64, Ordering};
    let got = std::sync::Arc::new(AtomicU64::new(0));
    let count = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move || {
            let count = count.clone();
            async move {
                if delay_ms > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
                }
                count.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{addr}/hook"), got))
}

/// Safe mode off (the benchmarks' side effects are to be delivered, not held).
pub(crate) async fn safe_mode_off(store: &Store, clock: &Clock) -> Result<(), String> {
    use ops_console::model::kill_switches::Switch;
    use ops_console::server::domain::kill_switches::ChangeRequest;
    use ops_console::server::services::kill_switches::{Origin, Switches, Ttls};
    let ttls = Ttls {
        audit_days: 1,
        settings_days: 1,
    };
    let switches = Switches::new(store.clone(), clock.clone(), ttls);
    let current = switches.load().await.map_err(|e| e.to_string())?;
    if !current.safe_mode.enabled {
        return Ok(());
    }
    let req = ChangeRequest {
        switch: Switch::SafeMode,
        enable: false,
        expected_version: current.version,
        reason: "benchmark".into(),
        confirmed: true,
        ends: None,
        emergency: false,
    };
    let origin = Origin {
        actor: "bench",
        idempotency_key: "bench",
        action_id: "bench",
    };
    switches
        .change(&req, &origin)
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(())
}
