//! A bulk job's moves (docs/events.md, "Redrive and discard"): each one action's move,
//! its audit record and `ADD done 1` on the job, in one transaction conditioned on the
//! job's lease, so `done` is what the job moved whatever becomes of the page's progress
//! write, and a console whose lease ran out moves nothing.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::jobs::Lease;
use super::outbox::{self, Move};
use super::ActionRecord;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{n, s};
use crate::server::store::schema::MW_IDEMPOTENCY;
use crate::server::store::{tx, Store, StoreError};

/// How one move of a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// Moved, and counted in the job's `done` by the same transaction.
    Moved,
    /// It had moved meanwhile (or this job had resent it already): nothing written.
    Skipped,
    /// The job is no longer this console's (its lease ran out and another console took
    /// it, or it finished): nothing written, and the page stops.
    NotMine,
}

/// Moves `rec` for the job under `lease`, and counts it in the job's `done` in the same
/// transaction: a move is counted exactly when it is made, whether or not the page's
/// progress write that follows is ever made (the console may die first), and only while
/// this console holds the job.
pub async fn counted_move(
    store: &Store,
    rec: &ActionRecord,
    mv: Move,
    reason: &str,
    now_ms: i64,
    audit_record: &AuditItem,
    lease: Lease<'_>,
) -> Result<Moved, StoreError> {
    let Some(write) = outbox::move_write(store, rec, mv, reason, lease.key, now_ms)? else {
        return Ok(Moved::Skipped);
    };
    let table = store.table(MW_IDEMPOTENCY.base);
    let count = Update::builder()
        .table_name(&table)
        .key("event_id", s(lease.key))
        .update_expression("ADD #done :one")
        .condition_expression("claim_nonce = :me AND #st = :running")
        .expression_attribute_names("#done", "done")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":me", s(lease.nonce))
        .expression_attribute_values(":running", s("running"))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    let actions = vec![
        write,
        audit::write_once(store, audit_record)?,
        TransactWriteItem::builder().update(count).build(),
    ];
    let outcome = tx::transact(store, actions).await?;
    // Refused by the audit record (its id is this attempt's: the moment, the action, the
    // job): this very move was made and its answer lost (retried under a new token,
    // DynamoDB reports the action's condition failing too, and the job's once another
    // console took it), and it was counted then. Else refused by the job: no longer this
    // console's, whatever the action's state.
    Ok(if outcome.refused_at(1).is_some() {
        Moved::Moved
    } else if outcome.refused_at(2).is_some() {
        Moved::NotMine
    } else if outcome.refused_at(0).is_some() {
        Moved::Skipped
    } else {
        Moved::Moved
    })
}
