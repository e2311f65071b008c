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
    use ops_console::model::switches::Switch;
    use ops_console::server::domain::events::{parse, Events, Outcome as IngestOutcome};
    use ops_console::server::domain::switches::{ChangeRequest, Origin, Switches, Ttls};
    use ops_console::server::store::events::{
        ActionRecord, ActionStatus, ActionType, ConversationState, EventRecord, EventStatus, Mode,
        RecordKind,
    };
    use ops_console::server::store::schema::{MW_CONVERSATION_STATE, MW_IDEMPOTENCY};

    let clock = Clock::default();
    let events = Events::new(
        store.clone(),
        clock.clone(),
        std::sync::Arc::new(config.clone()),
    )?;
    let ttls = Ttls {
        audit_days: 1,
        settings_days: 1,
    };
    let switches = Switches::new(store.clone(), clock.clone(), ttls);
    let current = switches.load().await.map_err(|e| e.to_string())?;
    let req = ChangeRequest {
        switch: Switch::SafeMode,
        enable: false,
        expected_version: current.version,
        reason: "benchmark".into(),
        confirmed: true,
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

    let mut plain = Series::new("events: plain puts, no conditions (baseline)");
    let mut fresh = Series::new("events: new event (claim, decide, 1 effect)");
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
            conversation_id: ev.conversation_id.clone(),
            created_at: now.to_rfc3339(),
            last_processed_at: now.to_rfc3339(),
            received_at: now.to_rfc3339(),
            expires_at: now.timestamp() + 86_400,
            safe_mode: false,
            automation_enabled: false,
            source_message_id: ev.message_id.clone(),
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
            attempts: 1,
            claim_nonce: "n".into(),
            lease_until_ms: 0,
            outbox: None,
            outbox_sk: None,
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
