//! The receiver's rate limit, shared by every console (docs/events.md, "Rate limit"): any
//! window of w seconds holds at most `rate × w + burst` sends, counted in DynamoDB by the
//! generic cell rate algorithm (GCRA: a token bucket kept as one time). The budget is split
//! over up to [`SHARDS`] items in `settings-<env>` per receiver (the hash of its URL) and
//! limits (the rate and the burst), each with its share of the rate and of the burst: no
//! item takes more than its share of the writes, and the items are the same whatever the
//! time. Consoles that read different limits (a change on its way to every console) count
//! on different items, so neither splits the other's shares; the items of limits no longer
//! used go with TTL after [`UNUSED_SECONDS`].
//!
//! Each item holds its *theoretical arrival time* (`tat_us`, epoch µs): the time its
//! sends so far are paid up to, one `interval` (a second over its share of the rate) each.
//! A send at `now` may go while `tat ≤ now + (capacity − 1) × interval` (capacity: its
//! share of the burst) and moves it to `max(tat, now) + interval`: a conditional `ADD`
//! while the item is busy, a conditional `SET` when it has been idle since before `now`
//! (the one that fits how this console last saw the item goes first). A shard that
//! refuses says when it has room again; the next shard is tried.

use std::collections::HashMap;
use std::sync::Mutex;

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use crate::server::store::item::{n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{tx, Store, StoreError};

/// Items the budget is split over, at most.
pub const SHARDS: i64 = 8;

const TAT: &str = "tat_us";

/// An item unused this long goes with TTL (30 days).
pub const UNUSED_SECONDS: i64 = 30 * 86_400;

fn pk(receiver: &str, (rate, burst): (i64, i64), shard: usize) -> String {
    format!("receiver-rate#{receiver}#{rate}-{burst}#{shard}")
}

/// One item's part of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// µs each send moves its time on by: a second over its share of the rate, rounded up
    /// (the limit errs on the slow side).
    pub interval_us: i64,
    /// Its share of the burst: the sends it lets go at once after a quiet spell.
    pub capacity: i64,
}

/// The shares of `rate` (a second) and `burst`, each split as evenly as it goes over as
/// many items as give each at least one of both.
pub fn shares(rate: i64, burst: i64) -> Vec<Share> {
    let shards = rate.min(burst).clamp(1, SHARDS);
    let part = |total: i64, k: i64| (total / shards + i64::from(k < total % shards)).max(1);
    (0..shards)
        .map(|k| {
            let r = part(rate, k);
            Share {
                interval_us: (1_000_000 + r - 1) / r,
                capacity: part(burst, k),
            }
        })
        .collect()
}

/// What a try at the budget got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    Yes,
    /// Every shard is spent; `shard` has room again first, at `room_at_us` (epoch µs).
    No {
        room_at_us: i64,
        shard: usize,
    },
}

/// The time each shard held when this console last saw it, by item: which of the two
/// writes to try first (a hint only; the conditions decide).
#[derive(Default)]
pub struct Seen(Mutex<HashMap<String, i64>>);

impl Seen {
    fn get(&self, key: &str) -> Option<i64> {
        self.0.lock().ok().and_then(|seen| seen.get(key).copied())
    }

    fn saw(&self, key: &str, tat: i64) {
        if let Ok(mut seen) = self.0.lock() {
            seen.insert(key.to_string(), tat);
        }
    }
}

/// A time further ahead than a shard's whole burst and this can only come from a console
/// whose clock runs ahead: the item is started again from `now` rather than starve every
/// other console for as long as that clock is ahead.
pub const MAX_SKEW_US: i64 = 2_000_000;

/// Takes one send from the budget of `receiver`, trying the shards from `start` on (the
/// one that said it has room first, when known), each at the time `now_us` reads then
/// (epoch µs). A shard this console saw spent until later is not asked: its time only
/// grows until then, so it refuses. A lost answer sent again may take two: the limit errs
/// on the slow side.
pub async fn take(
    store: &Store,
    seen: &Seen,
    receiver: &str,
    now_us: impl Fn() -> i64,
    (rate, burst): (i64, i64),
    start: usize,
) -> Result<Taken, StoreError> {
    let shares = shares(rate, burst);
    let mut first = Taken::No {
        room_at_us: i64::MAX,
        shard: 0,
    };
    for i in 0..shares.len() {
        let k = (start + i) % shares.len();
        let shard = Shard {
            key: pk(receiver, (rate, burst), k),
            share: shares[k],
            now_us: now_us(),
        };
        let known = seen.get(&shard.key).and_then(|tat| shard.spent_until(tat));
        let room = match known {
            Some(at) => Some(at),
            None => shard.take(store, seen).await?,
        };
        match room {
            None => return Ok(Taken::Yes),
            Some(at) => {
                if matches!(first, Taken::No { room_at_us, .. } if at < room_at_us) {
                    first = Taken::No {
                        room_at_us: at,
                        shard: k,
                    };
                }
            }
        }
    }
    Ok(first)
}

/// One shard's item at one moment.
struct Shard {
    key: String,
    share: Share,
    now_us: i64,
}

