//! Who polls which outbox shard (docs/events.md, "Who polls which shard"): each console
//! reads the due actions of the shards it holds a lease on, not of every shard, so the
//! reads of a shard do not grow with the number of consoles. Every few seconds a console
//! looks at all the leases: it renews its own, takes free or run-out ones up to its share,
//! and, holding less than its share, takes shards from the consoles holding the most. A
//! shard changes hands only by such a take (one conditional write), never by a console
//! letting go first, so no shard goes unpolled while its holder lives; a console that
//! stops gives its shards back, one that dies loses them when its leases run out. Which
//! shards a console reads decides nothing: every claim stays conditional.

use std::collections::BTreeMap;

use super::ingest::Events;
use crate::server::store::events::dispatch_leases::{self, Lease};
use crate::server::store::events::outbox::SHARDS;
use crate::server::store::StoreError;

/// A shard lease lasts at most this long (less when `events.lease_seconds` is shorter): a
/// dead console's shards are polled again within it. A console looks every third of it.
pub(super) const SHARD_LEASE_MS: i64 = 15_000;

/// The shards this console read last, and when it last looked at the leases.
#[derive(Debug, Default)]
pub(super) struct Held {
    shards: Vec<u32>,
    /// Wall ms of the last look; 0: never.
    looked_ms: i64,
}

/// What one look at the leases decides for `me`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Plan {
    /// Held, renewed.
    pub(super) keep: Vec<u32>,
    /// Free or run out: taken.
    pub(super) take: Vec<u32>,
    /// Taken from the consoles holding the most, each as it was read.
    pub(super) steal: Vec<Lease>,
}

/// The plan for `me` given every shard's lease at `now_ms`. Shares: with `k` consoles
/// holding leases (this one counted), a console takes free shards up to ⌈shards / k⌉,
/// and one holding fewer than ⌊shards / k⌋ takes shards, one at a time, from whichever
/// console holds the most, while that one holds at least two more than it. A console
/// above its share keeps what it holds until others take it.
pub(super) fn plan(leases: &[Lease], me: &str, now_ms: i64) -> Plan {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for l in leases.iter().filter(|l| l.live(now_ms)) {
        *counts
            .entry(l.owner.clone().unwrap_or_default())
            .or_default() += 1;
    }
    counts.entry(me.to_string()).or_default();
    let consoles = counts.len();
    let (most, least) = (leases.len().div_ceil(consoles), leases.len() / consoles);
    let mut plan = Plan {
        keep: leases
            .iter()
            .filter(|l| l.live(now_ms) && l.owner.as_deref() == Some(me))
            .map(|l| l.shard)
            .collect(),
        ..Plan::default()
    };
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
    plan.take = free
        .into_iter()
        .take(most.saturating_sub(plan.keep.len()))
        .collect();
    let mut holding = plan.keep.len() + plan.take.len();
    while holding < least {
        let top = counts
            .iter()
            .filter(|(o, _)| o.as_str() != me)
            .max_by_key(|(o, c)| (**c, std::cmp::Reverse(o.as_str())))
            .map(|(o, c)| (o.clone(), *c));
        let Some((them, count)) = top.filter(|(_, c)| *c >= holding + 2) else {
            break;
        };
        let lease = leases.iter().rev().find(|l| {
            l.live(now_ms)
                && l.owner.as_deref() == Some(them.as_str())
                && !plan.steal.iter().any(|s| s.shard == l.shard)
        });
        let Some(lease) = lease else { break };
        plan.steal.push(lease.clone());
        counts.insert(them, count - 1);
        holding += 1;
    }
    plan
}

impl Events {
    /// The outbox shards this console polls now: as held, or after a look at the leases
    /// when a third of a lease has passed since the last (at once the first time).
    pub(super) async fn my_shards(&self, now_ms: i64) -> Result<Vec<u32>, StoreError> {
        let lease = self.lease_ms().clamp(1, SHARD_LEASE_MS);
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
        for from in &plan.steal {
            let (owner, shard) = (&self.owner, from.shard);
            if dispatch_leases::take(&self.store, shard, owner, Some(from), now_ms, until).await? {
                shards.push(shard);
            }
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
    /// on their next look, within a third of a lease, not after it).
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

    fn count(l: &[Lease], who: &str) -> usize {
        l.iter().filter(|l| l.owner.as_deref() == Some(who)).count()
    }

    /// `me`'s plan carried out on `l` at `now`, as the conditional writes would.
    fn look(l: &mut [Lease], me: &str, now: i64) {
        let p = plan(l, me, now);
        for shard in p
            .keep
            .iter()
            .chain(&p.take)
            .chain(p.steal.iter().map(|s| &s.shard))
        {
            l[*shard as usize].owner = Some(me.into());
            l[*shard as usize].until_ms = now + 15_000;
        }
    }

    #[test]
    fn a_lone_console_takes_every_shard() {
        let p = plan(&leases(&[None; 8], 0), "a", 1_000);
        assert_eq!(p.take.len(), 8);
        assert!(p.keep.is_empty() && p.steal.is_empty());
    }

    #[test]
    fn a_newcomer_takes_its_share_from_the_busiest_and_nothing_goes_unheld() {
        let mut l = leases(&[Some("a"); 8], 5_000);
        look(&mut l, "b", 1_000);
        assert_eq!((count(&l, "a"), count(&l, "b")), (4, 4));
        // "a" looks again: it keeps its four; nothing is let go.
        let a = plan(&l, "a", 2_000);
        assert_eq!(a.keep.len(), 4);
        assert!(a.take.is_empty() && a.steal.is_empty());
        // A third console takes from both: 3, 3 and 2, every shard held throughout.
        look(&mut l, "c", 2_000);
        let mut shares = [count(&l, "a"), count(&l, "b"), count(&l, "c")];
        shares.sort_unstable();
        assert_eq!(shares, [2, 3, 3]);
        assert!(l.iter().all(|l| l.live(2_000)));
        for me in ["a", "b", "c"] {
            let p = plan(&l, me, 2_000);
            assert!(p.steal.is_empty() && p.take.is_empty(), "{me}: {p:?}");
        }
    }

    #[test]
    fn a_race_at_the_first_look_evens_out_and_run_out_leases_are_free() {
        // Two consoles looked at once: one got 7, the other 1.
        let mut l = leases(&[Some("a"); 8], 5_000);
        l[3].owner = Some("b".into());
        look(&mut l, "b", 1_000);
        assert_eq!((count(&l, "a"), count(&l, "b")), (4, 4));
        // "b" died: its leases ran out, and "a" takes them as free.
        let a = plan(&l, "a", 30_000);
        assert_eq!(a.take.len() + a.keep.len(), 8, "{a:?}");
    }
}
