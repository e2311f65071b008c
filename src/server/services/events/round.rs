//! What a dispatch round did (docs/events.md, "Delivery"): each receiver's round counted,
//! and the rounds of every receiver added up.

use std::sync::atomic::AtomicI64;
use std::time::Instant;

use crate::server::store::events::ActionStatus;

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub delivered: usize,
    pub retrying: usize,
    pub dead: usize,
    pub held: usize,
    /// Waiting for the action before them in their conversation.
    pub waiting: usize,
    /// Another console claimed them first.
    pub taken: usize,
    /// Due, but no receiver is set (or delivery to it is off).
    pub no_receiver: usize,
    /// Due, but deliveries are paused (by an operator, or by the receiver's 429).
    pub paused: usize,
    /// Due, but parked: the receiver's breaker is open (a probe is not counted here).
    pub parked: usize,
    /// Left for the next round: the breaker opened, the receiver asked for a pause, or its
    /// rate kept a send waiting.
    pub left: usize,
}

impl Round {
    /// Whether the round moved anything (another may find more at once).
    pub fn moved(&self) -> bool {
        self.delivered + self.retrying + self.dead + self.held > 0
    }

    /// This round and `other`'s together (one receiver's round each).
    pub(super) fn add(&mut self, other: Round) {
        self.delivered += other.delivered;
        self.retrying += other.retrying;
        self.dead += other.dead;
        self.held += other.held;
        self.waiting += other.waiting;
        self.taken += other.taken;
        self.no_receiver += other.no_receiver;
        self.paused += other.paused;
        self.parked += other.parked;
        self.left += other.left;
    }

    pub(super) fn count(&mut self, step: Step) {
        match step {
            Step::Ended(ActionStatus::Delivered, _) => self.delivered += 1,
            Step::Ended(ActionStatus::Dead, _) => self.dead += 1,
            Step::Ended(..) => self.retrying += 1,
            Step::Held => self.held += 1,
            Step::Taken => self.taken += 1,
            Step::Left => self.left += 1,
        }
    }
}

/// What became of one action that could go.
pub(super) enum Step {
    /// Its attempt ended so; true when the receiver answered (no timeout, 5xx or
    /// connection error).
    Ended(ActionStatus, bool),
    Held,
    Taken,
    /// Left for the next round (see [`Attempt::stop`]).
    Left,
}

/// How long one receiver's round claims at most: the rest is left for the next round, so
/// a slow receiver's round never keeps the others' next rounds waiting for long.
pub(super) const ROUND_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// How often a round reads the kill switches and the receiver's pause again before a
/// claim: safe mode or a pause turned on mid-round stops its claims within this, not at its
/// end.
pub(super) const RECHECK_MS: i64 = 500;

/// When a round began, and when it last read the kill switches and the pause (wall ms).
pub(super) struct Gate {
    pub(super) started: Instant,
    pub(super) checked_ms: AtomicI64,
}

impl Gate {
    /// A round that read them just now.
    pub(super) fn new() -> Gate {
        Gate {
            started: Instant::now(),
            checked_ms: AtomicI64::new(super::rate::wall_ms()),
        }
    }
}
