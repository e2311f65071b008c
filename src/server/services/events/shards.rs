//! Who polls which outbox shard (docs/events.md, "Who polls which shard"): each console
//! reads the due actions of the shards it holds a lease on, not of every shard, so the
//! reads of a shard do not grow with the number of consoles. Every few seconds a console
//! looks at all the leases: it renews its own, gives back what is above its share, takes
//! free or run-out ones up to its share, and, holding less than its share with none free,
//! takes one from the console holding the most. A console that stops gives its shards
//! back; one that dies loses them when its leases run out (`events.lease_seconds`, as its
//! claims). Which shards a console reads decides nothing: every claim stays conditional.

use std::collections::BTreeMap;

use super::ingest::Events;
use crate::server::store::events::dispatch_leases::{self, Lease};
use crate::server::store::events::outbox::SHARDS;
use crate::server::store::StoreError;

/// The shards this console read last, and when it last looked at the leases.
#[derive(Debug, Default)]
pub(super) struct Held {
    shards: Vec<u32>,
    /// Wall ms of the last look; 0: never.
    looked_ms: i64,
}

/// What one look at the leases decides for console `me`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Plan {
    /// Held, renewed.
    pub(super) keep: Vec<u32>,
    /// Free or run out: taken.
    pub(super) take: Vec<u32>,
    /// Taken from the console holding the most, as it was read.
    pub(super) steal: Option<Lease>,
    /// Above this console's share: given back.
    pub(super) give_back: Vec<u32>,
}

/// The plan for `me` given every shard's lease at `now_ms`. Shares: with `k` consoles
/// holding leases (this one counted), each holds at most ⌈shards / k⌉; one below
/// ⌊shards / k⌋ with nothing free takes one shard from the console holding the most, when
/// that one holds at least two more than it.
pub(super) fn plan(leases: &[Lease], me: &str, now_ms: i64) -> Plan {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in leases.iter().filter(|l| l.live(now_ms)) {
        *counts
            .entry(l.owner.as_deref().unwrap_or_default())
            .or_default() += 1;
    }
    counts.entry(me).or_default();
    let consoles = counts.len();
    let (most, least) = (
        leases.len().div_ceil(consoles),
        leases.len() / consoles.max(1),
    );
    let mine: Vec<u32> = leases
        .iter()
        .filter(|l| l.live(now_ms) && l.owner.as_deref() == Some(me))
        .map(|l| l.shard)
        .collect();
    let mut plan = Plan::default();
    if mine.len() > most {
        plan.keep = mine[..most].to_vec();
        plan.give_back = mine[most..].to_vec();
        return plan;
    }
    plan.keep = mine;
    // Free ones, starting at a place of this console's own, so that two consoles looking
    // at once mostly try different shards.
    let mut free: Vec<u32> = leases
        .iter()
        .filter(|l| !l.live(now_ms))
        .map(|l| l.shard)
        .collect();
    if !free.is_empty() {
        let start = crate::server::store::fanout::shard_of(me, free.len() as u32) as usize;
        free.rotate_left(start);
    }
    plan.take = free.into_iter().take(most - plan.keep.len()).collect();
    let holding = plan.keep.len() + plan.take.len();
    if plan.take.is_empty() && holding < least {
        let top = counts
            .iter()
            .filter(|(o, _)| **o != me)
            .max_by_key(|(o, c)| (**c, std::cmp::Reverse(**o)));
        if let Some((them, _)) = top.filter(|(_, c)| **c >= holding + 2) {
            plan.steal = leases
                .iter()
                .rev()
                .find(|l| l.live(now_ms) && l.owner.as_deref() == Some(*them))
                .cloned();
        }
    }
    plan
}

