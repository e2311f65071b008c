//! The outbox (docs/events.md, "The outbox"): side effects on the sparse `outbox-index` of
//! Table A. An action is in exactly one group while it has not ended — `due` (queued,
//! waiting to retry, or in flight until its claim runs out), `held` or `dead` — and a
//! delivered one stays in `delivered` until it expires, a discarded one in `discarded`;
//! each group is spread over [`SHARDS`] index partitions by conversation, so no single
//! partition takes every write. Every move is one conditional write (with its audit
//! record, in one transaction): two consoles never both move one action.
//!
//! The due group takes every delivery's writes, so it has an index of its own,
//! `due-index`: [`DUE_SHARDS`] partitions, each copy without the message and the attempts
//! (one write unit). This release reads the due group on both indexes and writes it where
//! `events.due_index` says ([`Store::writes_due_index`]): off, on `outbox-index` as the
//! release before does; on, once every console runs this release, on `due-index`.

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};

use super::{ActionRecord, ActionStatus, Try, MAX_TRIES_KEPT};
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{n, s};
use crate::server::store::schema::MW_IDEMPOTENCY;
use crate::server::store::{Store, StoreError};

/// Index partitions per group on `outbox-index`.
pub const SHARDS: u32 = 8;

/// Partitions of the due group on `due-index`. A delivery writes five units to its
/// partition as AWS bills them: its copy put in the decision's transaction (1, twice),
/// changed in place by the claim (1), removed in the attempt's transaction (1, twice).
/// 20,000 deliveries a second (10,000 events with two side effects each) are 100,000 units,
/// about 780 a partition against AWS's 1,000.
pub const DUE_SHARDS: u32 = 128;

/// One partition of a group: on `outbox-index` (every group), or on `due-index` (the due
/// group only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    Outbox(u32),
    Due(u32),
}

impl Part {
    /// Every partition `group` is read on: the due group's on both indexes.
    pub fn all(group: Group) -> Vec<Part> {
        let mut parts: Vec<Part> = (0..SHARDS).map(Part::Outbox).collect();
        if group == Group::Due {
            parts.extend((0..DUE_SHARDS).map(Part::Due));
        }
        parts
    }

    /// The partitions one conversation's actions of `group` are in.
    pub fn of_conversation(group: Group, conversation_id: &str) -> Vec<Part> {
        let mut parts = vec![Part::Outbox(shard_of(conversation_id))];
        if group == Group::Due {
            parts.push(Part::Due(due_shard_of(conversation_id)));
        }
        parts
    }

    /// A number for a merged page's bookkeeping, unique among a group's partitions.
    pub fn id(self) -> u32 {
        match self {
            Part::Outbox(n) => n,
            Part::Due(n) => SHARDS + n,
        }
    }
}

/// Where an action waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Queued, waiting to retry, or in flight.
    Due,
    Held,
    Dead,
    /// Taken by the receiver: kept, newest first, until the record expires.
    Delivered,
    /// Discarded by an operator: kept until the record expires, for a resend.
    Discarded,
}

impl Group {
    pub const fn as_str(self) -> &'static str {
        match self {
            Group::Due => "due",
            Group::Held => "held",
            Group::Dead => "dead",
            Group::Delivered => "delivered",
            Group::Discarded => "discarded",
        }
    }

    /// The index partition of `shard`.
    pub fn partition(self, shard: u32) -> String {
        format!("{}#{shard:02}", self.as_str())
    }
}

/// The shard of a conversation: all its actions wait in one partition per group.
pub fn shard_of(conversation_id: &str) -> u32 {
    // FNV-1a: stable across builds and platforms (the shard is stored).
    let h = conversation_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    (h % u64::from(SHARDS)) as u32
}

/// The shard of a conversation's due actions on `due-index`.
pub fn due_shard_of(conversation_id: &str) -> u32 {
    crate::server::store::fanout::shard_of(conversation_id, DUE_SHARDS)
}

