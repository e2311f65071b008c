//! Bulk outbox jobs (docs/events.md, "Redrive and discard"): an operator's move over a
//! filter, started once per form (its id derives from the form key), run a page at a time
//! by whichever console holds its lease: each move counts itself in the job's `done`, and
//! what a page skipped and whether the job finished are saved after the page.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::ingest::{iso, short, Events};
use crate::model::outbox::JobView;
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::store::audit::AuditItem;
use crate::server::store::events::job_moves::Moved;
use crate::server::store::events::jobs::{self, JobOp, JobRecord, JobStatus, Lease, Progress};
use crate::server::store::events::outbox::{Group, Move};
use crate::server::store::events::outbox_reads::{self, Filter};
use crate::server::store::events::RecordKind;
use crate::server::store::item::Claim;
use crate::server::store::StoreError;

/// An operator's bulk request.
pub struct BulkRequest {
    pub op: JobOp,
    pub filter: Filter,
    pub reason: String,
    pub actor: String,
    /// The form's key: starting twice (a double click) starts one job.
    pub form_key: String,
}

impl BulkRequest {
    /// One job per form and operation: a double click finds the first.
    pub(super) fn job_key(&self, g: Group) -> String {
        JobRecord::key(&short(&format!(
            "{}|{}|{}|{:?}|{:?}|{:?}{}",
            self.form_key,
            self.op.as_str(),
            g.as_str(),
            self.filter.cause,
            self.filter.action_type,
            self.filter.window,
            // Absent from jobs of every receiver: their keys are what they always were.
            self.filter
                .receiver
                .as_ref()
                .map(|r| format!("|{r}"))
                .unwrap_or_default(),
        )))
    }
}

