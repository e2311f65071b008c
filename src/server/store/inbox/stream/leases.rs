//! The shard states the consoles share, in the settings table (writing them to the inbox
//! table would put a record on the very stream they track): who reads each shard (a lease
//! that runs out), how far it was read, and whether it was read to its end.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration, Utc};

use crate::server::store::inbox::{CHECKPOINT_PK, KEEP_DAYS};
use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{Store, StoreError};

/// The settings-table key of one shard's state.
pub(super) fn state_key(shard: &str) -> String {
    format!("{CHECKPOINT_PK}#{shard}")
}

/// What the consoles agree on about one shard: how far it was read, and whether it was
/// read to its end (its `owner` and `lease_until_ms` are only ever compared in conditions).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(super) struct ShardState {
    #[serde(default)]
    pub(super) sequence: Option<String>,
    #[serde(default)]
    pub(super) finished: bool,
}

/// One console's leases: it holds a shard while its lease runs, renewing it with every
/// position it saves.
pub(super) struct Leases {
    store: Store,
    owner: String,
    lease: std::time::Duration,
}

impl Leases {
    pub(super) fn new(store: Store, owner: &str, lease: std::time::Duration) -> Leases {
        Leases {
            store,
            owner: owner.to_string(),
            lease,
        }
    }

    /// The shard's state as the consoles last saved it (none yet: from the start).
    pub(super) async fn state(&self, shard: &str) -> Result<ShardState, StoreError> {
        Ok(
            item::get(&self.store, SETTINGS.base, "pk", &state_key(shard))
                .await?
                .unwrap_or_default(),
        )
    }

    /// An `UpdateItem` of `shard`'s state, to be given its expressions.
    fn update(&self, shard: &str) -> UpdateItemFluentBuilder {
        self.store
            .client()
            .update_item()
            .table_name(self.store.table(SETTINGS.base))
            .key("pk", s(state_key(shard)))
    }

    /// An `UpdateItem` of `shard`'s state that applies only while this console holds it.
    fn held(&self, shard: &str) -> UpdateItemFluentBuilder {
        self.update(shard)
            .condition_expression("#o = :me")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":me", s(&self.owner))
    }

    /// Takes (or renews) the lease on `shard` unless another console holds it.
    pub(super) async fn take(&self, shard: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let req = self
            .update(shard)
            .update_expression(
                "SET #o = :me, lease_until_ms = :until, expires_at = :exp, \
                 started_at = if_not_exists(started_at, :now)",
            )
            .condition_expression(
                "attribute_not_exists(pk) OR #o = :me OR attribute_not_exists(#o) \
                 OR lease_until_ms < :now",
            )
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":me", s(&self.owner))
            .expression_attribute_values(":until", n(now + self.lease.as_millis() as i64))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":exp", n(keep_until()));
        item::update_if(req).await
    }

    /// Saves how far `shard` was read (and renews the lease), only while this console
    /// holds it, and never backwards: a save that lands late (after a later one) does not
    /// move the position back or reopen a finished shard. False: the lease went to another
    /// console, or a later save is there.
    pub(super) async fn save(
        &self,
        shard: &str,
        sequence: Option<&str>,
        finished: bool,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut update =
            String::from("SET lease_until_ms = :until, finished = :f, expires_at = :exp");
        let mut condition =
            String::from("#o = :me AND (attribute_not_exists(finished) OR finished = :no)");
        let mut req = self
            .update(shard)
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":me", s(&self.owner))
            .expression_attribute_values(":no", AttributeValue::Bool(false))
            .expression_attribute_values(":until", n(now + self.lease.as_millis() as i64))
            .expression_attribute_values(":f", AttributeValue::Bool(finished))
            .expression_attribute_values(":exp", n(keep_until()));
        if let Some(seq) = sequence {
            // Sequence numbers are decimal strings of any length: padded, they compare.
            update.push_str(", #sq = :seq, sequence_order = :order");
            condition.push_str(
                " AND (attribute_not_exists(sequence_order) OR sequence_order <= :order)",
            );
            req = req
                .expression_attribute_names("#sq", "sequence")
                .expression_attribute_values(":seq", s(seq))
                .expression_attribute_values(":order", s(format!("{seq:0>48}")));
        }
        let mut req = req.condition_expression(condition);
        if finished {
            update.push_str(", finished_at = :at");
            req = req.expression_attribute_values(":at", n(now));
        }
        let req = req.update_expression(update);
        item::update_if(req).await
    }

    /// Gives up the leases on `shards` (a clean shutdown hands shards on at once).
    pub(super) async fn release(&self, shards: &[String]) -> Result<(), StoreError> {
        for shard in shards {
            let result = self
                .held(shard)
                .update_expression("SET lease_until_ms = :zero")
                .expression_attribute_values(":zero", n(0))
                .send()
                .await;
            if let Err(e) = result {
                match e.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(_) => {}
                    other => return Err(StoreError::service("UpdateItem", &other)),
                }
            }
        }
        Ok(())
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

fn keep_until() -> i64 {
    (Utc::now() + Duration::days(KEEP_DAYS)).timestamp()
}
