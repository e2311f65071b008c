//! What operators see and do on the Outbox page (docs/events.md, "Redrive and discard"):
//! the groups and their counts, each action's attempts, and moves — one action at a time,
//! or a bulk job over a filter (a count first, a reason always, progress as it runs), every
//! move audited.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::ingest::{iso, short, Events};
use super::jobs::job_view;
pub use super::jobs::{group_named, job_op, BulkRequest};
use super::pages::{masked_in, page_conversation};
use crate::model::outbox::{
    ConversationFilter, OutboxCounts, OutboxRow, OutboxView, ReceiverName, TryRow,
};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::ids::random_hex;
use crate::server::services::conversations::reference::Refs;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::job_moves::{self, Moved};
use crate::server::store::events::jobs::{self, JobOp, JobRecord, Lease};
use crate::server::store::events::outbox::{self, Group, Move};
use crate::server::store::events::outbox_counts;
use crate::server::store::events::outbox_reads::{self, Filter};
use crate::server::store::events::{self as records, ActionRecord, ActionStatus};
use crate::server::store::StoreError;

const PAGE: usize = 25;

/// A side effect's status in words, as the Outbox's list says it.
fn status_words(a: &ActionRecord) -> String {
    let or_none = |s: &Option<String>| s.clone().unwrap_or_default();
    match a.status {
        ActionStatus::Claimed => "in flight".into(),
        ActionStatus::Retry if a.unknown => "no answer: sent again with the same webhook-id".into(),
        ActionStatus::Retry => "retrying".into(),
        ActionStatus::Held => format!("held ({})", or_none(&a.held_reason).replace('_', " ")),
        ActionStatus::Dead => format!("dead letter ({})", or_none(&a.cause)),
        ActionStatus::Delivered => "delivered: the receiver took it".into(),
        other => other.as_str().to_string(),
    }
}

fn row(a: ActionRecord, refs: &Refs) -> OutboxRow {
    let next_try = matches!(a.status, ActionStatus::Queued | ActionStatus::Retry)
        .then(|| DateTime::from_timestamp_millis(a.next_at_ms).map(iso))
        .flatten();
    let status_words = status_words(&a);
    OutboxRow {
        key: masked_in(&a.event_id, &a.conversation_id),
        key_ref: refs.action(&a.event_id),
        action_type: a.action_type.as_str().to_string(),
        target: a.target,
        to_receiver: a
            .receiver
            .as_deref()
            .map(|r| format!(" · to {r}"))
            .unwrap_or_default(),
        conversation_ref: refs.of_id(&a.conversation_id),
        conversation_id: redact::conversation_id(&a.conversation_id),
        status: a.status.as_str().to_string(),
        status_words,
        attempts: a.attempts,
        result: a.result.unwrap_or_default(),
        next_try,
        created_at: a.created_at,
        tries: a
            .tries
            .into_iter()
            .map(|t| TryRow {
                n: t.n,
                at: t.at,
                ms: t.ms,
                result: t.result,
            })
            .collect(),
    }
}

impl Events {
    /// An audit record of one outbox step of `rec`; `step` and `suffix` tell steps apart.
    pub(super) fn outbox_audit(
        &self,
        rec: &ActionRecord,
        step: &str,
        suffix: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let id = format!("{}-{step}-{suffix}", short(&rec.event_id));
        let mut a = AuditItem::new(
            &rec.conversation_id,
            rec.action_type.as_str(),
            now,
            &id,
            self.config.ttl.audit_days,
        );
        a.idempotency_key = rec.event_id.clone();
        a.action_payload_redacted = json!({
            "target": rec.target,
            "attempt": rec.attempts,
            "event_key": rec.source_event,
        })
        .to_string();
        a
    }

