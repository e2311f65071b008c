//! What operators see and do on the Outbox page (docs/events.md, "Redrive and discard"):
//! the groups and their counts, each action's attempts, and moves — one action at a time,
//! or a bulk job over a filter (a count first, a reason always, progress as it runs), every
//! move audited.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::ingest::{iso, short, Events};
use super::views::masked_in;
use crate::model::outbox::{JobView, OutboxCounts, OutboxPage, OutboxRow, TryRow};
use crate::model::AppError;
use crate::server::domain::conversations::reference::Refs;
use crate::server::domain::redact;
use crate::server::ids::random_hex;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::jobs::{self, JobOp, JobRecord, JobStatus, Progress};
use crate::server::store::events::outbox::{self, Group, Move, SHARDS};
use crate::server::store::events::outbox_reads::{self, Filter};
use crate::server::store::events::{self as records, ActionRecord, ActionStatus, RecordKind};
use crate::server::store::items::Claim;
use crate::server::store::StoreError;

const PAGE: usize = 25;
/// Actions one job moves per round before it saves its progress.
const JOB_PAGE: usize = 50;

/// An operator's bulk request.
pub struct BulkRequest {
    pub op: JobOp,
    pub filter: Filter,
    pub reason: String,
    pub actor: String,
    /// The form's key: starting twice (a double click) starts one job.
    pub form_key: String,
}

impl JobOp {
    /// The group it works on, and the move it makes.
    fn group_and_move(self, group: Group) -> Result<(Group, Move), AppError> {
        match (self, group) {
            (JobOp::Redrive, Group::Dead) => Ok((Group::Dead, Move::Redrive)),
            (JobOp::Release, Group::Held) => Ok((Group::Held, Move::Release)),
            (JobOp::Discard, Group::Held | Group::Dead) => Ok((group, Move::Discard)),
            _ => Err(AppError::invalid(
                "op",
                "Redrive takes dead letters; release takes held ones; discard takes either.",
            )),
        }
    }
}

/// The operation a form names.
pub fn job_op(name: &str) -> Result<JobOp, AppError> {
    match name.trim() {
        "redrive" => Ok(JobOp::Redrive),
        "release" => Ok(JobOp::Release),
        "discard" => Ok(JobOp::Discard),
        _ => Err(AppError::invalid(
            "op",
            "The operation is redrive, release or discard.",
        )),
    }
}

/// The group a page or a job names.
pub fn group_named(name: &str) -> Result<Group, AppError> {
    match name {
        "" | "due" => Ok(Group::Due),
        "held" => Ok(Group::Held),
        "dead" => Ok(Group::Dead),
        _ => Err(AppError::invalid(
            "group",
            "The group is due, held or dead.",
        )),
    }
}

