//! Which of the due group's partitions a dispatch round reads (docs/events.md, "Delivery").
//! The group's partitions on `outbox-index` (the release before's, few) every round; of
//! `due-index`'s many, those this console put something in that is due by now (it queued
//! an event's side effects, or an attempt of its own will be tried again), and the next few
//! of a rotation that starts anywhere, and again those where the last round found work.
//! So a round's reads do not grow with the partitions: what a console queued goes at once,
//! what a round could not finish is read again next round, and what another console left
//! (it went away, or its attempt's retry time came) is found by some console's rotation
//! within a few rounds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use crate::server::store::events::outbox::{due_shard_of, Part, DUE_SHARDS, SHARDS};
use crate::server::store::Store;

/// `due-index` partitions a round reads by rotation.
pub(super) const ROTATION: u32 = 8;

pub(super) struct DueParts {
    /// The next partition of the rotation.
    next: AtomicU32,
    /// Partitions this console put something in, and when it is due (the earliest).
    put: Mutex<BTreeMap<u32, i64>>,
    /// Safe mode is on and a round since it went on read every due partition
    /// (`Events::round_over`).
    swept: AtomicBool,
}

impl DueParts {
    pub(super) fn new() -> DueParts {
        // Consoles start their rotations apart.
        let start = u32::from_str_radix(&crate::server::ids::random_hex(4), 16).unwrap_or(0);
        DueParts {
            next: AtomicU32::new(start % DUE_SHARDS),
            put: Mutex::new(BTreeMap::new()),
            swept: AtomicBool::new(false),
        }
    }

    /// Whether a round since safe mode went on read every due partition.
    pub(super) fn swept(&self) -> bool {
        self.swept.load(Ordering::SeqCst)
    }

    /// Records whether safe mode is on and swept (false: the next round in safe mode
    /// sweeps).
    pub(super) fn set_swept(&self, swept: bool) {
        self.swept.store(swept, Ordering::SeqCst);
    }

    /// This console put an action of `conversation_id` in the due group, due at `at_ms`
    /// (on `due-index` when `store` writes there; `outbox-index`'s are read every round).
    pub(super) fn put(&self, store: &Store, conversation_id: &str, at_ms: i64) {
        if store.writes_due_index() {
            self.again(due_shard_of(conversation_id), at_ms);
        }
    }

    /// `due-index`'s `shard` holds work due at `at_ms` (a round found some there): a round
    /// from then reads it.
    pub(super) fn again(&self, shard: u32, at_ms: i64) {
        let mut put = self.put.lock().unwrap_or_else(|e| e.into_inner());
        let at = put.entry(shard % DUE_SHARDS).or_insert(at_ms);
        *at = (*at).min(at_ms);
    }

    /// The partitions of a round at `now_ms`: `outbox-index`'s, those this console put
    /// something in that is due by now, and the next [`ROTATION`] of the rotation.
    pub(super) fn for_round(&self, now_ms: i64) -> Vec<Part> {
        let mut due: Vec<u32> = {
            let mut put = self.put.lock().unwrap_or_else(|e| e.into_inner());
            let ready: Vec<u32> = put
                .iter()
                .filter(|(_, at)| **at <= now_ms)
                .map(|(s, _)| *s)
                .collect();
            for s in &ready {
                put.remove(s);
            }
            ready
        };
        let from = self.next.fetch_add(ROTATION, Ordering::Relaxed);
        due.extend((0..ROTATION).map(|i| from.wrapping_add(i) % DUE_SHARDS));
        due.sort_unstable();
        due.dedup();
        (0..SHARDS)
            .map(Part::Outbox)
            .chain(due.into_iter().map(Part::Due))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_reads_the_old_partitions_what_was_put_and_a_turn_of_the_rotation() {
        let parts = DueParts::new();
        parts.again(due_shard_of("c-1"), 1_000);
        parts.again(due_shard_of("c-2"), 5_000);
        let first = parts.for_round(2_000);
        let dues = |v: &[Part]| -> Vec<u32> {
            v.iter()
                .filter_map(|p| match p {
                    Part::Due(n) => Some(*n),
                    Part::Outbox(_) => None,
                })
                .collect()
        };
        assert_eq!(
            first
                .iter()
                .filter(|p| matches!(p, Part::Outbox(_)))
                .count(),
            SHARDS as usize
        );
        assert!(dues(&first).contains(&due_shard_of("c-1")));
        // Not due yet: read by a later round.
        let later = parts.for_round(6_000);
        assert!(dues(&later).contains(&due_shard_of("c-2")));
        // Work found there and left: read again next round.
        parts.again(due_shard_of("c-2"), 6_000);
        assert!(dues(&parts.for_round(6_000)).contains(&due_shard_of("c-2")));
        // Once read, a partition is read by the rotation only.
        let c1 = due_shard_of("c-1");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..DUE_SHARDS / ROTATION {
            let round = dues(&parts.for_round(7_000));
            assert!(round.len() <= ROTATION as usize);
            seen.extend(round);
        }
        // The rotation reads every partition within DUE_SHARDS / ROTATION rounds.
        assert_eq!(seen.len(), DUE_SHARDS as usize);
        assert!(seen.contains(&c1));
    }
}
