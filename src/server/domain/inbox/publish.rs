//! Publishing: a message to a list of users (one copy per user partition, one message id
//! for all) or to everyone (one copy in the public partition), each copy written in the
//! same transaction as its counters. Large audiences go in batches within DynamoDB's 100
//! actions; a publish that stopped half-way resumes from its job record with the same
//! message id, and the condition on each copy makes a recipient who has it already drop
//! out of the batch instead of receiving it twice.

use std::sync::atomic::Ordering;

use chrono::{DateTime, Duration, Utc};

use super::{key, message_id, parse_ttl, Inbox};
use crate::model::AppError;
use crate::server::contract::inbox::PublishRequest;
use crate::server::domain::fields::{self, iso_ms};
use crate::server::store::inbox::{
    self as store, Audience, Body, Job, JobStart, MessageItem, Publication, Taxonomy, Written,
    KEEP_DAYS, PUBLIC_UID,
};

pub const MAX_RECIPIENTS: usize = 10_000;

/// A publish request, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Publish {
    /// `None`: everyone.
    pub uids: Option<Vec<String>>,
    pub label: String,
    pub category: Option<String>,
    pub title: String,
    pub body: String,
    pub cta_uri: Option<String>,
    pub ttl: Option<String>,
    pub sender: String,
    pub host_system_id: Option<String>,
}

/// An `http(s)://host/...` link, at most 2,000 characters.
pub fn cta(raw: &str, field: &str) -> Result<String, AppError> {
    let t = raw.trim();
    let rest = t
        .strip_prefix("https://")
        .or_else(|| t.strip_prefix("http://"))
        .ok_or_else(|| {
            AppError::invalid(
                field,
                format!("{field} must start with http:// or https://."),
            )
        })?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !host_ok || t.len() > 2000 || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AppError::invalid(
            field,
            format!("{field} is not a valid link."),
        ));
    }
    Ok(t.to_string())
}

/// Recipients from a list (API) or text (one per line or comma-separated, console).
pub fn uids(raw: &[String]) -> Result<Vec<String>, AppError> {
    let mut out: Vec<String> = Vec::new();
    for (i, u) in raw.iter().enumerate() {
        let k = key(u, &format!("audience.uids[{i}]"))?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err(AppError::invalid(
            "audience.uids",
            "Give at least one user id.",
        ));
    }
    if out.len() > MAX_RECIPIENTS {
        return Err(AppError::invalid(
            "audience.uids",
            format!("At most {MAX_RECIPIENTS} users per message; publish to everyone instead."),
        ));
    }
    Ok(out)
}

