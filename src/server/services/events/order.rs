//! The order of a conversation's side effects (docs/events.md, "The outbox"): an action is
//! not sent before the one before it in its conversation has ended. A waiting action is
//! moved just behind the one it waits for, so that waiting actions never fill the front of
//! the partition a round reads and hide the one they wait for.

use std::collections::HashMap;

use super::dispatch::PER_SHARD;
use super::ingest::Events;
use super::round::Round;
use crate::model::outbox::ReceiverName;
use crate::server::store::events::order;
use crate::server::store::events::outbox::Part;
use crate::server::store::events::{outbox_reads, ActionRecord, ActionStatus};
use crate::server::store::StoreError;

/// Pages of one shard a round reads while it finds only waiting actions.
const PAGES_PER_SHARD: usize = 8;

/// How long an action whose predecessor is held waits before it is looked at again.
const HELD_RECHECK_MS: i64 = 10_000;

/// Whether a due action waits for the one before it in its conversation.
enum Wait {
    No,
    /// It waits where it is.
    Stays,
    /// It waits, moved to this time.
    Moved(i64),
}

impl Events {
    /// The due actions of one shard that may go now (in safe mode: every due action, to be
    /// held). One waiting for the action before it in its conversation is moved just behind
    /// that one, so that waiting actions never fill the front of the partition that a round
    /// reads; a whole chain moves in one pass (`moved` keeps this round's new times), and
    /// while a page holds only waiting actions the next page is read.
    pub(super) async fn ready_on(
        &self,
        name: &ReceiverName,
        part: Part,
        now_ms: i64,
        safe_mode: bool,
        round: &mut Round,
    ) -> Result<Vec<ActionRecord>, StoreError> {
        let mut ready = Vec::new();
        let mut moved: HashMap<String, i64> = HashMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..PAGES_PER_SHARD {
            let receiver = super::routes::stored(name);
            let (page, next) = outbox_reads::due(
                &self.store,
                receiver,
                part,
                now_ms,
                PER_SHARD,
                cursor.as_deref(),
            )
            .await?;
            for rec in page {
                if rec.receiver.as_deref() != receiver {
                    // Put in this range by a console of the release before, which knew no
                    // receivers: moved to its own receiver's range, its time kept.
                    order::defer(&self.store, &rec, rec.next_at_ms).await?;
                    continue;
                }
                if safe_mode {
                    ready.push(rec);
                    continue;
                }
                match self.waits(&rec, now_ms, &moved).await? {
                    Wait::No => ready.push(rec),
                    Wait::Stays => round.waiting += 1,
                    Wait::Moved(until) => {
                        round.waiting += 1;
                        moved.insert(rec.event_id, until);
                    }
                }
            }
            match next {
                Some(n) if ready.is_empty() => cursor = Some(n),
                _ => break,
            }
        }
        Ok(ready)
    }

    /// Whether `rec` waits for the action before it, and if so whether it moved.
    async fn waits(
        &self,
        rec: &ActionRecord,
        now_ms: i64,
        moved: &HashMap<String, i64>,
    ) -> Result<Wait, StoreError> {
        let Some(before) = &rec.after else {
            return Ok(Wait::No);
        };
        let until = match moved.get(before) {
            // The one before waits too, and moved this round: go just behind it.
            Some(at) => Some(at + 1),
            None => match order::blocker(&self.store, before).await? {
                None => return Ok(Wait::No),
                // Each waiting for the other: the one before was replaced by a later life
                // of its event, queued behind this one. This one goes first.
                Some(blocker) if blocker.after.as_deref() == Some(rec.event_id.as_str()) => {
                    return Ok(Wait::No)
                }
                Some(blocker) => self.wait_until(rec, &blocker, now_ms),
            },
        };
        match until {
            Some(t) if order::defer(&self.store, rec, t).await? => Ok(Wait::Moved(t)),
            _ => Ok(Wait::Stays),
        }
    }

    /// When an action waiting for `blocker` is next looked at, if it must move: just behind
    /// the blocker, or a while from now if the blocker is held. `None`: it stays (it is
    /// behind already, or the blocker is in flight).
    fn wait_until(&self, rec: &ActionRecord, blocker: &ActionRecord, now_ms: i64) -> Option<i64> {
        let at = match blocker.status {
            ActionStatus::Held => return Some(now_ms + HELD_RECHECK_MS),
            ActionStatus::Claimed if blocker.lease_until_ms >= now_ms => return None,
            _ => blocker.next_at_ms,
        };
        (rec.next_at_ms <= at).then_some(at + 1)
    }
}
