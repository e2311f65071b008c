//! The dispatcher (docs/events.md, "Delivery"): every console runs one. A round reads what
//! is due on each outbox shard, and for each action: holds it if safe mode is on; waits if
//! the action before it in its conversation has not ended; else claims it (nonce and
//! lease: one deliverer at a time, a dead console's claim taken over once it ran out),
//! sends it signed, and records the answer under the claim — delivered, a retry at the next
//! time of the schedule, or a dead letter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::body::Bytes;
use futures_util::stream::{self, StreamExt};
use tracing::Instrument;

use super::ingest::{iso, short, Events};
use super::rate::Spare;
use super::receiver::Target;
use super::round::{Gate, Round, Step, RECHECK_MS, ROUND_BUDGET};
use super::routes::stored;
use super::slots::Slot;
use crate::model::outbox::ReceiverName;
use crate::server::ids::random_hex;
use crate::server::outbound::{Answer, Message};
use crate::server::store::events::breaker::Breaker;
use crate::server::store::events::outbox::{self, Ending, Move, Part};
use crate::server::store::events::{outbox_reads, ActionRecord, ActionStatus, Try};
use crate::server::store::StoreError;
use crate::server::telemetry::traces;

/// Actions one page of a shard holds.
pub(super) const PER_SHARD: usize = 25;

/// Where an attempt goes and what it is.
pub(super) struct Attempt<'a> {
    pub(super) target: &'a Target,
    /// The breaker as this round read it.
    pub(super) breaker: &'a Breaker,
    /// A breaker's probe.
    pub(super) probe: bool,
    /// Sends of the receiver's rate this round took and did not use.
    pub(super) spare: &'a Spare,
    /// The round claims no more: the breaker opened, the receiver asked for a pause or
    /// went, or its rate had no send for it after one wait. What is left goes next round,
    /// which reads them all again.
    pub(super) stop: &'a AtomicBool,
    /// When the round began and last read the kill switches and the pause.
    pub(super) gate: &'a Gate,
}

impl Events {
    /// One round, for every receiver in turn, over the due partitions this console reads
    /// this round (see `due_parts`). Safe to run on every console at once.
    pub async fn dispatch_round(&self) -> Result<Round, StoreError> {
        let now_ms = self.clock.now().timestamp_millis();
        let parts = self.due_parts.for_round(now_ms);
        self.round_over(&parts, now_ms).await
    }

    /// One round over `parts`, for every receiver in turn. In safe mode, the first round
    /// that sees it on reads every due partition, so that what is due when it goes on is
    /// held at once, on every console; the rounds after read `parts`, as any round does,
    /// and hold what came due meanwhile where they read it (at once where this console
    /// queued it, within a turn of the rotation elsewhere). Nothing due is sent by any
    /// console while it is on. (Reading all of `due-index` every round had cost each idle
    /// console 136 queries a round for as long as safe mode stayed on.)
    async fn round_over(&self, parts: &[Part], now_ms: i64) -> Result<Round, StoreError> {
        let safe_mode = self.live_switches().await?.safe_mode;
        let sweep = safe_mode && !self.due_parts.swept();
        let every;
        let parts = if sweep {
            every = Part::all(outbox::Group::Due);
            &every[..]
        } else {
            parts
        };
        let round = self.receivers_round(parts, now_ms, safe_mode).await;
        // Swept once a sweep's every read succeeded; swept again the next time it goes on.
        self.due_parts
            .set_swept(safe_mode && (!sweep || matches!(&round, Ok((_, true)))));
        round.map(|(round, _)| round)
    }

    /// One round over `parts` for every receiver, side by side, and whether every
    /// receiver's round ended without an error.
    async fn receivers_round(
        &self,
        parts: &[Part],
        now_ms: i64,
        safe_mode: bool,
    ) -> Result<(Round, bool), StoreError> {
        let routes = self.routes().await?;
        // A save made without the copies (the release before) reaches them here.
        if let Err(e) =
            crate::server::store::events::routes::mend_copies(&self.store, &routes).await
        {
            tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "route copies could not be mended; trying again");
        }
        let names = super::routes::names(&routes);
        // Side by side: a receiver that is slow, or whose reads fail, holds back no other.
        let rounds = futures_util::future::join_all(
            names
                .iter()
                .map(|name| self.receiver_round(name, parts, now_ms, safe_mode)),
        )
        .await;
        let (mut round, mut failed) = (Round::default(), None);
        for r in rounds {
            match r {
                Ok(r) => round.add(r),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match failed {
            Some(e) if !round.moved() => Err(e),
            Some(e) => {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "a receiver's round failed; the others went on");
                Ok((round, false))
            }
            None => Ok((round, true)),
        }
    }