/// Where an action entering the due group goes: the attribute naming its partition (on the
/// index [`Store::writes_due_index`] chooses), that partition, and the attribute of the
/// other index, which it leaves.
pub fn due_place(store: &Store, conversation_id: &str) -> (&'static str, String, &'static str) {
    if store.writes_due_index() {
        (
            "due",
            Group::Due.partition(due_shard_of(conversation_id)),
            "outbox",
        )
    } else {
        (
            "outbox",
            Group::Due.partition(shard_of(conversation_id)),
            "due",
        )
    }
}

/// Puts a new action in the due group at `outbox_sk` (see [`due_place`]).
pub fn enter_due(store: &Store, rec: &mut ActionRecord) {
    let (attr, partition, _) = due_place(store, &rec.conversation_id);
    if attr == "due" {
        (rec.due, rec.outbox) = (Some(partition), None);
    } else {
        (rec.outbox, rec.due) = (Some(partition), None);
    }
}

/// `<ms, 13 digits>#<key>`: sorts by time within a partition.
pub fn sort_key(ms: i64, key: &str) -> String {
    format!("{:013}#{key}", ms.max(0))
}

/// An action's sort key in the due group: `<ms>#<key>` for `default`'s, and
/// `<receiver>#<ms>#<key>` for a named receiver's (routed when it was queued). Each
/// receiver's due actions are a range of their own that its rounds read; a name starts with
/// a letter, which sorts after every digit, so `default`'s range is what it always was.
pub fn due_key(receiver: Option<&str>, ms: i64, key: &str) -> String {
    match receiver {
        Some(r) => format!("{r}#{}", sort_key(ms, key)),
        None => sort_key(ms, key),
    }
}

/// A transaction part writing a new action into the outbox. Its key derives from an event
/// recorded in the same transaction, so a record already under it is a previous life of the
/// same event (its key expired, and the helpdesk sent it again): one that expired (TTL
/// deletes late) or ended is replaced; one still on its way is not.
pub(crate) fn put_new(store: &Store, rec: &ActionRecord, now_s: i64) -> Result<Put, StoreError> {
    use ActionStatus::*;
    let table = store.table(MW_IDEMPOTENCY.base);
    let item = serde_dynamo::to_item(rec).map_err(|e| StoreError::corrupt(&table, e))?;
    Put::builder()
        .table_name(&table)
        .set_item(Some(item))
        .condition_expression(
            "attribute_not_exists(event_id) OR expires_at <= :now \
             OR #st IN (:delivered, :dead, :discarded, :rejected)",
        )
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":now", n(now_s))
        .expression_attribute_values(":delivered", s(Delivered.as_str()))
        .expression_attribute_values(":dead", s(Dead.as_str()))
        .expression_attribute_values(":discarded", s(Discarded.as_str()))
        .expression_attribute_values(":rejected", s(Rejected.as_str()))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))
}

