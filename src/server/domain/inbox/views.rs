//! What the Inbox pages read, and the compose form read into a publish request.

use super::publish::{uids, Publish};
use super::{key, Inbox};
use crate::model::inbox::{InboxPage, InboxSummary, PublicationRow, PublishForm};
use crate::model::AppError;
use crate::server::ids::random_hex;
use crate::server::store::inbox::{self as store, InboxConfig, Publication};
use crate::server::store::query::Start;

fn summary(c: &InboxConfig) -> InboxSummary {
    let pairs = |keep: &dyn Fn(&str) -> bool| {
        c.ttl
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    InboxSummary {
        key: c.inbox_key.clone(),
        title: c.title.clone(),
        description: c.description.clone(),
        ttl: pairs(&|_| true),
        default_ttl: c.ttl.get("default").cloned().unwrap_or_default(),
        type_ttls: pairs(&|k| k != "default"),
    }
}

/// How long a draft is kept.
const DRAFT_DAYS: i64 = 1;

fn check_draft_key(key: &str) -> Result<(), AppError> {
    let ok = (16..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(AppError::invalid(
            "idempotency_key",
            "This message form is out of date. Start a new message.",
        ))
    }
}

/// Keeps what `owner` composed under its key (checked as a publish would be, so the
/// preview shows what is wrong). A draft already published is not changed.
pub async fn save_draft(
    inbox: &Inbox,
    owner: &str,
    form: &PublishForm,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    check_draft_key(&form.idempotency_key)?;
    parse_form(form, owner)?;
    let tenant = key(&form.tenant, "tenant")?;
    let item = store::DraftItem {
        pk: store::tenant_pk(&tenant),
        sk: store::draft_sk(owner, &form.idempotency_key),
        kind: "DR".into(),
        form: form.clone(),
        receipt: None,
        expiredat: (now + chrono::Duration::days(DRAFT_DAYS)).timestamp(),
    };
    if !store::put_draft(&inbox.store, &item).await? {
        return Err(AppError::Conflict(
            "This message was published already; start a new message to send another.".into(),
        ));
    }
    Ok(())
}

/// `owner`'s draft under `key`, if there is one (another user's is never shown).
pub async fn draft(
    inbox: &Inbox,
    owner: &str,
    tenant: &str,
    draft_key: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<crate::model::inbox::Draft>, AppError> {
    if check_draft_key(draft_key).is_err() {
        return Ok(None);
    }
    let tenant = key(tenant, "tenant")?;
    let found: Option<store::DraftItem> = store::get(
        &inbox.store,
        &store::tenant_pk(&tenant),
        &store::draft_sk(owner, draft_key),
    )
    .await?;
    Ok(found
        .filter(|d| d.expiredat > now.timestamp())
        .map(|d| crate::model::inbox::Draft {
            form: d.form,
            receipt: d.receipt,
        }))
}

/// Records that the draft was published (what its receipt shows).
pub async fn draft_published(
    inbox: &Inbox,
    owner: &str,
    form: &PublishForm,
    receipt: &crate::model::inbox::Receipt,
) -> Result<(), AppError> {
    let tenant = key(&form.tenant, "tenant")?;
    store::set_draft_receipt(
        &inbox.store,
        &store::tenant_pk(&tenant),
        &store::draft_sk(owner, &form.idempotency_key),
        receipt,
    )
    .await?;
    Ok(())
}

/// The tenants; the chosen tenant's settings and inboxes; the chosen inbox's publications.
pub async fn page(
    inbox: &Inbox,
    tenant: &str,
    inbox_key: &str,
    cursor: Option<&str>,
) -> Result<InboxPage, AppError> {
    let mut page = InboxPage {
        tenants: store::tenants(&inbox.store).await?,
        form_key: random_hex(16),
        ..InboxPage::default()
    };
    if tenant.trim().is_empty() {
        return Ok(page);
    }
    let tenant = key(tenant, "tenant")?;
    if let Some(s) = inbox.tenant(&tenant).await? {
        page.tenant_title = Some(s.title);
        page.tenant_ttl = Some(s.ttl);
    }
    let (configs, _, _) = store::list::<InboxConfig>(
        &inbox.store,
        &store::tenant_pk(&tenant),
        "si#",
        Start::First,
        100,
    )
    .await?;
    page.inboxes = configs.iter().map(summary).collect();
    page.tenant = Some(tenant.clone());
    if inbox_key.trim().is_empty() {
        return Ok(page);
    }
    let ik = key(inbox_key, "inbox")?;
    page.inbox = Some(
        configs
            .iter()
            .find(|c| c.inbox_key == ik)
            .map(summary)
            .unwrap_or(InboxSummary {
                key: ik.clone(),
                title: ik.clone(),
                description: "(no configuration yet: defaults apply)".into(),
                ttl: "default=30d".into(),
                default_ttl: String::new(),
                type_ttls: String::new(),
            }),
    );
    let start = match cursor.filter(|c| !c.is_empty()) {
        Some(c) => Start::After(c),
        None => Start::First,
    };
    let (pubs, next, _) = store::list::<Publication>(
        &inbox.store,
        &store::tenant_pk(&tenant),
        &format!("pub#{ik}#"),
        start,
        20,
    )
    .await?;
    let keys: Vec<(String, String)> = pubs
        .iter()
        .map(|p| (p.inbox_key.clone(), p.id.clone()))
        .collect();
    let reads = store::read_counts(&inbox.store, &tenant, &keys).await?;
    page.publications = pubs
        .into_iter()
        .map(|p| PublicationRow {
            read: reads
                .get(&(p.inbox_key.clone(), p.id.clone()))
                .copied()
                .unwrap_or(0),
            id: p.id,
            title: p.title,
            audience: p.label,
            recipients: p.recipients,
            category: p.category,
            status: p.status,
            created_at: p.created_at,
        })
        .collect();
    page.publications_next = next;
    Ok(page)
}

/// The compose form as a publish request.
pub fn parse_form(f: &PublishForm, sender: &str) -> Result<Publish, AppError> {
    key(&f.tenant, "tenant")?;
    key(&f.inbox, "inbox")?;
    let opt = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let list = match f.audience.as_str() {
        "everyone" => None,
        "users" => {
            let raw: Vec<String> = f
                .uids
                .split([',', '\n', ' ', '\r', '\t'])
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
                .collect();
            Some(uids(&raw).map_err(|e| match e {
                AppError::Invalid { message, .. } => AppError::invalid("uids", message),
                other => other,
            })?)
        }
        _ => {
            return Err(AppError::invalid(
                "audience",
                "Choose everyone or a list of users.",
            ))
        }
    };
    if f.body.trim().is_empty() {
        return Err(AppError::invalid("body", "Write the message."));
    }
    if f.body.chars().count() > 10_000 {
        return Err(AppError::invalid(
            "body",
            "The message is at most 10000 characters.",
        ));
    }
    Publish::build(
        list,
        None,
        opt(&f.category),
        f.title.clone(),
        f.body.clone(),
        opt(&f.cta_uri),
        opt(&f.ttl),
        sender,
        None,
    )
}