    /// One round over `parts` for the receiver `name`: its own due actions, its pause,
    /// its breaker, its rate and its slots.
    async fn receiver_round(
        &self,
        name: &ReceiverName,
        parts: &[Part],
        now_ms: i64,
        safe_mode: bool,
    ) -> Result<Round, StoreError> {
        let mut round = Round::default();
        let go = if safe_mode {
            None
        } else {
            match self.deliverable(name, parts, now_ms, &mut round).await? {
                Some(go) => Some(go),
                None => return Ok(round),
            }
        };
        if let Some((target, breaker)) = go.as_ref().filter(|(_, b)| b.breaker_id.is_some()) {
            return self
                .parked_round(target, breaker, parts, now_ms, round)
                .await;
        }
        let mut ready = Vec::new();
        for part in parts {
            let waiting = round.waiting;
            let found = self
                .ready_on(name, *part, now_ms, safe_mode, &mut round)
                .await?;
            if let (Part::Due(shard), true) = (part, !found.is_empty() || round.waiting > waiting) {
                // What this round leaves there (its rate, its slots, its budget, an order
                // wait) is read again next round, not only by a later turn of the rotation.
                self.due_parts.again(*shard, now_ms);
            }
            ready.extend(found);
        }
        let (spare, stop, gate) = (Spare::default(), AtomicBool::new(false), Gate::new());
        let attempt = go.as_ref().map(|(target, breaker)| Attempt {
            target,
            breaker,
            probe: false,
            spare: &spare,
            stop: &stop,
            gate: &gate,
        });
        let steps: Vec<Result<Step, StoreError>> = stream::iter(ready)
            .map(|rec| self.step(rec, attempt.as_ref()))
            .buffer_unordered(self.config.events.dispatch_concurrency.max(1) as usize)
            .collect()
            .await;
        let (mut answered, mut failed) = (false, false);
        for step in steps {
            let step = step?;
            answered |= matches!(step, Step::Ended(_, true));
            failed |= matches!(step, Step::Ended(_, false));
            round.count(step);
        }
        if let Some((_, b)) = go.as_ref().filter(|(_, b)| answered && b.run > 0) {
            self.end_failure_run(b).await;
        }
        if let Some((_, b)) = go.filter(|_| failed) {
            self.judge_failure_rate(name, &b).await;
        }
        Ok(round)
    }

    /// Where this round delivers, with the breaker as it stands; `None` when nothing goes
    /// (no receiver, delivery off, or paused), the due actions counted in `round`.
    async fn deliverable(
        &self,
        name: &ReceiverName,
        parts: &[Part],
        now_ms: i64,
        round: &mut Round,
    ) -> Result<Option<(Target, Breaker)>, StoreError> {
        let target = self.target(name).await?.filter(|t| t.enabled);
        // Paused: nothing is claimed, so nothing is sent and no schedule is spent.
        let paused =
            target.is_some() && super::pause::waits(&self.pause_state(name).await?, now_ms);
        if let Some(t) = target.filter(|_| !paused) {
            let breaker = self.breaker_of(&t.url_text).await?;
            return Ok(Some((t, breaker)));
        }
        let due = self.due_now(name, parts, now_ms).await?;
        if paused {
            round.paused += due;
        } else {
            round.no_receiver += due;
        }
        Ok(None)
    }

    /// Actions due now to `name` at the front of each of `parts` (a page of each).
    pub(super) async fn due_now(
        &self,
        name: &ReceiverName,
        parts: &[Part],
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let (mut due, receiver) = (0, stored(name));
        for part in parts {
            let page = outbox_reads::due(&self.store, receiver, *part, now_ms, PER_SHARD, None);
            due += page.await?.0.len();
        }
        Ok(due)
    }