    /// The page: counts, dead letters by cause, one group's list, the jobs, the receiver.
    pub async fn outbox_page(
        &self,
        group: &str,
        mut filter: Filter,
        conversation: &str,
        cursor: Option<&str>,
        refs: &Refs,
        role: Role,
    ) -> Result<OutboxView, AppError> {
        let g = group_named(group)?;
        filter.conversation_id = page_conversation(refs, conversation)?;
        let (rows, next) = self.rows(g, &filter, cursor, refs).await?;
        Ok(OutboxView {
            counts: self.outbox_counts().await?,
            dead_by_cause: outbox_counts::dead_by_cause(&self.store, 500)
                .await?
                .into_iter()
                .collect(),
            group: g.as_str().to_string(),
            cause: filter.cause.unwrap_or_default(),
            conversation: filter
                .conversation_id
                .as_deref()
                .map(|c| ConversationFilter {
                    reference: refs.of_id(c),
                    shown: redact::conversation_id(c),
                }),
            rows,
            next,
            jobs: jobs::recent(&self.store, 10)
                .await?
                .into_iter()
                .map(job_view)
                .collect(),
            safe_mode: self.live_switches().await?.safe_mode,
            receivers: self.receivers(role).await?,
            form_key: random_hex(16),
        })
    }

    /// One receiver's side effects in one group, a page at a time, as the Outbox lists
    /// them (`/api/v1/receiver/actions`): the group's name (`due` for none), the rows and
    /// the next page's cursor.
    pub async fn receiver_actions(
        &self,
        name: &ReceiverName,
        group: &str,
        cursor: Option<&str>,
        refs: &Refs,
    ) -> Result<(&'static str, Vec<OutboxRow>, Option<String>), AppError> {
        let g = group_named(group)?;
        self.known_receiver(name).await?;
        let own = Filter {
            receiver: Some(name.as_str().to_string()),
            ..Filter::default()
        };
        let (rows, next) = self.rows(g, &own, cursor, refs).await?;
        Ok((g.as_str(), rows, next))
    }

    /// A page of a group's side effects under `filter`, as rows.
    async fn rows(
        &self,
        g: Group,
        filter: &Filter,
        cursor: Option<&str>,
        refs: &Refs,
    ) -> Result<(Vec<OutboxRow>, Option<String>), AppError> {
        let (mut rows, next) = outbox_reads::list(&self.store, g, filter, cursor, PAGE).await?;
        if matches!(g, Group::Delivered | Group::Discarded) {
            // Past its lifetime, such a record is history TTL has not deleted yet.
            let now = self.clock.now().timestamp();
            rows.retain(|a| a.expires_at > now);
        }
        Ok((rows.into_iter().map(|a| row(a, refs)).collect(), next))
    }

    /// How many side effects are where.
    pub async fn outbox_counts(&self) -> Result<OutboxCounts, StoreError> {
        let store = &self.store;
        // The due group's 136 partitions read once for all three.
        let due = outbox_reads::due_by_status(store).await?;
        let of = |s: ActionStatus| due.get(s.as_str()).copied().unwrap_or(0);
        Ok(OutboxCounts {
            queued: of(ActionStatus::Queued),
            in_flight: of(ActionStatus::Claimed),
            retrying: of(ActionStatus::Retry),
            held: outbox_reads::count(store, Group::Held, &Filter::default()).await?,
            dead: outbox_reads::count(store, Group::Dead, &Filter::default()).await?,
        })
    }

    /// How many actions a bulk move would take now.
    pub async fn bulk_count(
        &self,
        op: JobOp,
        group: &str,
        filter: &Filter,
    ) -> Result<u64, AppError> {
        let (g, _) = op.group_and_move(group_named(group)?)?;
        Ok(outbox_reads::count(&self.store, g, filter).await?)
    }

