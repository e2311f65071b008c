//! Bulk operations on the outbox (docs/events.md, "Redrive and discard"): an operator's
//! "redrive every dead letter with cause http 503" is a job record in Table A, worked
//! through by whichever console holds its lease, its progress saved after every page. A
//! console that dies mid-job leaves a lease that runs out; another one carries on. The
//! moves themselves are conditional, so a page done twice moves nothing twice, and each
//! counts itself in the job's `done` in its own transaction (`job_moves`), so the count is
//! what moved.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use serde::{Deserialize, Serialize};

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use super::RecordKind;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{self, decode, n, s, Claim};
use crate::server::store::query::{self, Cond, Spec, Start};
use crate::server::store::schema::{MW_IDEMPOTENCY, OUTBOX_INDEX};
use crate::server::store::{tx, Store, StoreError};

/// The `outbox-index` partition jobs are listed in.
const JOBS: &str = "jobs";

/// What a job does to each action it selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobOp {
    /// Dead letters back to the queue.
    #[serde(rename = "redrive")]
    Redrive,
    /// Held actions back to the queue.
    #[serde(rename = "release")]
    Release,
    /// Held actions or dead letters dropped.
    #[serde(rename = "discard")]
    Discard,
    /// Delivered actions or dead letters of a time window sent again, each once.
    #[serde(rename = "resend")]
    Resend,
    /// Discarded actions of a time window sent, each once. Its own name on the record:
    /// the release before this one reads an unknown group as dead letters, and would
    /// resend those; it cannot read this name at all, so it leaves the job alone.
    #[serde(rename = "resend_discarded")]
    ResendDiscarded,
}

impl JobOp {
    pub const fn as_str(self) -> &'static str {
        match self {
            JobOp::Redrive => "redrive",
            JobOp::Release => "release",
            JobOp::Discard => "discard",
            JobOp::Resend | JobOp::ResendDiscarded => "resend",
        }
    }

    /// A resend (of delivered, dead or discarded side effects).
    pub const fn resends(self) -> bool {
        matches!(self, JobOp::Resend | JobOp::ResendDiscarded)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobStatus {
    #[serde(rename = "running")]
    Running,
    #[serde(rename = "finished")]
    Finished,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// `job:<id>`.
    pub event_id: String,
    pub kind: RecordKind,
    pub op: JobOp,
    /// `held` or `dead`.
    pub group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_type: Option<String>,
    /// A resend's window: the milliseconds its actions entered the group within.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<i64>,
    /// A resend of one receiver's side effects: its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// Why (redacted before it is stored).
    pub reason: String,
    pub actor: String,
    /// How many matched when it was started.
    pub total: i64,
    /// How many it moved so far.
    pub done: i64,
    /// How many it skipped (they had moved meanwhile).
    #[serde(default)]
    pub skipped: i64,
    /// How many pages' progress it saved: each save is conditioned on the one before, so
    /// a save that lands late (after a later one) changes nothing.
    #[serde(default)]
    pub pages: i64,
    pub status: JobStatus,
    /// When a pass first found nothing left (ms), if the passes since found nothing
    /// either: the job ends on a later pass that finds nothing too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_since_ms: Option<i64>,
    pub claim_nonce: String,
    pub lease_until_ms: i64,
    pub created_at: String,
    pub updated_at: String,
    pub outbox: String,
    pub outbox_sk: String,
    pub expires_at: i64,
}

impl JobRecord {
    pub fn key(id: &str) -> String {
        format!("job:{id}")
    }

    /// The index fields of a job record.
    pub fn listed(created_at: &str, key: &str) -> (String, String) {
        (JOBS.to_string(), format!("{created_at}#{key}"))
    }
}

/// Records a new job with its audit record; a second start with the same id finds the
/// first (a double click).
pub async fn create(
    store: &Store,
    job: &JobRecord,
    audit_record: &AuditItem,
    _now_s: i64,
) -> Result<Claim<JobRecord>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let item = serde_dynamo::to_item(job).map_err(|e| StoreError::corrupt(&table, e))?;
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(event_id)")
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    let actions = vec![
        TransactWriteItem::builder().put(put).build(),
        audit::write_once(store, audit_record)?,
    ];
    match tx::transact(store, actions).await? {
        tx::Outcome::Done => Ok(Claim::Won),
        tx::Outcome::Refused(_) => match get(store, &job.event_id).await? {
            Some(first) => Ok(Claim::Exists(Box::new(first))),
            None => Err(StoreError::corrupt(&table, "a job refused but not found")),
        },
    }
}

pub async fn get(store: &Store, key: &str) -> Result<Option<JobRecord>, StoreError> {
    item::get(store, MW_IDEMPOTENCY.base, "event_id", key).await
}

/// The newest jobs, running or not.
pub async fn recent(store: &Store, limit: usize) -> Result<Vec<JobRecord>, StoreError> {
    let spec = Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(OUTBOX_INDEX),
        pk: ("outbox", s(JOBS)),
        sk: None,
        filters: Vec::new(),
        ascending: false,
        key_attrs: vec!["event_id", "outbox", "outbox_sk"],
        projection: None,
    };
    let page = query::page(store, &spec, Start::First, limit).await?;
    page.items
        .into_iter()
        .map(|i| decode(i, &spec.table))
        .collect()
}