fn row(a: ActionRecord, refs: &Refs) -> OutboxRow {
    let next_try = matches!(a.status, ActionStatus::Queued | ActionStatus::Retry)
        .then(|| DateTime::from_timestamp_millis(a.next_at_ms).map(iso))
        .flatten();
    OutboxRow {
        key: masked_in(&a.event_id, &a.conversation_id),
        key_ref: refs.encode("action", &a.event_id),
        action_type: a.action_type.as_str().to_string(),
        target: a.target,
        conversation_ref: refs.of_id(&a.conversation_id),
        conversation_id: redact::conversation_id(&a.conversation_id),
        status: a.status.as_str().to_string(),
        attempts: a.attempts,
        result: a.result.unwrap_or_default(),
        cause: a.cause,
        unknown: a.unknown,
        next_try,
        held_reason: a.held_reason,
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

fn job_view(j: JobRecord) -> JobView {
    JobView {
        id: j.event_id.trim_start_matches("job:").to_string(),
        op: j.op.as_str().to_string(),
        group: j.group,
        cause: j.cause,
        action_type: j.action_type,
        reason: j.reason,
        actor: j.actor,
        total: j.total,
        done: j.done,
        skipped: j.skipped,
        running: j.status == JobStatus::Running,
        created_at: j.created_at,
    }
}

impl Events {
    /// The page: counts, dead letters by cause, one group's list, the jobs, the receiver.
    pub async fn outbox_page(
        &self,
        group: &str,
        filter: Filter,
        cursor: Option<&str>,
        refs: &Refs,
    ) -> Result<OutboxPage, AppError> {
        let g = group_named(group)?;
        let (rows, next) = outbox_reads::list(&self.store, g, &filter, cursor, PAGE).await?;
        Ok(OutboxPage {
            counts: self.outbox_counts().await?,
            dead_by_cause: outbox_reads::dead_by_cause(&self.store, 500)
                .await?
                .into_iter()
                .collect(),
            group: g.as_str().to_string(),
            cause: filter.cause.unwrap_or_default(),
            rows: rows.into_iter().map(|a| row(a, refs)).collect(),
            next,
            jobs: jobs::recent(&self.store, 10)
                .await?
                .into_iter()
                .map(job_view)
                .collect(),
            safe_mode: self.live_switches().await?.safe_mode,
            receiver: self.receiver().await?,
            form_key: random_hex(16),
        })
    }

    /// How many side effects are where.
    pub async fn outbox_counts(&self) -> Result<OutboxCounts, StoreError> {
        let by_status = |s: ActionStatus| Filter {
            status: Some(s.as_str().to_string()),
            ..Filter::default()
        };
        let store = &self.store;
        Ok(OutboxCounts {
            queued: outbox_reads::count(store, Group::Due, &by_status(ActionStatus::Queued))
                .await?,
            in_flight: outbox_reads::count(store, Group::Due, &by_status(ActionStatus::Claimed))
                .await?,
            retrying: outbox_reads::count(store, Group::Due, &by_status(ActionStatus::Retry))
                .await?,
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
        let key = refs
            .decode(key_ref)
            .filter(|(kind, _)| kind == "action")
            .map(|(_, key)| key)
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
        let reason = redact::redact(reason);
        Ok(self
            .operator_move(&rec, mv, &reason, actor, form_key)
            .await?)
    }

    async fn operator_move(
        &self,
        rec: &ActionRecord,
        mv: Move,
        reason: &str,
        actor: &str,
        by: &str,
    ) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let step = format!("{mv:?}").to_ascii_lowercase();
        let mut audit = self.outbox_audit(rec, &step, &short(by)[..8], now);
        audit.action_type = format!("outbox_{step}");
        audit.actor = actor.to_string();
        audit.result = format!("success: {step}");
        audit.action_payload_redacted = json!({"reason": reason, "by": short(by)}).to_string();
        let moved = outbox::apply_move(
            &self.store,
            rec,
            mv,
            reason,
            now.timestamp_millis(),
            &iso(now),
            &audit,
        )
        .await?;
        if moved && matches!(mv, Move::Release | Move::Redrive) {
            self.kick.notify_one();
        }
        Ok(moved)
    }

    /// Starts a bulk job; a second start from the same form finds the first.
    pub async fn start_bulk(&self, group: &str, req: BulkRequest) -> Result<JobView, AppError> {
        let (g, _) = req.op.group_and_move(group_named(group)?)?;
        let reason = redact::redact(req.reason.trim());
        if reason.is_empty() {
            return Err(AppError::invalid("reason", "Say why."));
        }
        let now = self.clock.now();
        let total = outbox_reads::count(&self.store, g, &req.filter).await? as i64;
        // One job per form and operation: a double click finds the first.
        let key = JobRecord::key(&short(&format!(
            "{}|{}|{}|{:?}",
            req.form_key,
            req.op.as_str(),
            g.as_str(),
            req.filter.cause
        )));
        let (outbox, outbox_sk) = JobRecord::listed(&iso(now), &key);
        let job = JobRecord {
            event_id: key,
            kind: RecordKind::Job,
            op: req.op,
            group: g.as_str().to_string(),
            cause: req.filter.cause.clone(),
            action_type: req.filter.action_type.clone(),
            reason,
            actor: req.actor.clone(),
            total,
            done: 0,
            skipped: 0,
            status: JobStatus::Running,
            claim_nonce: String::new(),
            lease_until_ms: 0,
            created_at: iso(now),
            updated_at: iso(now),
            outbox,
            outbox_sk,
            expires_at: (now + chrono::Duration::days(self.config.events.outbox_days)).timestamp(),
        };
        let audit = self.job_audit(&job, now);
        let job = match jobs::create(&self.store, &job, &audit, now.timestamp()).await? {
            Claim::Won => {
                tracing::info!(actor = %job.actor, op = job.op.as_str(), total, "outbox job started");
                self.kick.notify_one();
                job
            }
            Claim::Exists(first) => *first,
        };
        Ok(job_view(job))
    }

    fn job_audit(&self, job: &JobRecord, now: DateTime<Utc>) -> AuditItem {
        let mut a = AuditItem::new(
            "system#outbox",
            &format!("outbox_{}", job.op.as_str()),
            now,
            &job.event_id,
            self.config.ttl.audit_days,
        );
        a.actor = job.actor.clone();
        a.result = format!("started: {} matching", job.total);
        a.action_payload_redacted = json!({
            "group": job.group,
            "cause": job.cause,
            "action_type": job.action_type,
            "reason": job.reason,
        })
        .to_string();
        a
    }

    /// Works on every running job this console can take: one page each.
    pub async fn run_jobs(&self) -> Result<(), StoreError> {
        for listed in jobs::running(&self.store).await? {
            let now_ms = self.clock.now().timestamp_millis();
            if !jobs::take(
                &self.store,
                &listed.event_id,
                &self.owner,
                now_ms,
                self.lease_ms(),
            )
            .await?
            {
                continue;
            }
            // Its counts as stored now (the index read may lag).
            if let Some(job) = jobs::get(&self.store, &listed.event_id).await? {
                self.job_page(&job).await?;
            }
        }
        Ok(())
    }

    /// Moves up to [`JOB_PAGE`] actions of a job and saves its progress; a pass that finds
    /// nothing left finishes it.
    async fn job_page(&self, job: &JobRecord) -> Result<(), StoreError> {
        let group = group_named(&job.group).unwrap_or(Group::Dead);
        let Ok((_, mv)) = job.op.group_and_move(group) else {
            return Ok(());
        };
        let filter = Filter {
            cause: job.cause.clone(),
            action_type: job.action_type.clone(),
            status: None,
        };
        // What was in the group when the job began, and only that.
        let began = DateTime::parse_from_rfc3339(&job.created_at)
            .map_or(i64::MAX, |t| t.timestamp_millis() + 1);
        // Jobs move held ones and dead letters only: never one in flight.
        let (mut moved, mut skipped, mut seen) = (0i64, 0i64, 0usize);
        for shard in 0..SHARDS {
            if seen >= JOB_PAGE {
                break;
            }
            let batch = outbox_reads::list_shard(
                &self.store,
                group,
                shard,
                &filter,
                JOB_PAGE - seen,
                began,
            )
            .await?;
            seen += batch.len();
            for rec in batch {
                if self
                    .operator_move(&rec, mv, &job.reason, &job.actor, &job.event_id)
                    .await?
                {
                    moved += 1;
                } else {
                    skipped += 1;
                }
            }
        }
        let p = Progress {
            key: &job.event_id,
            nonce: &self.owner,
            was: (job.done, job.skipped),
            now: (job.done + moved, job.skipped + skipped),
            finished: seen == 0,
            now_iso: &iso(self.clock.now()),
        };
        jobs::progress(&self.store, &p).await?;
        Ok(())
    }

    /// A job as it stands (the page follows its progress).
    pub async fn job(&self, id: &str) -> Result<JobView, AppError> {
        let job = jobs::get(&self.store, &JobRecord::key(id))
            .await?
            .ok_or(AppError::NotFound)?;
        Ok(job_view(job))
    }
}