impl Publish {
    /// From the API's request, sent by `sender`.
    pub fn new(req: PublishRequest, sender: &str) -> Result<Publish, AppError> {
        let audience = req.audience;
        let uids = match fields::required("audience.kind", audience.kind, 16)?.as_str() {
            "everyone" => None,
            "users" => {
                let list = fields::list(
                    "audience.uids",
                    audience.uids,
                    MAX_RECIPIENTS * 2,
                    |s, _| Ok(s.to_string()),
                )?
                .unwrap_or_default();
                Some(uids(&list)?)
            }
            _ => {
                return Err(AppError::invalid(
                    "audience.kind",
                    "audience.kind is users or everyone.",
                ))
            }
        };
        Publish::build(
            uids,
            fields::text("audience.label", audience.label, 200)?,
            fields::text("category", req.category, 128)?,
            fields::required("title", req.title, 200)?,
            body_text(req.body)?,
            fields::text("cta_uri", req.cta_uri, 2000)?,
            fields::text("ttl", req.ttl, 16)?,
            sender,
            fields::text("host_system_id", req.host_system_id, 128)?,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub fn build(
        uids: Option<Vec<String>>,
        label: Option<String>,
        category: Option<String>,
        title: String,
        body: String,
        cta_uri: Option<String>,
        ttl: Option<String>,
        sender: &str,
        host_system_id: Option<String>,
    ) -> Result<Publish, AppError> {
        let category = category.map(|c| key(&c, "category")).transpose()?;
        let cta_uri = cta_uri.map(|c| cta(&c, "cta_uri")).transpose()?;
        if let Some(t) = &ttl {
            parse_ttl(t, "ttl")?;
        }
        if title.trim().is_empty() {
            return Err(AppError::invalid("title", "title is required."));
        }
        let label = label.unwrap_or_else(|| match &uids {
            None => "everyone".into(),
            Some(u) => format!("{} users", u.len()),
        });
        Ok(Publish {
            uids,
            label,
            category,
            title: title.trim().to_string(),
            body,
            cta_uri,
            ttl,
            sender: sender.to_string(),
            host_system_id,
        })
    }
}

/// The message's text, kept as written.
fn body_text(body: String) -> Result<String, AppError> {
    if body.trim().is_empty() {
        return Err(AppError::invalid("body", "body is required."));
    }
    if body.chars().count() > 10_000 {
        return Err(AppError::invalid(
            "body",
            "body is at most 10000 characters.",
        ));
    }
    Ok(body)
}

#[derive(Clone, Debug, PartialEq)]
pub struct Published {
    pub message_id: String,
    pub recipients: usize,
    /// Transactions written in this call.
    pub batches: usize,
    /// True when this call finished a publish an earlier one started.
    pub resumed: bool,
}

impl Inbox {
    /// Publishes `p` once for `job` (the idempotency key of the request): a second call with
    /// the same job finishes what the first left, and writes nothing it already wrote.
    pub async fn publish(
        &self,
        tenant: &str,
        inbox: &str,
        p: &Publish,
        job: &str,
        now: DateTime<Utc>,
    ) -> Result<Published, AppError> {
        let tenant = key(tenant, "tenant")?;
        let inbox = key(inbox, "inbox")?;
        let life = match &p.ttl {
            Some(t) => parse_ttl(t, "ttl")?,
            None => {
                self.lifetime(&tenant, &inbox, p.category.as_deref())
                    .await?
            }
        };
        let expires = (now + life).timestamp();
        let fresh_id = message_id(now);
        let recipients = p.uids.as_ref().map_or(1, Vec::len);
        let job_item = Job {
            pk: store::tenant_pk(&tenant),
            sk: store::job_sk(job),
            kind: "PJ".into(),
            message_id: fresh_id.clone(),
            inbox_key: inbox.clone(),
            expiredat: expires + 86_400,
        };
        let publication = Publication {
            pk: store::tenant_pk(&tenant),
            sk: store::publication_sk(&inbox, &fresh_id),
            kind: "PB".into(),
            id: fresh_id.clone(),
            inbox_key: inbox.clone(),
            audience_kind: if p.uids.is_some() {
                "users"
            } else {
                "everyone"
            }
            .into(),
            label: p.label.clone(),
            recipients: recipients as i64,
            category: p.category.clone(),
            title: p.title.clone(),
            status: "publishing".into(),
            created_at: iso_ms(now),
            expiredat: expires + 86_400,
        };
        let (id, resumed, received) =
            match store::start_job(&self.store, &tenant, &job_item, &publication).await? {
                JobStart::New => (fresh_id, false, now.timestamp_millis()),
                JobStart::Resume(j) => {
                    let pb: Option<Publication> = store::get(
                        &self.store,
                        &store::tenant_pk(&tenant),
                        &store::publication_sk(&j.inbox_key, &j.message_id),
                    )
                    .await?;
                    let received = pb
                        .and_then(|pb| DateTime::parse_from_rfc3339(&pb.created_at).ok())
                        .map_or(now.timestamp_millis(), |t| t.timestamp_millis());
                    (j.message_id, true, received)
                }
            };
        let copy = |pk: String, uid: &str| MessageItem {
            pk,
            sk: store::message_sk(&id),
            kind: "UM".into(),
            id: id.clone(),
            host_system_id: p.host_system_id.clone(),
            sender: p.sender.clone(),
            audiences: Audience {
                kind: if p.uids.is_some() {
                    "users"
                } else {
                    "everyone"
                }
                .into(),
                label: p.label.clone(),
                uids: p.uids.iter().flatten().take(20).cloned().collect(),
                count: recipients as i64,
            },
            received,
            delivered: now.timestamp_millis(),
            readat: None,
            expiredat: expires,
            taxonomy: Taxonomy {
                category: p.category.clone(),
            },
            message: Body {
                title: p.title.clone(),
                body: p.body.clone(),
                cta_uri: p.cta_uri.clone(),
            },
            tenant_key: tenant.clone(),
            inbox_key: inbox.clone(),
            uid: uid.to_string(),
        };
        let copies: Vec<MessageItem> = match &p.uids {
            None => vec![copy(store::public_pk(&tenant, &inbox), PUBLIC_UID)],
            Some(list) => list
                .iter()
                .map(|u| copy(store::user_pk(&tenant, u, &inbox), u))
                .collect(),
        };
        let keep = (now + Duration::days(KEEP_DAYS)).timestamp();
        let per_copy = if p.category.is_some() { 3 } else { 2 };
        let mut batches = 0;
        for chunk in copies.chunks(100 / per_copy) {
            self.deliver_batch(chunk, keep).await?;
            batches += 1;
            let crash_at = self.faults.crash_after_batches.load(Ordering::SeqCst);
            if crash_at > 0 && batches >= crash_at {
                self.faults.crash_after_batches.store(0, Ordering::SeqCst);
                return Err(AppError::Internal {
                    reference: "simulated-crash".into(),
                });
            }
        }
        store::finish_publication(&self.store, &tenant, &inbox, &id).await?;
        tracing::info!(tenant = %tenant, inbox = %inbox, message = %id, recipients, batches, resumed, "message published");
        Ok(Published {
            message_id: id,
            recipients,
            batches,
            resumed,
        })
    }

    /// Writes one batch of copies with their counters in one transaction. Copies that are
    /// there already (an earlier, interrupted publish wrote them) leave the batch.
    async fn deliver_batch(&self, chunk: &[MessageItem], keep: i64) -> Result<(), AppError> {
        let mut pending: Vec<&MessageItem> = chunk.iter().collect();
        for _ in 0..chunk.len() + 1 {
            if pending.is_empty() {
                return Ok(());
            }
            let mut actions = Vec::new();
            let mut starts = Vec::new();
            for m in &pending {
                starts.push(actions.len());
                actions.extend(store::deliver(&self.store, m, keep)?);
            }
            match store::transact(&self.store, actions).await? {
                Written::Done => return Ok(()),
                Written::Refused(idx) => {
                    pending = pending
                        .into_iter()
                        .zip(&starts)
                        .filter(|(_, s)| !idx.contains(s))
                        .map(|(m, _)| m)
                        .collect();
                }
            }
        }
        Err(AppError::InProgress {
            retry_after_secs: 1,
        })
    }
}
