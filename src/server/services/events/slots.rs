//! The receiver's concurrency limit (docs/events.md, "Concurrency limit"): with one in its
//! limits (saved with the receiver, else `events.receiver_concurrency`), every console
//! together has at most that many requests at the receiver at once, each holding a slot
//! in DynamoDB (`store::events::slots`). A delivery takes a slot before it claims its
//! action and gives it back once the answer is recorded; a console that dies holding one
//! loses it when the slot's lease (the request's timeout and a claim's lease) runs out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::ingest::Events;
use super::rate::wall_ms;
use super::receiver::Target;
use crate::server::ids::random_hex;
use crate::server::store::events::health::receiver_key;
use crate::server::store::events::slots;
use crate::server::store::StoreError;

/// A delivery's place among the receiver's requests at once.
pub(super) enum Slot {
    /// The receiver has no concurrency limit.
    Unlimited,
    /// Every slot is held: the round stops (`stop`), the next tries again.
    Full,
    /// This slot, held under `holder` until given back.
    Held {
        receiver: String,
        slot: usize,
        holder: String,
    },
}

impl Events {
    /// Takes a slot of the receiver at `url`, trying again once after a short wait when
    /// every one is held; then sets `stop`.
    pub(super) async fn take_slot(
        &self,
        target: &Target,
        stop: &AtomicBool,
    ) -> Result<Slot, StoreError> {
        let limit = target.limits.concurrency;
        if limit <= 0 {
            return Ok(Slot::Unlimited);
        }
        let receiver = receiver_key(&target.url_text);
        let holder = random_hex(8);
        let start = usize::from_str_radix(&random_hex(2), 16).unwrap_or(0);
        // The request's timeout, and a claim's lease for the claim before it (its attempts
        // and retries), the answer's record after it and the consoles' clocks.
        let lease = self.config.events.webhook_timeout_ms + self.lease_ms();
        for tries in 0..2 {
            let now = wall_ms();
            let slots = limit as usize;
            if let Some(slot) = slots::take(
                &self.store,
                &receiver,
                slots,
                &holder,
                now,
                now + lease,
                start,
            )
            .await?
            {
                return Ok(Slot::Held {
                    receiver,
                    slot,
                    holder,
                });
            }
            crate::server::metrics::receiver_slot_waited(target.name.as_str());
            if tries == 1 || stop.load(Ordering::SeqCst) {
                break;
            }
            let jitter = u64::from(u8::from_str_radix(&random_hex(1), 16).unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(100 + jitter)).await;
        }
        stop.store(true, Ordering::SeqCst);
        Ok(Slot::Full)
    }

    /// Gives `slot` back. A failure is logged, not raised: the lease frees it.
    pub(super) async fn give_back(&self, slot: Slot) {
        if let Slot::Held {
            receiver,
            slot,
            holder,
        } = slot
        {
            if let Err(e) = slots::give_back(&self.store, &receiver, slot, &holder).await {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "a receiver slot was not given back; its lease frees it");
            }
        }
    }
}