    /// Rounds over every due partition that holds anything until nothing more is due now
    /// (tests and benchmarks: it scans `due-index`'s keys before each round).
    pub async fn dispatch_all(&self) -> Result<Round, StoreError> {
        let mut total = Round::default();
        for _ in 0..100 {
            let parts = outbox_reads::parts_to_read(
                &self.store,
                outbox::Group::Due,
                &outbox_reads::Filter::default(),
            )
            .await?;
            let now_ms = self.clock.now().timestamp_millis();
            let r = self.round_over(&parts, now_ms).await?;
            total.delivered += r.delivered;
            total.retrying += r.retrying;
            total.dead += r.dead;
            total.held += r.held;
            total.waiting = r.waiting;
            total.taken += r.taken;
            total.no_receiver = r.no_receiver;
            total.paused = r.paused;
            total.parked = r.parked;
            if !r.moved() {
                break;
            }
        }
        Ok(total)
    }

    /// Holds (safe mode) or claims and delivers one action that may go.
    pub(super) async fn step(
        &self,
        rec: ActionRecord,
        to: Option<&Attempt<'_>>,
    ) -> Result<Step, StoreError> {
        let Some(to) = to else {
            return self.hold(&rec).await;
        };
        // The receiver's rate and a slot of its concurrency first: a claim held while
        // waiting could run out.
        let send = self.within_rate(to.target, to.spare, to.stop).await?;
        let slot = if to.stop.load(Ordering::SeqCst) {
            Slot::Unlimited
        } else {
            self.take_slot(to.target, to.stop).await?
        };
        let unused = |step: Step| {
            if let Some(taken) = send {
                to.spare.keep(taken);
            }
            step
        };
        if to.stop.load(Ordering::SeqCst) || !self.still_open(to).await? {
            to.stop.store(true, Ordering::SeqCst);
            self.give_back(slot).await;
            return Ok(unused(Step::Left));
        }
        let now_ms = self.clock.now().timestamp_millis();
        let nonce = random_hex(16);
        let receiver = stored(&to.target.name);
        let lease = self.lease_ms();
        let claim = outbox::claim(&self.store, &rec, receiver, &nonce, now_ms, lease);
        let claimed = match claim.await {
            Ok(claimed) => claimed,
            Err(e) => {
                self.give_back(slot).await;
                return Err(e);
            }
        };
        let Some(mine) = claimed else {
            self.give_back(slot).await;
            return Ok(unused(Step::Taken));
        };
        if self.crash_points.after_delivery_claim() {
            // This console "dies" holding the claim (and the slot): another takes them
            // over when their leases run out.
            return Ok(Step::Taken);
        }
        let step = self.deliver(&mine, to).await;
        self.give_back(slot).await;
        step
    }

