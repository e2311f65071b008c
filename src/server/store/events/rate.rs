//! The receiver's rate limit, shared by every console (docs/events.md, "Rate limit"): at
//! most `events.receiver_rate` sends in each second of the clock, counted in DynamoDB.
//! The budget is split over up to [`SHARDS`] items in `settings-<env>` per receiver (the
//! hash of its URL), each holding its share and the second it counts: no item takes more
//! than its share of the writes, and the items are the same every second (nothing piles up
//! for TTL to delete, nothing for a scan of the table to wade through). A send takes one
//! from a shard with a conditional `ADD`; a shard still counting an earlier second is
//! started again at this one; a spent shard refuses, and the next is tried.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use crate::server::store::item::{n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{tx, Store, StoreError};

/// Items a second's budget is split over, at most.
pub const SHARDS: i64 = 8;

fn pk(receiver: &str, shard: usize) -> String {
    format!("receiver-rate#{receiver}#{shard}")
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
        if take_from(store, &pk(receiver, k), second, shares[k]).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One shard: a send within `second` if it has room (one write), or the shard started at
/// `second` if it counts an earlier one (two).
async fn take_from(store: &Store, key: &str, second: i64, cap: i64) -> Result<bool, StoreError> {
    let table = store.table(SETTINGS.base);
    let add = store
        .client()
        .update_item()
        .table_name(&table)
        .key("pk", s(key))
        .update_expression("ADD used :one")
        .condition_expression("#s = :sec AND used < :cap")
        .expression_attribute_names("#s", "second")
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":sec", n(second))
        .expression_attribute_values(":cap", n(cap))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    let counted = tx::retrying(|| async {
        match add.clone().send().await {
            Ok(_) => Ok(None),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(f) => Ok(Some(
                    f.item()
                        .and_then(|i| i.get("second"))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse::<i64>().ok()),
                )),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await?;
    match counted {
        None => Ok(true),
        // Spent within this second, or a console whose clock runs ahead counts a later one.
        Some(Some(at)) if at >= second => Ok(false),
        // An earlier second (or none yet): this send starts this one.
        Some(_) => {
            let start = store
                .client()
                .update_item()
                .table_name(&table)
                .key("pk", s(key))
                .update_expression("SET #s = :sec, used = :one")
                .condition_expression("attribute_not_exists(#s) OR #s < :sec")
                .expression_attribute_names("#s", "second")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":sec", n(second));
            crate::server::store::item::update_if(start).await
        }
    }
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
