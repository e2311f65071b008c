//! The receiver's breaker (docs/events.md, "Breaker"). After `events.breaker_failures`
//! failed attempts in a row (timeouts, 5xx, no connection) it opens: no console claims an
//! action, so deliveries park in their order and no retry schedule is spent. Every
//! `events.breaker_probe_seconds` one console sends one probe, the oldest parked action;
//! a failed probe puts it back where it waited, unspent; any answer closes the breaker, and
//! the parked actions drain in their order. With `events.breaker_failure_rate` it also
//! opens when that share of the last minutes' attempts failed, however they alternate with
//! answers. An operator opens or closes it by hand, with a reason. The alert rule
//! `outbox.receiver_breaker` tells the channels once per opening.

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};

use super::dispatch::Attempt;
use super::health;
use super::ingest::{iso, Events};
use super::pause::hex16;
use super::rate::Spare;
use super::receiver::Target;
use super::round::Round;
use crate::model::kill_switches::Reason;
use crate::model::outbox::{ReceiverName, WaitView};
use crate::model::AppError;
use crate::server::config::Config;
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::outbound::Answer;
use crate::server::store::audit;
use crate::server::store::events::breaker::{self as store, Breaker, Opening};
use crate::server::store::events::health::receiver_key;
use crate::server::store::events::outbox::{Group, Part};
use crate::server::store::tx::Writes;
use crate::server::store::Store;
use crate::server::store::StoreError;

/// The errors an opening names.
const ERRORS_KEPT: usize = 3;

/// An opening of the breaker, as a close names it: 16 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BreakerId(String);