impl Events {
    /// The outbox shards this console polls now: as held, or after a look at the leases
    /// when a third of a lease has passed since the last (at once the first time).
    pub(super) async fn my_shards(&self, now_ms: i64) -> Result<Vec<u32>, StoreError> {
        let lease = self.lease_ms().max(1);
        {
            let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            if held.looked_ms > 0 && now_ms < held.looked_ms + lease / 3 {
                return Ok(held.shards.clone());
            }
        }
        let leases = dispatch_leases::read(&self.store, SHARDS).await?;
        let plan = plan(&leases, &self.owner, now_ms);
        let until = now_ms + lease;
        let mut shards = Vec::new();
        for shard in plan.keep.iter().chain(&plan.take) {
            if dispatch_leases::take(&self.store, *shard, &self.owner, None, now_ms, until).await? {
                shards.push(*shard);
            }
        }
        if let Some(from) = &plan.steal {
            let (owner, shard) = (&self.owner, from.shard);
            if dispatch_leases::take(&self.store, shard, owner, Some(from), now_ms, until).await? {
                shards.push(shard);
            }
        }
        for shard in &plan.give_back {
            dispatch_leases::give_back(&self.store, *shard, &self.owner).await?;
        }
        shards.sort_unstable();
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        *held = Held {
            shards: shards.clone(),
            looked_ms: now_ms,
        };
        Ok(shards)
    }

    /// Gives back every shard this console holds (a clean shutdown: the others take them
    /// on their next look, not after the lease).
    pub async fn give_back_shards(&self) -> Result<(), StoreError> {
        let shards = std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()));
        for shard in shards.shards {
            dispatch_leases::give_back(&self.store, shard, &self.owner).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leases(owners: &[Option<&str>], until_ms: i64) -> Vec<Lease> {
        owners
            .iter()
            .enumerate()
            .map(|(i, o)| Lease {
                shard: i as u32,
                owner: o.map(str::to_string),
                until_ms,
            })
            .collect()
    }

    #[test]
    fn a_lone_console_takes_every_shard() {
        let p = plan(&leases(&[None; 8], 0), "a", 1_000);
        assert_eq!(p.take.len(), 8);
        assert!(p.keep.is_empty() && p.give_back.is_empty() && p.steal.is_none());
    }

    #[test]
    fn a_console_above_its_share_gives_back_and_a_newcomer_takes_one() {
        let all_a = leases(&[Some("a"); 8], 5_000);
        // "b" holds nothing and nothing is free: it takes one of "a"'s.
        let b = plan(&all_a, "b", 1_000);
        assert_eq!(b.steal.as_ref().map(|l| l.shard), Some(7));
        assert!(b.take.is_empty());
        // Once "a" sees "b" holding one, it keeps 4 and gives back 3.
        let mut seen = all_a.clone();
        seen[7].owner = Some("b".into());
        let a = plan(&seen, "a", 1_000);
        assert_eq!(a.keep, vec![0, 1, 2, 3]);
        assert_eq!(a.give_back, vec![4, 5, 6]);
        // Then "b" takes the three given back.
        for l in &mut seen[4..7] {
            l.until_ms = 0;
        }
        let b = plan(&seen, "b", 1_000);
        assert_eq!(b.keep, vec![7]);
        assert_eq!(b.take.len(), 3);
    }

    #[test]
    fn run_out_leases_are_free_and_shares_within_one_are_left_alone() {
        // "c" died: its leases ran out, and "a" (at its share) takes them as free.
        let mut l = leases(
            &[
                Some("a"),
                Some("a"),
                Some("a"),
                Some("b"),
                Some("b"),
                Some("b"),
            ],
            5_000,
        );
        l.extend(
            [Some("c"), Some("c")]
                .iter()
                .enumerate()
                .map(|(i, o)| Lease {
                    shard: 6 + i as u32,
                    owner: o.map(str::to_string),
                    until_ms: 500,
                }),
        );
        let a = plan(&l, "a", 1_000);
        assert_eq!(a.keep, vec![0, 1, 2]);
        assert_eq!(a.take.len(), 1, "a's share of 8 over 2 is 4");
        // 3, 3 and 2 over three consoles: nobody takes from anybody.
        let even = leases(
            &[
                Some("a"),
                Some("a"),
                Some("a"),
                Some("b"),
                Some("b"),
                Some("b"),
                Some("c"),
                Some("c"),
            ],
            5_000,
        );
        for me in ["a", "b", "c"] {
            assert_eq!(plan(&even, me, 1_000).steal, None, "{me}");
            assert!(plan(&even, me, 1_000).give_back.is_empty(), "{me}");
        }
    }
}
