//! Processing one helpdesk event, in the order of design doc 1 (section 3): read the kill
//! switches, claim the event (Table A), decide and record state (Table B) and audit
//! (Table C) atomically, then perform each side effect at most once.
//!
//! Crash safety: every step can be re-run by whoever holds the claim next. The event's
//! claim carries a lease; a worker that vanished is taken over once it ran out. The
//! decision is stored with the event in the same transaction as the state, so a takeover
//! finds it and never decides twice. Each side effect claims its own key before it is
//! delivered, and a delivery is recorded with the nonce of its claim: a re-run skips what
//! was delivered, and delivers what was claimed but never delivered exactly once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::json;

use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::accounts::passwords::sha256_hex;
use crate::server::domain::events::{apply, decide, Decision, Incoming, PlannedAction, Switches};
use crate::server::ids::random_hex;
use crate::server::outbound::{DeliveryError, Webhook};
use crate::server::store::audit::AuditItem;
use crate::server::store::events::{
    self as records, ActionEnd, ActionRecord, Claim, DecisionRecord, DecisionWrite, EventRecord,
    CLAIMED, DECIDED, DELIVERED, PROCESSED, PROCESSING, QUEUED, REJECTED, RETRY,
};
use crate::server::store::{switches, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("this event is being processed right now; retry in {retry_after} s")]
    InProgress { retry_after: i64 },
    #[error("a side effect could not be delivered ({0}); the event will be finished on the next delivery")]
    DeliveryFailed(String),
    #[error("simulated crash")]
    SimulatedCrash,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Faults tests switch on to simulate a crash at a precise point.
#[derive(Default)]
pub struct Faults {
    /// The next side effect is claimed, then the worker "dies" before delivering it.
    pub crash_after_action_claim: AtomicBool,
}

#[derive(Clone, Debug, Serialize)]
pub struct ActionOutcome {
    pub action_type: String,
    pub target: String,
    pub key: String,
    /// `delivered`, `queued`, `suppressed`, `rejected`, or `already <status>`.
    pub result: String,
}

#[derive(Debug)]
pub enum Outcome {
    Processed {
        record: Box<EventRecord>,
        decision: Box<Decision>,
        actions: Vec<ActionOutcome>,
    },
    Duplicate {
        record: Box<EventRecord>,
    },
}

#[derive(Clone)]
pub struct Ingest {
    store: Store,
    clock: Clock,
    config: Arc<Config>,
    webhook: Option<Webhook>,
    pub faults: Arc<Faults>,
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn short(key: &str) -> String {
    sha256_hex(key.as_bytes())[..16].to_string()
}

impl Ingest {
    pub fn new(store: Store, clock: Clock, config: Arc<Config>) -> Result<Ingest, String> {
        let webhook = Webhook::from_config(&config.events)?;
        Ok(Ingest {
            store,
            clock,
            config,
            webhook,
            faults: Arc::default(),
        })
    }

    pub fn webhook_url(&self) -> Option<String> {
        self.webhook.as_ref().map(Webhook::url)
    }

    fn lease_ms(&self) -> i64 {
        self.config.events.lease_seconds * 1000
    }

    /// An audit record of this event: its id is derived from the event, so a re-run of the
    /// same step writes nothing new.
    fn audit(&self, rec: &EventRecord, action_type: &str, id: &str, actor: &str) -> AuditItem {
        let at = DateTime::parse_from_rfc3339(&rec.created_at)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|_| self.clock.now());
        let mut a = AuditItem::new(
            &rec.conversation_id,
            action_type,
            at,
            id,
            self.config.ttl.audit_days,
        );
        a.actor = actor.to_string();
        a
    }

