//! Publishing: a message to a list of users (one copy per user partition, one message id
//! for all) or to everyone (one copy in the public partition), each copy written in the
//! same transaction as its counters (`deliver.rs`). Large audiences go in batches within
//! DynamoDB's 100 actions; a publish that stopped half-way resumes from its job record with
//! the same message id, and the condition on each copy makes a recipient who has it
//! already drop out of the batch instead of receiving it twice.

use chrono::{DateTime, Utc};

use super::{message_id, parse_ttl, Inbox};
use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::contract::inbox::PublishRequest;
use crate::server::domain::fields;
use crate::server::domain::inbox::keys::{CategoryKey, InboxKey, TenantKey, UserKey};
use crate::server::store::inbox::{
    self as store, Audience, AudienceKind, Body, Job, JobStart, Kind, MessageItem, Publication,
    PublicationStatus, Taxonomy, PUBLIC_UID,
};

pub const MAX_RECIPIENTS: usize = 10_000;

/// A publish request, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Publish {
    /// `None`: everyone.
    pub uids: Option<Vec<UserKey>>,
    pub label: String,
    pub category: Option<CategoryKey>,
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
pub fn uids(raw: &[String]) -> Result<Vec<UserKey>, AppError> {
    let mut out: Vec<UserKey> = Vec::new();
    for (i, u) in raw.iter().enumerate() {
        let k = UserKey::parse_as(u, &format!("audience.uids[{i}]"))?;
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
        uids: Option<Vec<UserKey>>,
        label: Option<String>,
        category: Option<String>,
        title: String,
        body: String,
        cta_uri: Option<String>,
        ttl: Option<String>,
        sender: &str,
        host_system_id: Option<String>,
    ) -> Result<Publish, AppError> {
        let category = category.map(|c| CategoryKey::parse(&c)).transpose()?;
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

impl Publish {
    /// Who the message goes to: a list of users, or everyone.
    pub fn audience_kind(&self) -> AudienceKind {
        if self.uids.is_some() {
            AudienceKind::Users
        } else {
            AudienceKind::Everyone
        }
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

/// Where a message goes and for how long: the checked keys, the publish time, and when
/// the message expires.
struct Target {
    tenant: TenantKey,
    inbox: InboxKey,
    now: DateTime<Utc>,
    /// Epoch seconds.
    expires: i64,
}

/// The publish a job stands for: its message id, whether an earlier call started it, and
/// when it was first received (epoch milliseconds).
struct Started {
    id: String,
    resumed: bool,
    received: i64,
}

impl Inbox {
    /// Publishes `p` once for `job` (the idempotency key of the request): a second call with
    /// the same job finishes what the first left, and writes nothing it already wrote.
    pub async fn publish(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        p: &Publish,
        job: &str,
        now: DateTime<Utc>,
    ) -> Result<Published, AppError> {
        let t = self.target(tenant, inbox, p, now).await?;
        let started = self.start(&t, p, job).await?;
        let recipients = p.uids.as_ref().map_or(1, Vec::len);
        let batches = self
            .deliver_all(&copies(&t, p, &started), p.category.is_some(), now)
            .await?;
        let (tenant, inbox, id, resumed) = (&t.tenant, &t.inbox, started.id, started.resumed);
        store::finish_publication(&self.store, tenant, inbox, &id).await?;
        tracing::info!(tenant = %tenant, inbox = %inbox, message = %id, recipients, batches, resumed, "message published");
        if !resumed {
            crate::server::metrics::inbox_published();
        }
        Ok(Published {
            message_id: id,
            recipients,
            batches,
            resumed,
        })
    }

    /// The checked keys, and when the message expires: after the request's lifetime, else
    /// the inbox's for its category (see [`Inbox::lifetime`]).
    async fn target(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        p: &Publish,
        now: DateTime<Utc>,
    ) -> Result<Target, AppError> {
        let life = match &p.ttl {
            Some(t) => parse_ttl(t, "ttl")?,
            None => self.lifetime(tenant, inbox, p.category.as_deref()).await?,
        };
        Ok(Target {
            tenant: tenant.clone(),
            inbox: inbox.clone(),
            now,
            expires: (now + life).timestamp(),
        })
    }

    /// Records the job with its publication under a new message id, or finds the job an
    /// earlier call with the same key recorded, and resumes that publish.
    async fn start(&self, t: &Target, p: &Publish, job: &str) -> Result<Started, AppError> {
        let fresh_id = message_id(t.now);
        let job_item = Job {
            pk: store::tenant_pk(&t.tenant),
            sk: store::job_sk(job),
            kind: Kind::Job,
            message_id: fresh_id.clone(),
            inbox_key: t.inbox.to_string(),
            expiredat: t.expires + 86_400,
        };
        let publication = publication(t, p, &fresh_id);
        match store::start_job(&self.store, &t.tenant, &job_item, &publication).await? {
            JobStart::New => Ok(Started {
                id: fresh_id,
                resumed: false,
                received: t.now.timestamp_millis(),
            }),
            JobStart::Resume(j) => {
                // The copies keep the time the first call received the message.
                let pb: Option<Publication> = store::get(
                    &self.store,
                    &store::tenant_pk(&t.tenant),
                    &store::publication_sk(&j.inbox_key, &j.message_id),
                )
                .await?;
                let received = pb
                    .and_then(|pb| DateTime::parse_from_rfc3339(&pb.created_at).ok())
                    .map_or(t.now.timestamp_millis(), |at| at.timestamp_millis());
                Ok(Started {
                    id: j.message_id,
                    resumed: true,
                    received,
                })
            }
        }
    }
}

/// The publication record: what is published to whom, `publishing` until every copy is in.
fn publication(t: &Target, p: &Publish, id: &str) -> Publication {
    Publication {
        pk: store::tenant_pk(&t.tenant),
        sk: store::publication_sk(&t.inbox, id),
        kind: Kind::Publication,
        id: id.to_string(),
        inbox_key: t.inbox.to_string(),
        audience_kind: p.audience_kind(),
        label: p.label.clone(),
        recipients: p.uids.as_ref().map_or(1, Vec::len) as i64,
        category: p.category.as_ref().map(ToString::to_string),
        title: p.title.clone(),
        status: PublicationStatus::Publishing,
        created_at: iso(t.now),
        expiredat: t.expires + 86_400,
    }
}

/// One copy for each user, or one in the public partition for everyone.
fn copies(t: &Target, p: &Publish, started: &Started) -> Vec<MessageItem> {
    match &p.uids {
        None => vec![copy(
            t,
            p,
            started,
            store::public_pk(&t.tenant, &t.inbox),
            PUBLIC_UID,
        )],
        Some(list) => list
            .iter()
            .map(|u| copy(t, p, started, store::user_pk(&t.tenant, u, &t.inbox), u))
            .collect(),
    }
}

/// The message as `uid`'s copy, in partition `pk`.
fn copy(t: &Target, p: &Publish, started: &Started, pk: String, uid: &str) -> MessageItem {
    MessageItem {
        pk,
        sk: store::message_sk(&started.id),
        kind: Kind::Message,
        id: started.id.clone(),
        host_system_id: p.host_system_id.clone(),
        sender: p.sender.clone(),
        audiences: Audience {
            kind: p.audience_kind(),
            label: p.label.clone(),
            uids: p
                .uids
                .iter()
                .flatten()
                .take(20)
                .map(ToString::to_string)
                .collect(),
            count: p.uids.as_ref().map_or(1, Vec::len) as i64,
        },
        received: started.received,
        delivered: t.now.timestamp_millis(),
        readat: None,
        expiredat: t.expires,
        taxonomy: Taxonomy {
            category: p.category.as_ref().map(ToString::to_string),
        },
        message: Body {
            title: p.title.clone(),
            body: p.body.clone(),
            cta_uri: p.cta_uri.clone(),
        },
        tenant_key: t.tenant.to_string(),
        inbox_key: t.inbox.to_string(),
        uid: uid.to_string(),
    }
}