/// Claims an action for one delivery attempt to `receiver` (`None`: `default`): it must be
/// routed there, and due (queued or waiting to retry, its time come) or in flight with its
/// claim run out (its console is gone: taken over, and sent again with the same
/// `webhook-id`). `None`: it is not (any more).
///
/// On `outbox-index` (`rec.due` absent) its key moves to the lease's end, out of the due
/// range until then: a removal and a put of the copy. On `due-index` it keeps its key and
/// the copy is changed in place (one unit): the dispatcher's reads there leave out what
/// is in flight by its lease (`outbox_reads::due`).
pub async fn claim(
    store: &Store,
    rec: &ActionRecord,
    receiver: Option<&str>,
    nonce: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<Option<ActionRecord>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let lease = now_ms + lease_ms;
    let key = rec.event_id.as_str();
    let moves_key = if rec.due.is_some() {
        ""
    } else {
        ", outbox_sk = :sk"
    };
    let req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("event_id", s(key))
        .update_expression(format!(
            "SET #st = :claimed, claim_nonce = :nonce, lease_until_ms = :lease, \
             next_at_ms = :lease{moves_key} ADD attempts :one"
        ))
        .condition_expression(format!(
            "((#st IN (:queued, :retry) AND next_at_ms <= :now) \
             OR (#st = :claimed AND lease_until_ms < :now)) AND {} AND {}",
            // Only the receiver it was routed to: a console of the release before, which
            // knew no receivers, may have put it in `default`'s range.
            if receiver.is_some() {
                "#rcv = :rcv"
            } else {
                "attribute_not_exists(#rcv)"
            },
            // Still on the index it was read from (a copy read late, of an action another
            // console has since moved to the other, is refused: it is read there next).
            if moves_key.is_empty() {
                "attribute_exists(due)"
            } else {
                "attribute_not_exists(due)"
            }
        ))
        .expression_attribute_names("#st", "status")
        .expression_attribute_names("#rcv", "receiver")
        .expression_attribute_values(":claimed", s(ActionStatus::Claimed.as_str()))
        .expression_attribute_values(":queued", s(ActionStatus::Queued.as_str()))
        .expression_attribute_values(":retry", s(ActionStatus::Retry.as_str()))
        .expression_attribute_values(":nonce", s(nonce))
        .expression_attribute_values(":lease", n(lease))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":one", n(1))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    let req = match receiver {
        Some(r) => req.expression_attribute_values(":rcv", s(r)),
        None => req,
    };
    let req = if moves_key.is_empty() {
        req
    } else {
        req.expression_attribute_values(":sk", s(due_key(receiver, lease, key)))
    };
    super::claims::sent_under_nonce(req, &table, nonce).await
}

/// How one attempt ended, recorded under the claim that made it.
pub struct Ending<'a> {
    pub rec: &'a ActionRecord,
    pub status: ActionStatus,
    pub result: &'a str,
    pub cause: Option<&'a str>,
    pub unknown: bool,
    /// Retry: when the next attempt may go.
    pub next_at_ms: i64,
    /// Retry: the attempt does not count in the retry schedule (a breaker's probe).
    pub unspent: bool,
    pub now_ms: i64,
    pub now_iso: &'a str,
    pub this_try: Try,
}

/// The attempts to keep: the claimed copy's, then this one, at most [`MAX_TRIES_KEPT`].
fn tries_after(rec: &ActionRecord, this: Try) -> Vec<Try> {
    let mut all = rec.tries.clone();
    all.push(this);
    let skip = all.len().saturating_sub(MAX_TRIES_KEPT);
    all.split_off(skip)
}

fn tries_value(tries: &[Try], table: &str) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(tries).map_err(|e| StoreError::corrupt(table, e))
}

