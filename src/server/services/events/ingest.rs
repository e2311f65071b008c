//! Processing one helpdesk event, in the order docs/events.md gives: read the kill
//! switches, claim the event (Table A), then decide and record — the decision, the
//! conversation's state (Table B), the audit (Table C) and the side effects queued in the
//! outbox — in one transaction, and answer. Nothing waits on the receiver: the consoles'
//! dispatchers deliver from the outbox (`dispatch.rs`).
//!
//! Crash safety: the event's claim carries a lease; a worker that vanished before its
//! transaction committed is taken over by the next delivery once the lease ran out (the
//! helpdesk was not told 200, so it delivers again). Once the transaction committed,
//! everything the event needs is durable; a worker that dies after it leaves nothing
//! undone.

use crate::server::metrics;
use std::sync::Arc;

use tokio::sync::Notify;
use tracing::Instrument;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::crash_points::{CrashPoints, Never};
use crate::server::crypto::sha256_hex;
use crate::server::crypto::Seal;
use crate::server::domain::events::decision::{ActionType, Decision, Mode, Switches};
use crate::server::domain::events::rules::{apply, decide};
use crate::server::domain::events::Incoming;
use crate::server::ids::random_hex;
use crate::server::outbound::networks::Resolver;
use crate::server::outbound::schedule::RetrySchedule;
use crate::server::outbound::Sender;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::rate;
use crate::server::store::events::{
    self as records, Claim, DecisionRecord, DecisionWrite, EventRecord, EventStatus, RecordKind,
    TakeOver,
};
use crate::server::store::{kill_switches, Store, StoreError};
use crate::server::telemetry::traces;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("this event is being processed right now; retry in {retry_after} s")]
    InProgress { retry_after: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Clone, Debug, Serialize)]
pub struct ActionOutcome {
    pub action_type: ActionType,
    pub target: String,
    pub key: String,
    /// `queued` (in the outbox) or `suppressed` (safe mode).
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

/// What claiming an event found.
enum EventClaim {
    /// This worker owns it now: new, or taken over from a worker whose lease ran out.
    Mine(Box<EventRecord>),
    /// It was processed before: this delivery is a duplicate.
    Processed(Box<EventRecord>),
}

/// The helpdesk events service (`state.events`): the pipeline each webhook delivery goes
/// through. Cheap to clone.
#[derive(Clone)]
pub struct Events {
    pub(super) store: Store,
    pub(super) clock: Clock,
    pub(super) config: Arc<Config>,
    /// Delivers side effects (one HTTP client per console).
    pub(super) sender: Sender,
    pub(super) schedule: RetrySchedule,
    /// Seals the receiver's signing secrets at rest.
    pub(super) seal: Seal,
    /// Wakes this console's dispatcher when an event queued side effects.
    pub(super) kick: Arc<Notify>,
    /// Which due partitions this console's rounds read.
    pub(super) due_parts: Arc<super::due_parts::DueParts>,
    /// Who this console is, in leases it takes.
    pub(super) owner: String,
    /// Where this console would die: never, but in the tests that say so.
    pub(super) crash_points: Arc<dyn CrashPoints>,
    /// How this console last saw the rate limit's items (which write to try first).
    pub(super) rate_seen: Arc<rate::Seen>,
}

pub(super) use crate::server::clock::iso;

/// A short, stable id derived from a key: audit ids of one step repeat on a re-run.
pub(super) fn short(key: &str) -> String {
    sha256_hex(key.as_bytes())[..16].to_string()
}

/// Seconds until a lease runs out, at least 1.
pub(super) fn retry_after(lease_until_ms: i64, now: DateTime<Utc>) -> i64 {
    ((lease_until_ms - now.timestamp_millis()) / 1000 + 1).max(1)
}

impl Events {
    pub fn new(
        store: Store,
        clock: Clock,
        config: Arc<Config>,
        seal: Seal,
    ) -> Result<Events, String> {
        let schedule = RetrySchedule::parse(&config.events.retry_schedule)
            .map_err(|e| format!("events.retry_schedule: {e}"))?;
        let timeout =
            std::time::Duration::from_millis(config.events.webhook_timeout_ms.max(1) as u64);
        Ok(Events {
            store,
            clock,
            sender: Sender::new(timeout, Resolver::of_settings(&config.operations)),
            schedule,
            seal,
            kick: Arc::new(Notify::new()),
            due_parts: Arc::new(super::due_parts::DueParts::new()),
            owner: random_hex(8),
            config,
            crash_points: Arc::new(Never),
            rate_seen: Arc::default(),
        })
    }

