//! The receiver's rate limit (docs/events.md, "Rate limit"): with `events.receiver_rate`
//! set, every console together sends at most that many requests to the receiver in each
//! second of the clock, counted in DynamoDB (`store::events::rate`). A console takes a
//! send before it claims an action; a send it took for an action another console claimed
//! first is kept for its next action within the same second, so racing consoles waste
//! little of the budget.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::ingest::Events;
use crate::server::ids::random_hex;
use crate::server::store::events::health::receiver_key;
use crate::server::store::events::rate;
use crate::server::store::StoreError;

/// Sends of one round that went unused, by the second they were taken in.
#[derive(Default)]
pub(super) struct Spare(Mutex<Vec<i64>>);

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

    /// A send taken in `second` that its action did not use.
    pub(super) fn keep(&self, second: i64) {
        if let Ok(mut spare) = self.0.lock() {
            spare.push(second);
        }
    }
}

/// The wall clock, in ms: the receiver counts real seconds, whatever a test's clock says.
fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Events {
    /// Waits until a send to the receiver at `url` fits its rate, and takes it: the second it
    /// was taken in, or `None` when the receiver has no rate.
    pub(super) async fn within_rate(
        &self,
        url: &str,
        spare: &Spare,
    ) -> Result<Option<i64>, StoreError> {
        let limit = self.config.events.receiver_rate;
        if limit <= 0 {
            return Ok(None);
        }
        let receiver = receiver_key(url);
        let start = usize::from_str_radix(&random_hex(1), 16).unwrap_or(0);
        loop {
            let now = wall_ms();
            let second = now.div_euclid(1000);
            if spare.take(second)
                || rate::take(&self.store, &receiver, second, limit, start).await?
            {
                return Ok(Some(second));
            }
            crate::server::metrics::receiver_rate_waited();
            let jitter = i64::from(u8::from_str_radix(&random_hex(1), 16).unwrap_or(0)) % 50;
            let wait = 1000 - now.rem_euclid(1000) + jitter;
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
    }
}