/// What a conditional write on a shard found: its new time, or (refused) its time before.
type Wrote = Result<i64, Option<i64>>;

impl Shard {
    /// When a shard whose time is `tat` has room again, if not now (`None` too for a time
    /// so far ahead that it is started again).
    fn spent_until(&self, tat: i64) -> Option<i64> {
        let burst = (self.share.capacity - 1).saturating_mul(self.share.interval_us);
        let at = tat.saturating_sub(burst);
        (at > self.now_us && !self.too_far(tat)).then_some(at)
    }

    fn too_far(&self, tat: i64) -> bool {
        tat > self.far()
    }

    fn far(&self) -> i64 {
        self.now_us
            .saturating_add(self.share.capacity.saturating_mul(self.share.interval_us))
            .saturating_add(MAX_SKEW_US)
    }

    /// A send if it has room, else when it has room again. The write that fits how this
    /// console last saw it goes first, so a send costs one write, busy or idle; a wrong
    /// guess costs a second.
    async fn take(&self, store: &Store, seen: &Seen) -> Result<Option<i64>, StoreError> {
        let idle = |tat: Option<i64>| tat.is_none_or(|t| t < self.now_us || self.too_far(t));
        let busy = !idle(seen.get(&self.key));
        let wrote = if busy {
            self.add(store).await?
        } else {
            self.restart(store).await?
        };
        let wrote = match wrote {
            Err(tat) if !busy && !idle(tat) => self.add(store).await?,
            Err(tat) if busy && idle(tat) => self.restart(store).await?,
            other => other,
        };
        Ok(match wrote {
            Ok(tat) => {
                seen.saw(&self.key, tat);
                None
            }
            // Spent: room again once `now` has come within the burst of its time.
            Err(Some(tat)) => {
                seen.saw(&self.key, tat);
                Some(self.spent_until(tat).unwrap_or(self.now_us))
            }
            // Another console's send came in between: look again now.
            Err(None) => Some(self.now_us),
        })
    }

    /// A busy shard: on by one interval, while `now` is within the burst of its time.
    async fn add(&self, store: &Store) -> Result<Wrote, StoreError> {
        let latest = self.now_us + (self.share.capacity - 1) * self.share.interval_us;
        let req = store
            .client()
            .update_item()
            .update_expression("ADD #t :i SET expires_at = :gone")
            .condition_expression("#t >= :now AND #t <= :latest")
            .expression_attribute_values(":i", n(self.share.interval_us))
            .expression_attribute_values(":latest", n(latest));
        self.write(store, req).await
    }

    /// A shard idle since before `now` (or never used, or set by a clock far ahead):
    /// started again from `now`.
    async fn restart(&self, store: &Store) -> Result<Wrote, StoreError> {
        let req = store
            .client()
            .update_item()
            .update_expression("SET #t = :next, expires_at = :gone")
            .condition_expression("attribute_not_exists(#t) OR #t < :now OR #t > :far")
            .expression_attribute_values(":next", n(self.now_us + self.share.interval_us))
            .expression_attribute_values(":far", n(self.far()));
        self.write(store, req).await
    }

    async fn write(
        &self,
        store: &Store,
        req: UpdateItemFluentBuilder,
    ) -> Result<Wrote, StoreError> {
        let table = store.table(SETTINGS.base);
        let req = req
            .table_name(&table)
            .key("pk", s(&self.key))
            .expression_attribute_names("#t", TAT)
            .expression_attribute_values(":now", n(self.now_us))
            .expression_attribute_values(":gone", n(self.now_us / 1_000_000 + UNUSED_SECONDS))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let tat = |item: Option<&HashMap<String, AttributeValue>>| {
            item.and_then(|i| i.get(TAT))
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<i64>().ok())
        };
        tx::retrying(|| async {
            match req.clone().send().await {
                Ok(out) => Ok(Ok(tat(out.attributes()).unwrap_or(self.now_us))),
                Err(e) => match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(f) => Ok(Err(tat(f.item()))),
                    other => Err(StoreError::service("UpdateItem", &other)),
                },
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_burst_split_into_shares_of_at_least_one_that_add_up_to_them() {
        for (rate, burst) in [
            (1, 1),
            (3, 3),
            (8, 2),
            (9, 40),
            (100, 100),
            (1001, 5),
            (6000, 6000),
        ] {
            let s = shares(rate, burst);
            assert_eq!(
                s.iter().map(|x| x.capacity).sum::<i64>(),
                burst,
                "{rate}/{burst}"
            );
            assert!(s.len() as i64 <= SHARDS && s.iter().all(|x| x.capacity >= 1));
            // Each share's rate (a second over its interval) adds up to at most the rate.
            let r: f64 = s.iter().map(|x| 1e6 / x.interval_us as f64).sum();
            assert!(r <= rate as f64 && r > rate as f64 * 0.999, "{rate}: {r}");
        }
        let s = shares(10, 10);
        assert_eq!(s.len(), 8);
        assert_eq!((s[0].interval_us, s[7].interval_us), (500_000, 1_000_000));
        assert_eq!(shares(10, 3).len(), 3);
    }
}