    /// This service, dying where `points` say (a test's console).
    pub fn with_crash_points(&self, points: Arc<dyn CrashPoints>) -> Events {
        Events {
            crash_points: points,
            ..self.clone()
        }
    }

    pub(super) fn lease_ms(&self) -> i64 {
        self.config.events.lease_seconds * 1000
    }

    /// An audit record of this event: its id is derived from the event, so a re-run of the
    /// same step writes nothing new.
    pub(super) fn audit(
        &self,
        rec: &EventRecord,
        action_type: &str,
        id: &str,
        actor: &str,
    ) -> AuditItem {
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
        // Traces: the decision is a span, its actions' spans are its children.
        let span = traces::span(|| tracing::info_span!(target: traces::TARGET, "event"));
        self.ingest_in(ev, actor).instrument(span).await
    }

    async fn ingest_in(&self, ev: &Incoming, actor: &str) -> Result<Outcome, IngestError> {
        metrics::event_received();
        let live = self.live_switches().await?;
        let rec = match self.claim_event(ev, live).await? {
            EventClaim::Mine(rec) => *rec,
            EventClaim::Processed(record) => {
                metrics::event_duplicate();
                return Ok(Outcome::Duplicate { record });
            }
        };
        let (decision, actions) = self.decide_and_record(&rec, ev, live, actor).await?;
        metrics::event_decided(&decision.mode.to_string());
        if actions.iter().any(|a| a.result == "queued") {
            let now_ms = self.clock.now().timestamp_millis();
            self.due_parts
                .put(&self.store, &rec.conversation_id, now_ms);
            self.kick.notify_one();
        }
        tracing::info!(
            event = %short(&rec.event_id),
            intent = %decision.intent,
            team = %decision.team,
            mode = %decision.mode,
            actions = actions.len(),
            "event processed"
        );
        let mut record = rec;
        record.status = EventStatus::Processed;
        record.intent = Some(decision.intent.clone());
        Ok(Outcome::Processed {
            record: Box::new(record),
            decision: Box::new(decision),
            actions,
        })
    }

    /// The kill switches as they stand now (one of their copies: no hot item).
    pub(super) async fn live_switches(&self) -> Result<Switches, StoreError> {
        let s = kill_switches::load_copy(&self.store, self.clock.now()).await?;
        Ok(Switches {
            safe_mode: s.safe_mode.enabled,
            automation_enabled: s.automation_enabled.enabled,
        })
    }

    /// Claims the event, or finds it processed (and counts the duplicate); refused while
    /// another worker's lease runs.
    async fn claim_event(&self, ev: &Incoming, live: Switches) -> Result<EventClaim, IngestError> {
        let now = self.clock.now();
        let fresh = self.fresh_record(ev, live, now);
        let key = fresh.event_id.clone();
        let old = match records::put_claim(&self.store, &fresh, now.timestamp()).await? {
            Claim::Won => return Ok(EventClaim::Mine(Box::new(fresh))),
            Claim::Exists(old) => old,
        };
        if old.status == EventStatus::Processed {
            records::count_duplicate(&self.store, &key).await?;
            tracing::info!(event = %short(&key), "duplicate event");
            return Ok(EventClaim::Processed(old));
        }
        if old.lease_until_ms > now.timestamp_millis() {
            return Err(IngestError::InProgress {
                retry_after: retry_after(old.lease_until_ms, now),
            });
        }
        let take = TakeOver {
            key: &key,
            seen_nonce: &old.claim_nonce,
            new_nonce: &fresh.claim_nonce,
            lease_until_ms: now.timestamp_millis() + self.lease_ms(),
        };
        match records::take_over_event(&self.store, &take).await? {
            Some(rec) => {
                tracing::warn!(event = %short(&key), attempts = rec.attempts, "took over an abandoned event");
                Ok(EventClaim::Mine(Box::new(rec)))
            }
            None => Err(IngestError::InProgress { retry_after: 1 }),
        }
    }

