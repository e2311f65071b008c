//! The day key of `event-day-index`, write-sharded (docs/dynamodb.md, "No hot partition
//! key"). One value per day would put every event's index copy on one partition, which
//! takes 1,000 write units a second: at 10,000 events a second, each event record written
//! about twice (claimed, then processed) and each copy a unit or two, the day takes 20,000
//! to 40,000 units a second. So an event's day is `YYYY-MM-DD#NN`, `NN` one of
//! [`DAY_SHARDS`] by a hash of its id (the same for every write of the record), and a
//! day's list reads every shard and merges them.

use crate::server::store::fanout;

/// Shards of one day's events, every one read: 64 partitions take 64,000 write units a
/// second, so 10,000 events a second (4.0 units each in the cost run) leave each about 625
/// of its 1,000.
pub const DAY_SHARDS: u32 = 64;

/// The shards the release before writes and reads (the first 32 of [`DAY_SHARDS`]): every
/// one of them past its limit in the scale run. A console writes these until
/// `events.day_shards` says 64, once no console of the release before (which would list
/// only these) runs.
pub const DAY_SHARDS_BEFORE: u32 = 32;

/// The `event_day` of `event_id`'s record, made on `day` (`YYYY-MM-DD`), over `shards`
/// ([`DAY_SHARDS_BEFORE`] or [`DAY_SHARDS`]).
pub fn day_key(day: &str, event_id: &str, shards: u32) -> String {
    fanout::key(day, event_id, shards.min(DAY_SHARDS))
}

/// Every partition of `day`: its shards, and the unsharded day a release before this one
/// wrote (read until its records expire).
pub fn day_keys(day: &str) -> Vec<(u32, String)> {
    fanout::keys(day, DAY_SHARDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_day_key_is_one_of_the_days_partitions_and_stays_put() {
        let key = day_key("2026-12-06", "evt:rp:c-1:m-1", DAY_SHARDS);
        assert_eq!(key, day_key("2026-12-06", "evt:rp:c-1:m-1", DAY_SHARDS));
        let keys = day_keys("2026-12-06");
        assert_eq!(keys.len(), DAY_SHARDS as usize + 1);
        assert!(keys.iter().any(|(_, k)| *k == key));
        // What the release before writes is read too.
        let before = day_key("2026-12-06", "evt:rp:c-1:m-1", DAY_SHARDS_BEFORE);
        assert!(keys.iter().any(|(_, k)| *k == before));
        assert!(
            keys.iter().any(|(_, k)| k == "2026-12-06"),
            "the release before's"
        );
        // Ids spread over the shards.
        let used: std::collections::BTreeSet<u32> = (0..1000)
            .map(|i| fanout::shard_of(&format!("evt:rp:c-{i}:m-1"), DAY_SHARDS))
            .collect();
        assert_eq!(used.len(), DAY_SHARDS as usize);
    }
}