/// Records an attempt's end with its audit record. False: the claim was lost (another
/// console took the action over; what it records stands).
pub async fn finish(
    store: &Store,
    end: &Ending<'_>,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let rec = end.rec;
    let shard = shard_of(&rec.conversation_id);
    let tries = tries_value(&tries_after(rec, end.this_try.clone()), &table)?;
    let mut update = Update::builder()
        .table_name(&table)
        .key("event_id", s(&rec.event_id))
        .condition_expression("claim_nonce = :nonce AND #st = :claimed")
        .expression_attribute_names("#st", "status")
        .expression_attribute_names("#r", "result")
        .expression_attribute_names("#unknown", "unknown")
        .expression_attribute_values(":nonce", s(&rec.claim_nonce))
        .expression_attribute_values(":claimed", s(ActionStatus::Claimed.as_str()))
        .expression_attribute_values(":st", s(end.status.as_str()))
        .expression_attribute_values(":r", s(end.result))
        .expression_attribute_values(":now", s(end.now_iso))
        .expression_attribute_values(":tries", tries)
        .expression_attribute_values(":unknown", AttributeValue::Bool(end.unknown))
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":round", n(rec.round_start + i64::from(end.unspent)));
    let common = "#st = :st, #r = :r, updated_at = :now, tries = :tries, #unknown = :unknown, \
                  lease_until_ms = :zero, round_start = :round";
    let cause = end.cause.map(s).unwrap_or(AttributeValue::Null(true));
    let retry_sk = due_key(rec.receiver.as_deref(), end.next_at_ms, &rec.event_id);
    update = match end.status {
        ActionStatus::Retry => {
            let (attr, partition, other) = due_place(store, &rec.conversation_id);
            update
                .update_expression(format!(
                    "SET {common}, next_at_ms = :next, {attr} = :o, outbox_sk = :sk, cause = :c \
                     REMOVE {other}"
                ))
                .expression_attribute_values(":next", n(end.next_at_ms))
                .expression_attribute_values(":o", s(partition))
                .expression_attribute_values(":sk", s(retry_sk))
                .expression_attribute_values(":c", cause)
        }
        ActionStatus::Dead => update
            .update_expression(format!(
                "SET {common}, outbox = :o, outbox_sk = :sk, cause = :c REMOVE due"
            ))
            .expression_attribute_values(":o", s(Group::Dead.partition(shard)))
            .expression_attribute_values(":sk", s(sort_key(end.now_ms, &rec.event_id)))
            .expression_attribute_values(":c", cause),
        ActionStatus::Delivered => update
            .update_expression(format!(
                "SET {common}, outbox = :o, outbox_sk = :sk REMOVE cause, due"
            ))
            .expression_attribute_values(":o", s(Group::Delivered.partition(shard)))
            .expression_attribute_values(":sk", s(sort_key(end.now_ms, &rec.event_id))),
        _ => update.update_expression(format!("SET {common} REMOVE outbox, outbox_sk, cause, due")),
    };
    let update = update.build().map_err(|e| StoreError::corrupt(&table, e))?;
    let write = TransactWriteItem::builder().update(update).build();
    // Refused by the audit record alone (its id is this attempt's): this very end was
    // recorded before and only its answer was lost.
    audit::with_record(store, write, audit_record).await
}

/// An operator's (or safe mode's) move of one action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// Due → held (safe mode is on, or an operator holds it).
    Hold,
    /// Held → due, at once.
    Release,
    /// Held or dead → discarded: it will not be sent (unless a resend names it).
    Discard,
    /// Dead → due, at once, with a new round of the retry schedule.
    Redrive,
    /// Delivered, dead or discarded → due, at once, with a new round (docs/events.md,
    /// "Resend a time window"): sent again under its own `webhook-id`, once per resend job.
    Resend,
}

impl Move {
    /// The statuses it moves from, and the one it moves to.
    fn statuses(self) -> (&'static [ActionStatus], ActionStatus) {
        use ActionStatus::*;
        match self {
            Move::Hold => (&[Queued, Retry, Claimed], Held),
            Move::Release => (&[Held], Queued),
            Move::Discard => (&[Held, Dead], Discarded),
            Move::Redrive => (&[Dead], Queued),
            Move::Resend => (&[Delivered, Dead, Discarded], Queued),
        }
    }
}

/// Moves `rec` if it is still where it was read (status and attempts unchanged, and not in
/// flight with a live claim), with its audit record. False: it had moved meanwhile (or,
/// for a resend, the job `by` resent it already).
pub async fn apply_move(
    store: &Store,
    rec: &ActionRecord,
    mv: Move,
    reason: &str,
    by: &str,
    now_ms: i64,
    audit_record: &AuditItem,
) -> Result<bool, StoreError> {
    let Some(write) = move_write(store, rec, mv, reason, by, now_ms)? else {
        return Ok(false);
    };
    // The audit alone refused: this very move was made and its answer lost.
    audit::with_record(store, write, audit_record).await
}