    /// The record a first claim writes: `processing`, with this worker's nonce and lease.
    fn fresh_record(&self, ev: &Incoming, live: Switches, now: DateTime<Utc>) -> EventRecord {
        let key = ev.event_key(self.config.events.hash_bucket_seconds);
        let canonical = ev.canonical();
        let created = iso(now);
        EventRecord {
            kind: RecordKind::Event,
            status: EventStatus::Processing,
            mode: Mode::of(live.automation_enabled),
            conversation_id: ev.conversation_id.to_string(),
            created_at: created.clone(),
            last_processed_at: created.clone(),
            received_at: iso(ev.created_at),
            expires_at: (now + Duration::days(self.config.ttl.idempotency_days)).timestamp(),
            safe_mode: live.safe_mode,
            automation_enabled: live.automation_enabled,
            source_message_id: ev.message_id.as_deref().map(str::to_string),
            payload_sha256: sha256_hex(canonical.as_bytes()),
            payload_bytes: canonical.len() as i64,
            intent: None,
            channel: ev.channel.as_str().to_string(),
            decision: None,
            duplicates: 0,
            attempts: 1,
            claim_nonce: random_hex(16),
            lease_until_ms: now.timestamp_millis() + self.lease_ms(),
            event_day: records::day_key(
                &now.format("%Y-%m-%d").to_string(),
                &key,
                self.config.events.day_shards,
            ),
            created_sk: format!("{created}#{key}"),
            event_id: key,
        }
    }

    /// Reads the conversation, decides, and writes decision + state + audit + queued side
    /// effects in one transaction; re-reads and re-decides when another event of the
    /// conversation won. An event a worker left with its decision recorded (an earlier
    /// version wrote the decision first) keeps it: only its side effects are queued.
    async fn decide_and_record(
        &self,
        rec: &EventRecord,
        ev: &Incoming,
        live: Switches,
        actor: &str,
    ) -> Result<(Decision, Vec<ActionOutcome>), IngestError> {
        if let (EventStatus::Decided, Some(json)) = (rec.status, &rec.decision) {
            let decision: Decision = serde_json::from_str(json)
                .map_err(|e| StoreError::corrupt("rp_mw_idempotency", format!("decision: {e}")))?;
            let outcomes = self.finish_decided(rec, &decision, live, actor).await?;
            return Ok((decision, outcomes));
        }
        let switches = Switches {
            safe_mode: rec.safe_mode || live.safe_mode,
            automation_enabled: rec.automation_enabled && live.automation_enabled,
        };
        let mut backoff = Backoff::default();
        for _ in 0..100 {
            match self.try_decide(rec, ev, switches, actor).await? {
                Some(done) => return Ok(done),
                None => backoff.pause().await,
            }
        }
        Err(IngestError::InProgress { retry_after: 1 })
    }

    /// One try: reads the state, decides, and records the decision with the state it was
    /// made on. `None`: another event of the conversation changed the state first.
    async fn try_decide(
        &self,
        rec: &EventRecord,
        ev: &Incoming,
        switches: Switches,
        actor: &str,
    ) -> Result<Option<(Decision, Vec<ActionOutcome>)>, IngestError> {
        let now = self.clock.now();
        let state = records::get_state(&self.store, &ev.conversation_id).await?;
        let decision = decide(&state, ev, switches, &self.config.events, now);
        let mut next = apply(
            &state,
            ev,
            &decision,
            !switches.safe_mode,
            &self.config.events,
            self.config.ttl.conversation_state_days,
            now,
        );
        let routes = self.routes_for(&decision, switches.safe_mode).await?;
        let chain = (&routes, Some(&state));
        let queued = self.queue(rec, &decision, switches.safe_mode, chain, actor, now);
        next.outbox_tail = queued.tails.default.clone();
        next.outbox_tails = queued.tails.named.clone();
        let decision_json =
            serde_json::to_string(&decision).map_err(|e| StoreError::corrupt("decision", e))?;
        let audit = self.decision_audit(rec, ev, &decision, switches, actor);
        let record = DecisionRecord {
            event_key: &rec.event_id,
            nonce: &rec.claim_nonce,
            decision_json: &decision_json,
            intent: &decision.intent,
            now_iso: &iso(now),
            now_s: now.timestamp(),
            state: Some(&next),
            read_version: state.version,
            audit: Some(&audit),
            actions: &queued.records,
            action_audits: &queued.audits,
        };
        match records::record_decision(&self.store, &record).await? {
            DecisionWrite::Done => Ok(Some((decision, queued.outcomes))),
            DecisionWrite::LostClaim => Err(IngestError::InProgress { retry_after: 1 }),
            DecisionWrite::StaleState => Ok(None),
        }
    }
}

/// Jittered, growing pauses: concurrent events of one conversation take turns instead of
/// colliding again at once.
struct Backoff {
    pause_ms: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { pause_ms: 5 }
    }
}

impl Backoff {
    async fn pause(&mut self) {
        let jitter = u64::from_str_radix(&random_hex(2), 16).unwrap_or(0) % self.pause_ms.max(1);
        tokio::time::sleep(std::time::Duration::from_millis(self.pause_ms + jitter)).await;
        self.pause_ms = (self.pause_ms * 2).min(200);
    }
}
