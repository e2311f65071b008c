//! The receiver's rate limit (docs/events.md, "Rate limit"): with a rate in its limits
//! (saved with the receiver, else `events.receiver_rate`), every console together sends
//! the receiver at most `rate × w + burst` requests in any window of w seconds, counted in
//! DynamoDB (`store::events::rate`). A console takes a send before it claims an action;
//! a send it took for an action another console claimed first is kept for its next action
//! while it is fresh (one interval of the whole rate). At high rates that is shorter than
//! a claim, so two consoles racing for the same actions can spend up to two sends per
//! delivery: the limit errs on the slow side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::ingest::Events;
use super::receiver::Target;
use crate::server::ids::random_hex;
use crate::server::store::events::health::receiver_key;
use crate::server::store::events::rate::{self, Taken};
use crate::server::store::StoreError;

/// One round's use of the rate: sends taken for actions another console claimed first
/// (by the time they were taken, epoch µs), kept for its next actions; and its pace: one
/// step at a time asks DynamoDB, the others behind it, so that a spent budget costs one
/// refused try at a time, not one per step.
#[derive(Default)]
pub(super) struct Spare {
    kept: Mutex<Vec<i64>>,
    pace: tokio::sync::Mutex<Pace>,
}

/// When the budget has room again, as the last refusal said, and on which shard.
#[derive(Default)]
struct Pace {
    room_at_us: i64,
    shard: Option<usize>,
}

impl Spare {
    /// The oldest kept send taken within `fresh_us` of `now_us`.
    fn take(&self, now_us: i64, fresh_us: i64) -> Option<i64> {
        let mut kept = self.kept.lock().ok()?;
        kept.retain(|taken| now_us - *taken <= fresh_us);
        (!kept.is_empty()).then(|| kept.remove(0))
    }

    /// A send taken at `taken_us` that its action did not use.
    pub(super) fn keep(&self, taken_us: i64) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.push(taken_us);
        }
    }
}

/// How long a send waits for room, at most, before its round ends.
const WAIT_AT_MOST: Duration = Duration::from_secs(1);

/// The wall clock, in µs: the receiver counts real time, whatever a test's clock says.
fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The wall clock, in ms.
pub(super) fn wall_ms() -> i64 {
    wall_us() / 1000
}

impl Events {
    /// Takes a send to the receiver `target` within its rate, waiting for room a second at
    /// most: the time it was taken, or `None` when the receiver has no rate or the wait did
    /// not get one (then `stop` is set: the round ends, the next reads the kill switches,
    /// the pause and the breaker again before it sends more).
    pub(super) async fn within_rate(
        &self,
        target: &Target,
        spare: &Spare,
        stop: &AtomicBool,
    ) -> Result<Option<i64>, StoreError> {
        let (rate, burst) = (target.limits.rate, target.limits.burst());
        if rate <= 0 {
            return Ok(None);
        }
        let receiver = receiver_key(&target.url_text);
        // A kept send is used at most one interval of the whole rate late, so it moves no
        // window's count by more than one.
        let fresh_us = 1_000_000 / rate;
        let began = Instant::now();
        let mut pace = spare.pace.lock().await;
        while !stop.load(Ordering::SeqCst) {
            let now = wall_us();
            if let Some(taken) = spare.take(now, fresh_us) {
                return Ok(Some(taken));
            }
            // A step that waited its second behind the others (DynamoDB slow, say) asks
            // no more: the round ends rather than ask once per step in turn.
            if began.elapsed() >= WAIT_AT_MOST {
                break;
            }
            if pace.room_at_us <= now {
                let start = pace
                    .shard
                    .unwrap_or_else(|| usize::from_str_radix(&random_hex(1), 16).unwrap_or(0));
                let seen = &self.rate_seen;
                let taken = rate::take(&self.store, seen, &receiver, wall_us, (rate, burst), start);
                // A failed ask ends the round: the steps behind this one do not each try
                // DynamoDB in turn.
                match taken
                    .await
                    .inspect_err(|_| stop.store(true, Ordering::SeqCst))?
                {
                    Taken::Yes => return Ok(Some(wall_us())),
                    Taken::No { room_at_us, shard } => {
                        *pace = Pace {
                            room_at_us,
                            shard: Some(shard),
                        };
                        crate::server::metrics::receiver_rate_waited(target.name.as_str());
                    }
                }
            }
            let Some(wait) = wait_for(pace.room_at_us, began) else {
                break;
            };
            tokio::time::sleep(wait).await;
        }
        stop.store(true, Ordering::SeqCst);
        Ok(None)
    }
}

/// How long to wait for room at `room_at_us`, up to 8 ms more so that two consoles waiting
/// for the same room seldom ask at once; `None` past a second in all since `began` (on the
/// monotonic clock: a step of the wall clock changes no wait past it).
fn wait_for(room_at_us: i64, began: Instant) -> Option<Duration> {
    let jitter = i64::from(u8::from_str_radix(&random_hex(1), 16).unwrap_or(0) % 8) * 1000;
    let wait = room_at_us
        .saturating_add(jitter)
        .saturating_sub(wall_us())
        .max(0);
    let wait = Duration::from_micros(wait as u64);
    (wait < WAIT_AT_MOST.saturating_sub(began.elapsed())).then_some(wait)
}