    /// Processes `ev` before answering: `Processed` once, `Duplicate` for every delivery
    /// after that.
    pub async fn ingest(&self, ev: &Incoming, actor: &str) -> Result<Outcome, IngestError> {
        let cfg = &self.config.events;
        let now = self.clock.now();
        let s = switches::load(&self.store, now).await?;
        let live = Switches {
            safe_mode: s.safe_mode.enabled,
            automation_enabled: s.automation_enabled.enabled,
        };
        let key = ev.event_key(cfg.hash_bucket_seconds);
        let canonical = ev.canonical();
        let nonce = random_hex(16);
        let created = iso(now);
        let fresh = EventRecord {
            event_id: key.clone(),
            kind: "event".into(),
            status: PROCESSING.into(),
            mode: if live.automation_enabled {
                "automation_candidate"
            } else {
                "route_only"
            }
            .into(),
            conversation_id: ev.conversation_id.clone(),
            created_at: created.clone(),
            last_processed_at: created.clone(),
            received_at: iso(ev.created_at),
            expires_at: (now + Duration::days(self.config.ttl.idempotency_days)).timestamp(),
            safe_mode: live.safe_mode,
            automation_enabled: live.automation_enabled,
            source_message_id: ev.message_id.clone(),
            payload_sha256: sha256_hex(canonical.as_bytes()),
            payload_bytes: canonical.len() as i64,
            intent: None,
            channel: ev.channel.clone(),
            decision: None,
            duplicates: 0,
            attempts: 1,
            claim_nonce: nonce.clone(),
            lease_until_ms: now.timestamp_millis() + self.lease_ms(),
            event_day: now.format("%Y-%m-%d").to_string(),
            created_sk: format!("{created}#{key}"),
        };
        let rec = match records::put_claim(&self.store, &fresh, now.timestamp()).await? {
            Claim::Won => fresh,
            Claim::Exists(old) if old.status == PROCESSED => {
                records::count_duplicate(&self.store, &key).await?;
                tracing::info!(event = %key, "duplicate event");
                return Ok(Outcome::Duplicate { record: old });
            }
            Claim::Exists(old) if old.lease_until_ms > now.timestamp_millis() => {
                return Err(IngestError::InProgress {
                    retry_after: retry_after(old.lease_until_ms, now),
                })
            }
            Claim::Exists(old) => {
                let lease = now.timestamp_millis() + self.lease_ms();
                match records::take_over::<EventRecord>(
                    &self.store,
                    &key,
                    &old.claim_nonce,
                    &nonce,
                    lease,
                    &[],
                )
                .await?
                {
                    Some(rec) => {
                        tracing::warn!(event = %key, attempts = rec.attempts, "took over an abandoned event");
                        rec
                    }
                    None => return Err(IngestError::InProgress { retry_after: 1 }),
                }
            }
        };

        let decision = match (&rec.status[..], &rec.decision) {
            (DECIDED, Some(json)) => serde_json::from_str(json)
                .map_err(|e| StoreError::corrupt("rp_mw_idempotency", format!("decision: {e}")))?,
            _ => self.decide_and_record(&rec, ev, live, actor).await?,
        };

        // Safe mode wins whenever it is on: at the claim or now.
        let suppress = rec.safe_mode || live.safe_mode;
        let mut outcomes = Vec::new();
        for action in &decision.actions {
            outcomes.push(
                self.side_effect(&rec, &decision, action, suppress, actor)
                    .await?,
            );
        }
        records::finish_event(&self.store, &key, &rec.claim_nonce, &iso(self.clock.now())).await?;
        tracing::info!(
            event = %key,
            intent = %decision.intent,
            team = %decision.team,
            mode = %decision.mode,
            actions = outcomes.len(),
            "event processed"
        );
        let mut record = rec;
        record.status = PROCESSED.into();
        record.intent = Some(decision.intent.clone());
        Ok(Outcome::Processed {
            record: Box::new(record),
            decision: Box::new(decision),
            actions: outcomes,
        })
    }

