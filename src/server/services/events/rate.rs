//! The receiver's rate limit (docs/events.md, "Rate limit"): with `events.receiver_rate`
//! set, every console together sends at most that many requests to the receiver in each
//! second of the clock, counted in DynamoDB (`store::events::rate`). A console takes a
//! send before it claims an action; a send it took for an action another console claimed
//! first is kept for its next action within the same second, so racing consoles waste
//! little of the budget.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ingest::Events;
use crate::server::ids::random_hex;
use crate::server::store::events::health::receiver_key;
use crate::server::store::events::rate;
use crate::server::store::StoreError;

/// Sends of one round that went unused, by the second they were taken in, and the last
/// second this round found spent (no write is tried again within it).
#[derive(Default)]
pub(super) struct Spare(Mutex<Vec<i64>>, Mutex<i64>);

impl Spare {
    fn take(&self, second: i64) -> bool {
        let Ok(mut spare) = self.0.lock() else {
            return false;
        };
        spare.retain(|s| *s >= second);
        match spare.iter().position(|s| *s == second) {
            Some(i) => {
                spare.swap_remove(i);
                true
            }
            None => false,
        }
    }

    fn spent(&self, second: i64) -> bool {
        self.1.lock().is_ok_and(|s| *s == second)
    }

    fn mark_spent(&self, second: i64) {
        if let Ok(mut s) = self.1.lock() {
            *s = second;
        }
    }

    /// A send taken in `second` that its action did not use.
    pub(super) fn keep(&self, second: i64) {
        if let Ok(mut spare) = self.0.lock() {
            spare.push(second);
        }
    }
}

/// The wall clock, in ms: the receiver counts real seconds, whatever a test's clock says.
pub(super) fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Events {
    /// Takes a send to the receiver at `url` within its rate, waiting for the next second
    /// at most once: the second it was taken in, or `None` when the receiver has no rate or
    /// the wait did not get one (then `stop` is set: the round ends, the next reads the
    /// kill switches, the pause and the breaker again before it sends more).
    pub(super) async fn within_rate(
        &self,
        url: &str,
        spare: &Spare,
        stop: &AtomicBool,
    ) -> Result<Option<i64>, StoreError> {
        let limit = self.config.events.receiver_rate;
        if limit <= 0 {
            return Ok(None);
        }
        let receiver = receiver_key(url);
        let start = usize::from_str_radix(&random_hex(1), 16).unwrap_or(0);
        for tries in 0..2 {
            let now = wall_ms();
            let second = now.div_euclid(1000);
            if spare.take(second) {
                return Ok(Some(second));
            }
            if !spare.spent(second)
                && rate::take(&self.store, &receiver, second, limit, start).await?
            {
                return Ok(Some(second));
            }
            spare.mark_spent(second);
            crate::server::metrics::receiver_rate_waited();
            if tries == 1 || stop.load(Ordering::SeqCst) {
                break;
            }
            let jitter = i64::from(u8::from_str_radix(&random_hex(1), 16).unwrap_or(0)) % 50;
            let wait = 1000 - now.rem_euclid(1000) + jitter;
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        stop.store(true, Ordering::SeqCst);
        Ok(None)
    }
}