impl JobOp {
    /// The group it works on, and the move it makes.
    pub(super) fn group_and_move(self, group: Group) -> Result<(Group, Move), AppError> {
        match (self, group) {
            (JobOp::Redrive, Group::Dead) => Ok((Group::Dead, Move::Redrive)),
            (JobOp::Release, Group::Held) => Ok((Group::Held, Move::Release)),
            (JobOp::Discard, Group::Held | Group::Dead) => Ok((group, Move::Discard)),
            (JobOp::Resend, Group::Delivered | Group::Dead) => Ok((group, Move::Resend)),
            (JobOp::ResendDiscarded, Group::Discarded) => Ok((group, Move::Resend)),
            _ => Err(AppError::invalid(
                "op",
                "Redrive takes dead letters; release takes held ones; discard takes either; \
                 resend takes delivered, dead or discarded ones.",
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
        "delivered" => Ok(Group::Delivered),
        "discarded" => Ok(Group::Discarded),
        _ => Err(AppError::invalid(
            "group",
            "The group is due, held, dead, delivered or discarded.",
        )),
    }
}

/// Actions one job moves per round before it saves its progress.
const JOB_PAGE: usize = 50;

pub(super) fn job_view(j: JobRecord) -> JobView {
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
    /// Starts a bulk job; a second start from the same form finds the first.
    pub async fn start_bulk(&self, group: &str, req: BulkRequest) -> Result<JobView, AppError> {
        let (g, mv) = req.op.group_and_move(group_named(group)?)?;
        self.refuse_under_safe_mode(mv).await?;
        // Said, and at most 500 characters: it is copied into every move's audit record.
        let reason =
            redact::redact(crate::model::kill_switches::Reason::parse(&req.reason)?.as_str());
        let now = self.clock.now();
        let total = outbox_reads::count(&self.store, g, &req.filter).await? as i64;
        let key = req.job_key(g);
        let (outbox, outbox_sk) = JobRecord::listed(&iso(now), &key);
        let job = JobRecord {
            event_id: key,
            kind: RecordKind::Job,
            op: req.op,
            group: g.as_str().to_string(),
            cause: req.filter.cause.clone(),
            action_type: req.filter.action_type.clone(),
            since_ms: req.filter.window.map(|w| w.0),
            until_ms: req.filter.window.map(|w| w.1),
            receiver: req.filter.receiver.clone(),
            reason,
            actor: req.actor.clone(),
            total,
            done: 0,
            skipped: 0,
            pages: 0,
            status: JobStatus::Running,
            empty_since_ms: None,
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
            "since_ms": job.since_ms,
            "until_ms": job.until_ms,
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

    /// What a job takes of its group: its narrowing, and for a resend its window.
    fn job_filter(&self, job: &JobRecord) -> Filter {
        Filter {
            cause: job.cause.clone(),
            action_type: job.action_type.clone(),
            window: job.since_ms.zip(job.until_ms),
            receiver: job.receiver.clone(),
            // A resend sends nothing past its retention that TTL has not deleted yet.
            alive_at: job.op.resends().then(|| self.clock.now().timestamp()),
            not_resent_by: job.op.resends().then(|| job.event_id.clone()),
            ..Filter::default()
        }
    }

    /// Moves up to [`JOB_PAGE`] actions of a job (each counted as it is made) and saves
    /// the page's progress. It reads the group from the outbox index, which may not show
    /// the latest writes yet, so a pass that finds nothing left does not end the job: a
    /// later pass, `events.bulk_confirm_ms` on (longer than an index takes to show a write,
    /// well under a second on AWS), that finds nothing either does.
    async fn job_page(&self, job: &JobRecord) -> Result<(), StoreError> {
        // A group this release does not know (a later one's) is left to that release.
        let known = group_named(&job.group).ok();
        let Some((group, mv)) = known.and_then(|g| job.op.group_and_move(g).ok()) else {
            return Ok(());
        };
        let filter = self.job_filter(job);
        // What was in the group when the job began, and only that.
        let began = DateTime::parse_from_rfc3339(&job.created_at)
            .map_or(i64::MAX, |t| t.timestamp_millis() + 1);
        // Jobs move held, dead, delivered and discarded ones only: never one in flight.
        // Each move counts itself in `done`; the page saves what it skipped.
        let (mut skipped, mut seen) = (0i64, 0usize);
        for part in filter.parts(group) {
            if seen >= JOB_PAGE {
                break;
            }
            let batch =
                outbox_reads::list_shard(&self.store, group, part, &filter, JOB_PAGE - seen, began)
                    .await?;
            seen += batch.len();
            for rec in batch {
                match self.job_move(&rec, mv, job).await? {
                    Moved::Moved => {}
                    Moved::Skipped => skipped += 1,
                    // Another console carries on from what is stored.
                    Moved::NotMine => return Ok(()),
                }
            }
        }
        self.save_page(job, skipped, seen == 0).await
    }

    /// Saves a page's progress: what it skipped, and whether it found nothing. Refused
    /// while the job is still this console's, a write of an earlier page of this console
    /// landed late, between this page's read and its write (it was answered as failed):
    /// saved again over what is stored now, so that mark (an empty pass's "nothing left
    /// since") does not stand over a page that found some.
    async fn save_page(
        &self,
        read: &JobRecord,
        skipped: i64,
        empty: bool,
    ) -> Result<(), StoreError> {
        let mut job = read.clone();
        for _ in 0..3 {
            let now = self.clock.now();
            let empty_since_ms =
                empty.then(|| job.empty_since_ms.unwrap_or(now.timestamp_millis()));
            let confirm_ms = self.config.events.bulk_confirm_ms;
            let confirmed =
                empty_since_ms.is_some_and(|t| now.timestamp_millis() - t >= confirm_ms);
            let p = Progress {
                lease: Lease {
                    key: &job.event_id,
                    nonce: &self.owner,
                },
                skipped: (job.skipped, job.skipped + skipped),
                pages: job.pages,
                empty_since_ms,
                finished: confirmed,
                now_iso: &iso(now),
            };
            if jobs::progress(&self.store, &p).await? {
                return Ok(());
            }
            match jobs::get(&self.store, &job.event_id).await? {
                Some(now) if now.claim_nonce == self.owner && now.status == JobStatus::Running => {
                    job = now;
                }
                _ => break,
            }
        }
        tracing::info!(job = %read.event_id, "outbox job taken over before its page was saved");
        Ok(())
    }

    /// A job as it stands (the page follows its progress).
    pub async fn job(&self, id: &str) -> Result<JobView, AppError> {
        // A job's id is 16 hex digits: anything else names none (and is never a key).
        let id = super::pause::hex16(id, "id", "No such job.")?;
        let job = jobs::get(&self.store, &JobRecord::key(&id))
            .await?
            .ok_or(AppError::NotFound)?;
        Ok(job_view(job))
    }
}