    /// Whether the round may still claim: within its budget, and (read again once
    /// [`RECHECK_MS`] has passed) safe mode off and the receiver not paused.
    async fn still_open(&self, to: &Attempt<'_>) -> Result<bool, StoreError> {
        if to.gate.started.elapsed() > ROUND_BUDGET {
            return Ok(false);
        }
        let (now, last) = (
            super::rate::wall_ms(),
            to.gate.checked_ms.load(Ordering::SeqCst),
        );
        let mine = now - last >= RECHECK_MS
            && to
                .gate
                .checked_ms
                .compare_exchange(last, now, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
        if !mine {
            return Ok(true);
        }
        let now_ms = self.clock.now().timestamp_millis();
        let pause = self.pause_state(&to.target.name).await?;
        Ok(!self.live_switches().await?.safe_mode && !super::pause::waits(&pause, now_ms))
    }

    /// Safe mode holds a due action until an operator releases or discards it.
    async fn hold(&self, rec: &ActionRecord) -> Result<Step, StoreError> {
        let now = self.clock.now();
        let suffix = format!("{}-{}", rec.attempts, now.timestamp_millis());
        let mut audit = self.outbox_audit(rec, "held", &suffix, now);
        audit.result = "held: safe_mode".into();
        let moved = outbox::apply_move(
            &self.store,
            rec,
            Move::Hold,
            "safe_mode",
            "safe_mode",
            now.timestamp_millis(),
            &audit,
        )
        .await?;
        Ok(if moved { Step::Held } else { Step::Taken })
    }

    /// Sends one claimed action and records the answer under the claim: a span of the
    /// trace the action was queued in.
    async fn deliver(&self, mine: &ActionRecord, to: &Attempt<'_>) -> Result<Step, StoreError> {
        let span = traces::span(|| {
            tracing::info_span!(
                target: traces::TARGET,
                "delivery",
                otel.name = %format!("deliver {}", mine.action_type.as_str()),
                otel.kind = "client",
                action.type = mine.action_type.as_str(),
                attempt = mine.attempts,
                outcome = tracing::field::Empty,
            )
        });
        traces::continue_stored(mine.trace_parent.as_deref(), &span);
        self.deliver_in(mine, to, &span)
            .instrument(span.clone())
            .await
    }

    async fn deliver_in(
        &self,
        mine: &ActionRecord,
        to: &Attempt<'_>,
        span: &tracing::Span,
    ) -> Result<Step, StoreError> {
        let sent_at = self.clock.now();
        let started = Instant::now();
        let message = Message {
            id: &mine.event_id,
            timestamp: sent_at.timestamp(),
            body: Bytes::from(mine.body.clone()),
            traceparent: traces::traceparent(span),
        };
        let answer = self
            .sender
            .send(&to.target.url, &to.target.secrets, &message)
            .await;
        let ms = started.elapsed().as_millis() as i64;
        span.record("outcome", answer.cause());
        let now = self.clock.now();
        let (status, next_at_ms, unspent) = self.where_it_goes(mine, to, &answer, now);
        let result = match (&answer, status) {
            (Answer::Delivered(_), _) => format!("success: {}", answer.describe()),
            (_, ActionStatus::Dead) => format!("dead letter: {}", answer.describe()),
            _ => format!("fail: {}", answer.describe()),
        };
        let mut audit = self.outbox_audit(mine, "attempt", &format!("a{}", mine.attempts), now);
        audit.result = result.clone();
        let cause = (!matches!(answer, Answer::Delivered(_))).then(|| answer.cause());
        let end = Ending {
            rec: mine,
            status,
            result: &result,
            cause: cause.as_deref(),
            unknown: matches!(answer, Answer::Unknown(_)),
            next_at_ms,
            unspent,
            now_ms: now.timestamp_millis(),
            now_iso: &iso(now),
            this_try: Try {
                n: mine.attempts,
                at: iso(sent_at),
                ms,
                result: answer.describe(),
            },
        };
        if !outbox::finish(&self.store, &end, &audit).await? {
            return Ok(Step::Taken);
        }
        if status == ActionStatus::Retry {
            // This console's rounds read its partition when the next attempt is due.
            self.due_parts
                .put(&self.store, &mine.conversation_id, next_at_ms);
        }
        let answered = self.after_attempt(mine, to, &end, &answer).await?;
        tracing::info!(action = %short(&mine.event_id), attempt = mine.attempts, status = %status, ms, "side effect attempt");
        Ok(Step::Ended(status, answered))
    }

    /// Runs rounds until `stop` turns true (or its sender is gone): at once while rounds
    /// move actions, else after the poll interval or when an event queued something on
    /// this console. A round under way when `stop` turns ends first: its deliveries are
    /// recorded and their slots given back, so a console shut down for a deployment leaves
    /// nothing in flight to be taken over after a lease.
    pub async fn run_dispatcher(&self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let poll =
            std::time::Duration::from_millis(self.config.events.dispatch_poll_ms.max(10) as u64);
        while !*stop.borrow() {
            let moved = match self.dispatch_round().await {
                Ok(r) => r.moved(),
                Err(e) => {
                    tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "outbox round failed; trying again");
                    false
                }
            };
            if let Err(e) = self.run_jobs().await {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "outbox job round failed; trying again");
            }
            if !moved {
                tokio::select! {
                    _ = tokio::time::timeout(poll, self.kick.notified()) => {}
                    changed = stop.changed() => if changed.is_err() { break },
                }
            }
        }
    }
}
