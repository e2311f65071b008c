//! The receiver's rate limit, shared by every console (docs/events.md, "Rate limit"): at
//! most `events.receiver_rate` sends in each second of the clock, counted in DynamoDB.
//! The second's budget is split over up to [`SHARDS`] items in `settings-<env>`, named by
//! the receiver (the hash of its URL), the second and the shard, so no item takes more than
//! its share of the writes and none is hot. A send takes one from a shard with a
//! conditional `ADD`; a spent shard refuses, and the next is tried. The items live two
//! minutes (TTL).

use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{Store, StoreError};

/// Items a second's budget is split over, at most.
pub const SHARDS: i64 = 8;

/// How long a second's items are kept (TTL deletes them later still).
const KEEP_S: i64 = 120;

fn pk(receiver: &str, second: i64, shard: usize) -> String {
    format!("receiver-rate#{receiver}#{second}#{shard}")
}

/// The sends each shard of a second holds: `rate` split as evenly as it goes, over as
/// many shards as give each at least one.
pub fn shares(rate: i64) -> Vec<i64> {
    let shards = rate.clamp(1, SHARDS);
    (0..shards)
        .map(|k| rate / shards + i64::from(k < rate % shards))
        .collect()
}

/// Takes one send from the budget of `second` (epoch seconds) of `receiver`, trying the
/// shards from `start` on. False: the second is spent. A lost answer sent again may take
/// two: the limit errs on the slow side.
pub async fn take(
    store: &Store,
    receiver: &str,
    second: i64,
    rate: i64,
    start: usize,
) -> Result<bool, StoreError> {
    let shares = shares(rate);
    for i in 0..shares.len() {
        let k = (start + i) % shares.len();
        let req = store
            .client()
            .update_item()
            .table_name(store.table(SETTINGS.base))
            .key("pk", s(pk(receiver, second, k)))
            .update_expression("ADD used :one SET expires_at = :exp")
            .condition_expression("attribute_not_exists(used) OR used < :cap")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":cap", n(shares[k]))
            .expression_attribute_values(":exp", n(second + KEEP_S));
        if item::update_if(req).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_splits_into_shares_of_at_least_one_that_add_up_to_it() {
        for rate in [1, 3, 8, 9, 100, 1001] {
            let s = shares(rate);
            assert_eq!(s.iter().sum::<i64>(), rate, "{rate}");
            assert!(
                s.iter().all(|x| *x >= 1) && s.len() as i64 <= SHARDS,
                "{rate}: {s:?}"
            );
        }
        assert_eq!(shares(3), vec![1, 1, 1]);
        assert_eq!(shares(10), vec![2, 2, 1, 1, 1, 1, 1, 1]);
    }
}
