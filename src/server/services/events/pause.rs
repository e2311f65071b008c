//! Pausing the deliveries to the receiver (docs/events.md, "Pause"). An operator pauses
//! them with a reason and resumes them with one, each audited: while paused no console
//! claims an action, so none is sent and no retry schedule is spent; the actions wait in
//! their order. The receiver pauses them too: a 429 with `Retry-After` stops every
//! console's sends until then, not only the answered action's.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::ingest::{iso, Events};
use crate::model::kill_switches::Reason;
use crate::model::outbox::{ReceiverName, WaitView};
use crate::model::AppError;
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::events::pause::{self as store, Pause};
use crate::server::store::events::receiver::AUDIT_PARTITION;
use crate::server::store::tx::Writes;
use crate::server::store::StoreError;

/// The longest a receiver's `Retry-After` pauses every console: past an hour it is an
/// outage, which its own alert tells (the action answered keeps its own schedule).
pub const MAX_BACK_OFF_SECS: u64 = 3600;

/// An operator's pause, as a resume names it: 16 lowercase hex digits, checked at the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PauseId(String);

impl PauseId {
    pub fn parse(raw: &str) -> Result<PauseId, AppError> {
        hex16(raw, "pause_id", "Not a pause of this page; reload it.").map(PauseId)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `raw` as an id of 16 lowercase hex digits (a pause's, a breaker opening's), checked at
/// the edge; else a 400 on `field` saying `refusal`.
pub(super) fn hex16(raw: &str, field: &str, refusal: &str) -> Result<String, AppError> {
    let raw = raw.trim();
    if raw.len() == 16 && raw.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(raw.to_string())
    } else {
        Err(AppError::invalid(field, refusal))
    }
}

/// Whether deliveries wait at `now_ms`: paused by a person, or the receiver asked for a
/// pause that has not run out.
pub fn waits(p: &Pause, now_ms: i64) -> bool {
    p.pause_id.is_some() || p.not_before_ms > now_ms
}

impl Events {
    /// The pause of the receiver `name` as stored.
    pub async fn pause_state(&self, name: &ReceiverName) -> Result<Pause, StoreError> {
        store::load(&self.store, name).await
    }

    /// The pause as the Outbox says it: in words, and the operator's pause a resume names
    /// (none while deliveries go).
    pub(super) fn pause_view(&self, p: &Pause, now: DateTime<Utc>) -> Option<WaitView> {
        let minute = |t: &str| crate::server::domain::kill_switches::timers::minute(t);
        if let (Some(id), Some(by)) = (&p.pause_id, &p.paused_by) {
            return Some(WaitView {
                words: format!(
                    "Paused by {by} since {}: “{}”. Side effects wait in the outbox.",
                    minute(p.paused_at.as_deref().unwrap_or_default()),
                    p.reason.as_deref().unwrap_or_default()
                ),
                pause_id: Some(id.clone()),
                breaker_id: None,
            });
        }
        (p.not_before_ms > now.timestamp_millis()).then(|| {
            let until = DateTime::<Utc>::from_timestamp_millis(p.not_before_ms)
                .map(iso)
                .unwrap_or_default();
            WaitView {
                words: format!(
                    "The receiver asked for a pause (429): nothing is sent before {}.",
                    minute(&until)
                ),
                pause_id: None,
                breaker_id: None,
            }
        })
    }

    /// Pauses the deliveries, by `actor` with `reason`: the writes (the pause, its audit
    /// record) for a caller that commits them with its form's key, and the answer in words.
    pub async fn prepare_pause(
        &self,
        name: &ReceiverName,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), AppError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        self.known_receiver(name).await?;
        if let Some(by) = self.pause_state(name).await?.paused_by {
            return Err(AppError::Conflict(format!(
                "Deliveries are paused already, by {by}; nothing changed."
            )));
        }
        let id = random_hex(8);
        let writes = store::pause(&self.store, name, &id, actor, &iso(now), &reason)?;
        let record =
            self.receiver_record("receiver_pause", (name, "pause", &id), actor, &reason, now);
        Ok((
            "Paused: side effects wait in the outbox until someone resumes.".into(),
            writes.and(audit::writes(&self.store, &record)?),
        ))
    }

    /// Ends the pause `pause_id` (the one the page showed: never a newer one), by `actor`
    /// with `reason`, as writes with its audit record.
    pub async fn prepare_resume(
        &self,
        name: &ReceiverName,
        pause_id: &PauseId,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), AppError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        self.known_receiver(name).await?;
        let current = self.pause_state(name).await?;
        let pause_id = pause_id.as_str();
        if current.pause_id.as_deref() != Some(pause_id) {
            return Err(AppError::Conflict(
                "This pause has ended already (or another began); reload the page.".into(),
            ));
        }
        let writes = store::resume(&self.store, name, pause_id)?;
        let record = self.receiver_record(
            "receiver_resume",
            (name, "pause", pause_id),
            actor,
            &reason,
            now,
        );
        Ok((
            "Resumed: deliveries go again, in their order.".into(),
            writes.and(audit::writes(&self.store, &record)?),
        ))
    }

    /// The audit record of an operator's (or the system's) step on a receiver's
    /// deliveries: `(name, what, id)` names the receiver, and the pause or the breaker's
    /// opening it acts on.
    pub(super) fn receiver_record(
        &self,
        step: &str,
        (name, what, id): (&ReceiverName, &str, &str),
        actor: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let mut a = AuditItem::new(
            AUDIT_PARTITION,
            step,
            now,
            &format!("{step}-{id}"),
            self.config.ttl.audit_days,
        );
        a.actor = actor.to_string();
        a.result = format!("success: {}", step.trim_start_matches("receiver_"));
        a.action_payload_redacted =
            json!({ what: id, "reason": reason, "receiver": name.as_str() }).to_string();
        a
    }

    /// The receiver answered 429 with `Retry-After`: every console holds its sends that
    /// long (at most [`MAX_BACK_OFF_SECS`]). Not worth failing the round for.
    pub(super) async fn back_off(
        &self,
        name: &ReceiverName,
        retry_after: std::time::Duration,
        now: DateTime<Utc>,
    ) {
        let secs = retry_after.as_secs().min(MAX_BACK_OFF_SECS) as i64;
        let until = now.timestamp_millis() + secs * 1000;
        match store::back_off(&self.store, name, until).await {
            Ok(()) => {
                crate::server::metrics::receiver_backed_off(name.as_str());
                tracing::info!(
                    secs,
                    "the receiver asked for a pause (429): every console waits"
                );
            }
            Err(e) => {
                tracing::warn!(error = %redact(&e.to_string()), "the receiver's pause not stored")
            }
        }
    }
}

/// Why deliveries wait, from a pause and the breaker: their words in one line, and the ids
/// of each.
pub(super) fn both(pause: Option<WaitView>, breaker: Option<WaitView>) -> Option<WaitView> {
    match (pause, breaker) {
        (Some(p), Some(b)) => Some(WaitView {
            words: format!("{} {}", p.words, b.words),
            pause_id: p.pause_id,
            breaker_id: b.breaker_id,
        }),
        (p, b) => p.or(b),
    }
}