/// The conditional write of [`apply_move`], for a caller that commits it with other
/// writes (a job counts each move in the move's own transaction). None: `rec`'s status is
/// not one `mv` moves from.
pub(super) fn move_write(
    store: &Store,
    rec: &ActionRecord,
    mv: Move,
    reason: &str,
    by: &str,
    now_ms: i64,
) -> Result<Option<TransactWriteItem>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let (from, to) = mv.statuses();
    if !from.contains(&rec.status) {
        return Ok(None);
    }
    let now_iso = chrono::DateTime::from_timestamp_millis(now_ms)
        .map(crate::server::clock::iso)
        .unwrap_or_default();
    // Unchanged since it was read; an in-flight one only once its claim ran out; a resend
    // once per job, whatever the index shows.
    let unchanged =
        "#st = :was AND attempts = :attempts AND (#st <> :claimed OR lease_until_ms < :nowms)";
    let condition = match mv {
        Move::Resend => {
            format!("{unchanged} AND (attribute_not_exists(resend_job) OR resend_job <> :job)")
        }
        _ => unchanged.to_string(),
    };
    let update = Update::builder()
        .table_name(&table)
        .key("event_id", s(&rec.event_id))
        .condition_expression(condition)
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":was", s(rec.status.as_str()))
        .expression_attribute_values(":attempts", n(rec.attempts))
        .expression_attribute_values(":claimed", s(ActionStatus::Claimed.as_str()))
        .expression_attribute_values(":nowms", n(now_ms))
        .expression_attribute_values(":st", s(to.as_str()))
        .expression_attribute_values(":now", s(&now_iso));
    let update = match mv {
        Move::Resend => update.expression_attribute_values(":job", s(by)),
        _ => update,
    };
    let update = move_to(store, update, rec, mv, reason, now_ms);
    let update = update.build().map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(Some(TransactWriteItem::builder().update(update).build()))
}

/// What `mv` sets: the status, the group it enters (and where in it), and what it clears.
fn move_to(
    store: &Store,
    update: aws_sdk_dynamodb::types::builders::UpdateBuilder,
    rec: &ActionRecord,
    mv: Move,
    reason: &str,
    now_ms: i64,
) -> aws_sdk_dynamodb::types::builders::UpdateBuilder {
    let shard = shard_of(&rec.conversation_id);
    let (attr, partition, other) = match mv {
        Move::Hold => ("outbox", Group::Held.partition(shard), "due"),
        Move::Discard => ("outbox", Group::Discarded.partition(shard), "due"),
        Move::Release | Move::Redrive | Move::Resend => due_place(store, &rec.conversation_id),
    };
    let set = match mv {
        Move::Hold => format!("held_reason = :why, {attr} = :o, outbox_sk = :sk REMOVE {other}"),
        Move::Release | Move::Redrive => format!(
            "next_at_ms = :nowms, {attr} = :o, outbox_sk = :sk, round_start = :round \
             REMOVE held_reason, {other}"
        ),
        Move::Resend => format!(
            "next_at_ms = :nowms, {attr} = :o, outbox_sk = :sk, round_start = attempts, \
             resend_job = :job REMOVE held_reason, cause, {other}"
        ),
        Move::Discard => format!("{attr} = :o, outbox_sk = :sk REMOVE {other}"),
    };
    let sk = match mv {
        Move::Release | Move::Redrive | Move::Resend => {
            due_key(rec.receiver.as_deref(), now_ms, &rec.event_id)
        }
        Move::Hold | Move::Discard => sort_key(now_ms, &rec.event_id),
    };
    let update = update
        .update_expression(format!("SET #st = :st, updated_at = :now, {set}"))
        .expression_attribute_values(":o", s(partition))
        .expression_attribute_values(":sk", s(sk));
    match mv {
        Move::Hold => update.expression_attribute_values(":why", s(reason)),
        Move::Release | Move::Redrive => update.expression_attribute_values(
            ":round",
            n(if mv == Move::Redrive {
                rec.attempts
            } else {
                rec.round_start
            }),
        ),
        Move::Resend | Move::Discard => update,
    }
}