/// Running jobs (newest first), for consoles to pick up.
pub async fn running(store: &Store) -> Result<Vec<JobRecord>, StoreError> {
    let spec = Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(OUTBOX_INDEX),
        pk: ("outbox", s(JOBS)),
        sk: None,
        filters: vec![("status", Cond::Eq(s("running")))],
        ascending: false,
        key_attrs: vec!["event_id", "outbox", "outbox_sk"],
        projection: None,
    };
    let page = query::page(store, &spec, Start::First, 20).await?;
    page.items
        .into_iter()
        .map(|i| decode(i, &spec.table))
        .collect()
}

/// Takes (or renews) a running job's lease for this console. False: another console holds
/// it, or it finished.
pub async fn take(
    store: &Store,
    key: &str,
    nonce: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<bool, StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(MW_IDEMPOTENCY.base))
        .key("event_id", s(key))
        .update_expression("SET claim_nonce = :me, lease_until_ms = :lease")
        .condition_expression("#st = :running AND (claim_nonce = :me OR lease_until_ms < :now)")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":running", s("running"))
        .expression_attribute_values(":me", s(nonce))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":lease", n(now_ms + lease_ms));
    conditional(req).await
}

/// The lease a console holds on a job while it works a page of it.
#[derive(Clone, Copy)]
pub struct Lease<'a> {
    /// `job:<id>`.
    pub key: &'a str,
    pub nonce: &'a str,
}

/// A job's progress after one page (its moves counted themselves).
pub struct Progress<'a> {
    pub lease: Lease<'a>,
    /// How many it skipped: as this console last read it, and now.
    pub skipped: (i64, i64),
    /// Pages saved, as this console last read it.
    pub pages: i64,
    /// When the passes began to find nothing left (none: this one found some).
    pub empty_since_ms: Option<i64>,
    pub finished: bool,
    pub now_iso: &'a str,
}

/// Saves a page's progress under this console's lease, conditioned on the pages saved as
/// it read them: the skipped count, whether the passes find nothing left, and whether the
/// job finished. A write resent after a lost answer does not count twice, and one that
/// lands late (after a later page's) changes nothing. It does not touch `done`: each move
/// counted itself. False: the lease was lost (another console carries on).
pub async fn progress(store: &Store, p: &Progress<'_>) -> Result<bool, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let req = progress_request(store, &table, p);
    // What this write leaves: found so after a lost answer, it is this write's, not an
    // earlier one of this console's that landed late.
    let status = if p.finished {
        JobStatus::Finished
    } else {
        JobStatus::Running
    };
    let wrote = (
        p.lease.nonce,
        p.pages + 1,
        p.skipped.1,
        p.empty_since_ms,
        status,
    );
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(ccf) => {
                    // Our own write was applied and its answer lost: it stands.
                    let old: Option<JobRecord> = ccf.item.map(|i| decode(i, &table)).transpose()?;
                    Ok(old.is_some_and(|j| {
                        (
                            j.claim_nonce.as_str(),
                            j.pages,
                            j.skipped,
                            j.empty_since_ms,
                            j.status,
                        ) == wrote
                    }))
                }
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

/// The conditional update [`progress`] sends (and sends again).
fn progress_request(
    store: &Store,
    table: &str,
    p: &Progress<'_>,
) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
    let status = if p.finished { "finished" } else { "running" };
    let (expression, empty) = match p.empty_since_ms {
        Some(ms) => (", empty_since_ms = :empty", Some(ms)),
        None => (" REMOVE empty_since_ms", None),
    };
    let req = store
        .client()
        .update_item()
        .table_name(table)
        .key("event_id", s(p.lease.key))
        .update_expression(format!(
            "SET #st = :st, updated_at = :now, #skipped = :skipped, pages = :pages{expression}"
        ))
        // Jobs the release before started have no count of pages.
        .condition_expression(
            "claim_nonce = :me AND #st = :running \
             AND (pages = :was_pages OR (attribute_not_exists(pages) AND :was_pages = :zero))",
        )
        .expression_attribute_names("#st", "status")
        .expression_attribute_names("#skipped", "skipped")
        .expression_attribute_values(":st", s(status))
        .expression_attribute_values(":running", s("running"))
        .expression_attribute_values(":me", s(p.lease.nonce))
        .expression_attribute_values(":now", s(p.now_iso))
        .expression_attribute_values(":skipped", n(p.skipped.1))
        .expression_attribute_values(":pages", n(p.pages + 1))
        .expression_attribute_values(":was_pages", n(p.pages))
        .expression_attribute_values(":zero", n(0))
        .return_values_on_condition_check_failure(
            aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
        );
    match empty {
        Some(ms) => req.expression_attribute_values(":empty", n(ms)),
        None => req,
    }
}

async fn conditional(
    req: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder,
) -> Result<bool, StoreError> {
    tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}