impl BreakerId {
    pub fn parse(raw: &str) -> Result<BreakerId, AppError> {
        hex16(raw, "breaker_id", "Not an opening of this page; reload it.").map(BreakerId)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The breaker's opening in words: since when, by whom, why.
pub fn words(b: &Breaker, probe_seconds: i64) -> Option<String> {
    b.breaker_id.as_ref()?;
    let minute = |t: &str| crate::server::domain::kill_switches::timers::minute(t);
    Some(format!(
        "Breaker open since {} ({}): “{}”. Side effects are parked, their schedules unspent; \
         one probe every {probe_seconds} s.",
        minute(b.opened_at.as_deref().unwrap_or_default()),
        b.opened_by.as_deref().unwrap_or_default(),
        b.reason.as_deref().unwrap_or_default()
    ))
}

/// The breaker of the receiver side effects go to now (closed without one).
pub async fn current(
    store: &Store,
    config: &Config,
    name: &ReceiverName,
) -> Result<Breaker, StoreError> {
    match health::current_url(store, config, name).await? {
        Some(url) => store::load(store, &receiver_key(&url)).await,
        None => Ok(Breaker::default()),
    }
}

impl Events {
    /// The breaker of the receiver at `url`, as stored.
    pub(super) async fn breaker_of(&self, url: &str) -> Result<Breaker, StoreError> {
        store::load(&self.store, &receiver_key(url)).await
    }

    /// The breaker of the receiver side effects go to now.
    pub async fn breaker_state(&self, name: &ReceiverName) -> Result<Breaker, StoreError> {
        current(&self.store, &self.config, name).await
    }

    /// The breaker as the Outbox says it; `None` while closed.
    pub(super) fn breaker_view(&self, b: &Breaker) -> Option<WaitView> {
        Some(WaitView {
            words: words(b, self.config.events.breaker_probe_seconds)?,
            pause_id: None,
            breaker_id: b.breaker_id.clone(),
        })
    }

    /// Counts an attempt's answer: a failure adds to the run, and a run long enough opens
    /// the breaker and `stop`s the round's claims; true for an answer, which ends the run
    /// at the round's end. Not worth failing the round for.
    pub(super) async fn count_breaker(
        &self,
        name: &ReceiverName,
        answer: &Answer,
        seen: &Breaker,
        stop: &AtomicBool,
    ) -> bool {
        if !answer.receiver_failed() {
            return true;
        }
        let mut errors = vec![redact(&answer.describe())];
        errors.extend(seen.last_errors.iter().take(ERRORS_KEPT - 1).cloned());
        let threshold = self.config.events.breaker_failures;
        let opened = match store::failed(&self.store, &seen.receiver, &errors).await {
            Ok((run, open)) if threshold > 0 && run >= threshold => {
                stop.store(true, Ordering::SeqCst);
                if open {
                    return false;
                }
                let why = format!(
                    "{run} failed attempts in a row; last: {}",
                    errors.join("; ")
                );
                self.open_breaker(name, &seen.receiver, &why)
                    .await
                    .map(|_| ())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(AppError::from(e)),
        };
        if let Err(e) = opened {
            tracing::warn!(error = %redact(&e.to_string()), "the receiver's failure not counted");
        }
        false
    }

    /// A round had an answer after failures: the run starts again.
    pub(super) async fn end_failure_run(&self, seen: &Breaker) {
        if let Err(e) = store::answered(&self.store, &seen.receiver).await {
            tracing::warn!(error = %redact(&e.to_string()), "the receiver's failure run not ended");
        }
    }

    /// The system opens `receiver`'s breaker after its failures: the writes with their
    /// audit record, committed at once. False: it was open already.
    pub(super) async fn open_breaker(
        &self,
        name: &ReceiverName,
        receiver: &str,
        reason: &str,
    ) -> Result<bool, AppError> {
        let now = self.clock.now();
        let (_, writes) = self.prepare_breaker_open(name, receiver, reason, "system", now)?;
        let opened = writes.commit(&self.store).await?.is_done();
        if opened {
            crate::server::metrics::receiver_breaker(name.as_str(), "open");
            tracing::warn!("the receiver's breaker opened: deliveries park");
        }
        Ok(opened)
    }

    /// Opens `receiver`'s breaker by `actor` with `reason` (already checked and redacted
    /// on a person's path): the writes and the answer in words.
    fn prepare_breaker_open(
        &self,
        name: &ReceiverName,
        receiver: &str,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), AppError> {
        let id = random_hex(8);
        let probe_ms = self.config.events.breaker_probe_seconds * 1000;
        let at = iso(now);
        let opening = Opening {
            breaker_id: &id,
            by: actor,
            at: &at,
            reason,
            probe_at_ms: now.timestamp_millis() + probe_ms,
        };
        let writes = store::open(&self.store, receiver, &opening)?;
        let record = self.receiver_record(
            "receiver_breaker_open",
            (name, "breaker", &id),
            actor,
            reason,
            now,
        );
        Ok((
            "Breaker opened: side effects park until a probe gets an answer.".into(),
            writes.and(audit::writes(&self.store, &record)?),
        ))
    }

    /// An operator opens the breaker by hand, with a reason.
    pub async fn prepare_breaker_open_by(
        &self,
        name: &ReceiverName,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), AppError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        self.known_receiver(name).await?;
        let Some(url) = health::current_url(&self.store, &self.config, name).await? else {
            return Err(AppError::Conflict(
                "There is no receiver to open a breaker for.".into(),
            ));
        };
        let b = self.breaker_of(&url).await?;
        if b.breaker_id.is_some() {
            return Err(AppError::Conflict(
                "The breaker is open already; nothing changed.".into(),
            ));
        }
        self.prepare_breaker_open(name, &b.receiver, &reason, actor, now)
    }

    /// Closes the opening `breaker_id` (the one the page showed), by `actor` with `reason`:
    /// the writes with its audit record, and the answer in words.
    pub async fn prepare_breaker_close(
        &self,
        name: &ReceiverName,
        breaker_id: &BreakerId,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), AppError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        self.known_receiver(name).await?;
        let id = breaker_id.as_str();
        let b = self.breaker_state(name).await?;
        if b.breaker_id.as_deref() != Some(id) {
            return Err(AppError::Conflict(
                "This opening has ended already (or another began); reload the page.".into(),
            ));
        }
        Ok((
            "Breaker closed: parked side effects go again, in their order.".into(),
            self.close_writes(name, &b, &reason, actor, now)?,
        ))
    }

    /// The writes that close `b`'s opening, with their audit record.
    fn close_writes(
        &self,
        name: &ReceiverName,
        b: &Breaker,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<Writes, AppError> {
        let id = b.breaker_id.as_deref().unwrap_or_default();
        let record = self.receiver_record(
            "receiver_breaker_close",
            (name, "breaker", id),
            actor,
            reason,
            now,
        );
        let close = store::close(&self.store, &b.receiver, id, now.timestamp_millis())?;
        Ok(close.and(audit::writes(&self.store, &record)?))
    }

    /// A probe got an answer: the system closes the opening it probed (`b`, as read).
    pub(super) async fn close_after_probe(
        &self,
        name: &ReceiverName,
        b: &Breaker,
        answer: &Answer,
    ) {
        let why = format!("a probe was answered: {}", redact(&answer.describe()));
        let closed = match self.close_writes(name, b, &why, "system", self.clock.now()) {
            Ok(writes) => writes.commit(&self.store).await.map_err(AppError::from),
            Err(e) => Err(e),
        };
        match closed {
            Ok(outcome) if outcome.is_done() => {
                crate::server::metrics::receiver_breaker(name.as_str(), "close");
                tracing::info!("a probe was answered: the receiver's breaker closed");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %redact(&e.to_string()), "the breaker not closed after its probe")
            }
        }
    }
}

impl Events {
    /// The breaker is open: due actions park, unclaimed. When its probe is due and this
    /// console takes it, the oldest action that may go is sent as the probe.
    pub(super) async fn parked_round(
        &self,
        target: &Target,
        breaker: &Breaker,
        parts: &[Part],
        now_ms: i64,
        mut round: Round,
    ) -> Result<Round, StoreError> {
        if !super::breaker::take_probe(self, breaker, now_ms).await? {
            round.parked = self.due_now(&target.name, parts, now_ms).await?;
            return Ok(round);
        }
        // The probe is this console's for the interval: the oldest parked action of every
        // partition, not of those this round happened to read.
        let mut ready = Vec::new();
        for part in &Part::all(Group::Due) {
            ready.extend(
                self.ready_on(&target.name, *part, now_ms, false, &mut round)
                    .await?,
            );
        }
        round.parked = ready.len().saturating_sub(1);
        let Some(oldest) = ready
            .into_iter()
            .min_by(|a, b| (a.next_at_ms, &a.event_id).cmp(&(b.next_at_ms, &b.event_id)))
        else {
            return Ok(round);
        };
        let probe = Attempt {
            target,
            breaker,
            probe: true,
            spare: &Spare::default(),
            stop: &AtomicBool::new(false),
            gate: &super::round::Gate::new(),
        };
        let step = self.step(oldest, Some(&probe)).await?;
        round.count(step);
        Ok(round)
    }
}

/// Takes the probe of `b`'s opening if it is due at `now_ms` and no other console took it.
pub(super) async fn take_probe(
    events: &Events,
    b: &Breaker,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let Some(id) = &b.breaker_id else {
        return Ok(false);
    };
    let interval = events.config.events.breaker_probe_seconds * 1000;
    // A probe time this far ahead was set by a console whose clock runs fast.
    let far = now_ms + 2 * interval;
    if b.probe_at_ms > now_ms && b.probe_at_ms <= far {
        return Ok(false);
    }
    store::take_probe(
        &events.store,
        &b.receiver,
        id,
        now_ms,
        now_ms + interval,
        far,
    )
    .await
}