    /// Reads the conversation, decides, and writes decision + state + audit in one
    /// transaction; re-reads and re-decides when another event of the conversation won.
    async fn decide_and_record(
        &self,
        rec: &EventRecord,
        ev: &Incoming,
        live: Switches,
        actor: &str,
    ) -> Result<Decision, IngestError> {
        let cfg = &self.config.events;
        let switches = Switches {
            safe_mode: rec.safe_mode || live.safe_mode,
            automation_enabled: rec.automation_enabled && live.automation_enabled,
        };
        let mut pause = 5u64;
        for _ in 0..100 {
            let now = self.clock.now();
            let state = records::get_state(&self.store, &ev.conversation_id).await?;
            let decision = decide(&state, ev, switches, cfg, now);
            let next = apply(
                &state,
                ev,
                &decision,
                !switches.safe_mode,
                cfg,
                self.config.ttl.conversation_state_days,
                now,
            );
            let decision_json =
                serde_json::to_string(&decision).map_err(|e| StoreError::corrupt("decision", e))?;
            let mut audit = self.audit(
                rec,
                "decision",
                &format!("{}-decision", short(&rec.event_id)),
                actor,
            );
            audit.idempotency_key = rec.event_id.clone();
            audit.action_payload_redacted = json!({
                "mode": decision.mode,
                "intent": decision.intent,
                "team": decision.team,
                "confidence": decision.confidence,
                "tags": decision.tags,
                "risk_flags": decision.risk_flags,
                "rules": decision.matched_rules,
                "auto_reply": decision.auto_reply,
                "escalate": decision.escalate,
                "safe_mode": switches.safe_mode,
                "channel": ev.channel,
            })
            .to_string();
            audit.result = "success".into();
            let record = DecisionRecord {
                event_key: &rec.event_id,
                nonce: &rec.claim_nonce,
                decision_json: &decision_json,
                intent: &decision.intent,
                now_iso: &iso(now),
                state: &next,
                read_version: state.version,
                audit: &audit,
            };
            match records::record_decision(&self.store, &record).await? {
                DecisionWrite::Done => return Ok(decision),
                DecisionWrite::LostClaim => return Err(IngestError::InProgress { retry_after: 1 }),
                DecisionWrite::StaleState => {
                    // Jittered, growing pause: concurrent events of one conversation take
                    // turns instead of colliding again at once.
                    let jitter =
                        u64::from_str_radix(&random_hex(2), 16).unwrap_or(0) % pause.max(1);
                    tokio::time::sleep(std::time::Duration::from_millis(pause + jitter)).await;
                    pause = (pause * 2).min(200);
                }
            }
        }
        Err(IngestError::InProgress { retry_after: 1 })
    }