    /// Moves one action (a row's button), if it is still where the operator saw it.
    pub async fn move_one(
        &self,
        key_ref: &str,
        op: JobOp,
        reason: &str,
        actor: &str,
        form_key: &str,
        refs: &Refs,
    ) -> Result<bool, AppError> {
        let reason = crate::model::kill_switches::Reason::parse(reason)?;
        let reason = reason.as_str();
        let key = refs
            .action_id(key_ref)
            .ok_or_else(|| AppError::invalid("action", "No such action."))?;
        let rec = records::get_action(&self.store, &key)
            .await?
            .ok_or(AppError::NotFound)?;
        let group = match rec.status {
            ActionStatus::Held => Group::Held,
            ActionStatus::Dead => Group::Dead,
            _ => {
                return Err(AppError::Conflict(format!(
                    "This action is {} now; only held ones and dead letters can be moved.",
                    rec.status
                )))
            }
        };
        let (_, mv) = op.group_and_move(group)?;
        self.refuse_under_safe_mode(mv).await?;
        let reason = redact::redact(reason);
        Ok(self
            .operator_move(&rec, mv, &reason, actor, form_key)
            .await?)
    }

    /// A release, redrive or resend under safe mode would only be held again at once: refused,
    /// saying so (a 409), rather than answered "done" while nothing goes.
    pub(super) async fn refuse_under_safe_mode(&self, mv: Move) -> Result<(), AppError> {
        if matches!(mv, Move::Release | Move::Redrive | Move::Resend)
            && self.live_switches().await?.safe_mode
        {
            return Err(AppError::Conflict(
                "Safe mode is on: a released, redriven or resent side effect would only be held again. \
                 Turn safe mode off on Kill switches first (or discard it)."
                    .into(),
            ));
        }
        Ok(())
    }

    pub(super) async fn operator_move(
        &self,
        rec: &ActionRecord,
        mv: Move,
        reason: &str,
        actor: &str,
        by: &str,
    ) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let audit = self.move_audit(rec, mv, reason, actor, by, now);
        let ms = now.timestamp_millis();
        let moved = outbox::apply_move(&self.store, rec, mv, reason, by, ms, &audit).await?;
        if moved {
            self.after_move(rec, mv);
        }
        Ok(moved)
    }

    /// A job's move of one action, counted in the job's progress by the move's own
    /// transaction, while this console holds the job's lease.
    pub(super) async fn job_move(
        &self,
        rec: &ActionRecord,
        mv: Move,
        job: &JobRecord,
    ) -> Result<Moved, StoreError> {
        let now = self.clock.now();
        let audit = self.move_audit(rec, mv, &job.reason, &job.actor, &job.event_id, now);
        let lease = Lease {
            key: &job.event_id,
            nonce: &self.owner,
        };
        let ms = now.timestamp_millis();
        let moved =
            job_moves::counted_move(&self.store, rec, mv, &job.reason, ms, &audit, lease).await?;
        if moved == Moved::Moved {
            self.after_move(rec, mv);
        }
        Ok(moved)
    }

    /// The audit record of an operator's (or a job's) move, `by` its form or job.
    fn move_audit(
        &self,
        rec: &ActionRecord,
        mv: Move,
        reason: &str,
        actor: &str,
        by: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let step = format!("{mv:?}").to_ascii_lowercase();
        let mut audit = self.outbox_audit(rec, &step, &short(by)[..8], now);
        audit.action_type = format!("outbox_{step}");
        audit.actor = actor.to_string();
        audit.result = format!("success: {step}");
        audit.action_payload_redacted = json!({"reason": reason, "by": short(by)}).to_string();
        audit
    }

    /// What follows a move that was made: a resend counted, the dispatcher woken for what
    /// is due again.
    fn after_move(&self, rec: &ActionRecord, mv: Move) {
        if mv == Move::Resend {
            let to = rec.receiver.as_deref().unwrap_or(ReceiverName::DEFAULT);
            crate::server::metrics::receiver_resent(to);
        }
        if matches!(mv, Move::Release | Move::Redrive | Move::Resend) {
            let now_ms = self.clock.now().timestamp_millis();
            self.due_parts
                .put(&self.store, &rec.conversation_id, now_ms);
            self.kick.notify_one();
        }
    }
}