    async fn side_effect(
        &self,
        rec: &EventRecord,
        decision: &Decision,
        action: &PlannedAction,
        suppress: bool,
        actor: &str,
    ) -> Result<ActionOutcome, IngestError> {
        let outcome = |result: String| ActionOutcome {
            action_type: action.action_type.clone(),
            target: action.target.clone(),
            key: action.key.clone(),
            result,
        };
        let payload = json!({
            "target": action.target,
            "intent": decision.intent,
            "event_key": rec.event_id,
        });
        if suppress {
            let mut audit = self.audit(
                rec,
                &action.action_type,
                &format!("{}-suppressed", short(&action.key)),
                actor,
            );
            audit.idempotency_key = action.key.clone();
            audit.action_payload_redacted = payload.to_string();
            audit.result = "suppressed: safe_mode".into();
            records::audit_once(&self.store, &audit).await?;
            return Ok(outcome("suppressed".into()));
        }
        let now = self.clock.now();
        let nonce = random_hex(16);
        let lease = now.timestamp_millis() + self.lease_ms();
        let fresh = ActionRecord {
            event_id: action.key.clone(),
            kind: "action".into(),
            action_type: action.action_type.clone(),
            target: action.target.clone(),
            conversation_id: rec.conversation_id.clone(),
            source_event: rec.event_id.clone(),
            status: CLAIMED.into(),
            result: None,
            created_at: iso(now),
            updated_at: iso(now),
            expires_at: (now + Duration::days(self.config.ttl.idempotency_days)).timestamp(),
            attempts: 1,
            claim_nonce: nonce.clone(),
            lease_until_ms: lease,
            outbox: None,
            outbox_sk: None,
        };
        let mine = match records::put_claim(&self.store, &fresh, now.timestamp()).await? {
            Claim::Won => fresh,
            Claim::Exists(old) if matches!(&old.status[..], DELIVERED | QUEUED | REJECTED) => {
                return Ok(outcome(format!("already {}", old.status)));
            }
            Claim::Exists(old)
                if old.status == CLAIMED && old.lease_until_ms > now.timestamp_millis() =>
            {
                return Err(IngestError::InProgress {
                    retry_after: retry_after(old.lease_until_ms, now),
                });
            }
            Claim::Exists(old) => {
                match records::take_over::<ActionRecord>(
                    &self.store,
                    &action.key,
                    &old.claim_nonce,
                    &nonce,
                    lease,
                    &[("status", crate::server::store::items::s(CLAIMED))],
                )
                .await?
                {
                    Some(taken) => taken,
                    None => return Err(IngestError::InProgress { retry_after: 1 }),
                }
            }
        };
        if self
            .faults
            .crash_after_action_claim
            .swap(false, Ordering::SeqCst)
        {
            return Err(IngestError::SimulatedCrash);
        }
        let audit_id = format!("{}-a{}", short(&action.key), mine.attempts);
        let mut audit = self.audit(rec, &action.action_type, &audit_id, actor);
        audit.idempotency_key = action.key.clone();
        audit.action_payload_redacted = payload.to_string();
        let now_iso = iso(self.clock.now());
        let (status, result, outbox_sk, answer) = match &self.webhook {
            None => (
                QUEUED,
                "queued: outbox".to_string(),
                Some(format!("{now_iso}#{}", action.key)),
                "queued".to_string(),
            ),
            Some(hook) => {
                let body = json!({
                    "action_key": action.key,
                    "action_type": action.action_type,
                    "target": action.target,
                    "conversation_id": rec.conversation_id,
                    "event_key": rec.event_id,
                    "source_message_id": rec.source_message_id,
                    "intent": decision.intent,
                    "team": decision.team,
                    "attempt": mine.attempts,
                });
                match hook
                    .deliver(&action.key, Bytes::from(body.to_string()))
                    .await
                {
                    Ok(code) => (
                        DELIVERED,
                        format!("success: receiver answered {code}"),
                        None,
                        "delivered".to_string(),
                    ),
                    Err(DeliveryError::Rejected(code)) => (
                        REJECTED,
                        format!("fail: receiver refused it ({code})"),
                        None,
                        "rejected".to_string(),
                    ),
                    Err(DeliveryError::Retryable(why)) => {
                        audit.result = format!("fail: {why}");
                        let end = ActionEnd {
                            key: &action.key,
                            nonce: &mine.claim_nonce,
                            status: RETRY,
                            result: &audit.result,
                            now_iso: &now_iso,
                            outbox_sk: None,
                        };
                        records::finish_action(&self.store, &end, &audit).await?;
                        records::release_event(&self.store, &rec.event_id, &rec.claim_nonce)
                            .await?;
                        tracing::warn!(action = %action.key, reason = %why, "side effect not delivered; will retry");
                        return Err(IngestError::DeliveryFailed(why));
                    }
                }
            }
        };
        audit.result = result.clone();
        let end = ActionEnd {
            key: &action.key,
            nonce: &mine.claim_nonce,
            status,
            result: &result,
            now_iso: &now_iso,
            outbox_sk: outbox_sk.as_deref(),
        };
        if !records::finish_action(&self.store, &end, &audit).await? {
            return Err(IngestError::InProgress { retry_after: 1 });
        }
        Ok(outcome(answer))
    }
}

fn retry_after(lease_until_ms: i64, now: DateTime<Utc>) -> i64 {
    ((lease_until_ms - now.timestamp_millis()) / 1000 + 1).max(1)
}
