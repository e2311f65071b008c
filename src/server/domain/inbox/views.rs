//! What the Inbox pages read, and the compose form read into a publish request.

use super::publish::{uids, Publish};
use super::{key, Inbox};
use crate::model::inbox::{InboxPage, InboxSummary, PublicationRow, PublishForm};
use crate::model::AppError;
use crate::server::ids::random_hex;
use crate::server::store::inbox::{self as store, InboxConfig, Publication};
use crate::server::store::query::Start;

fn summary(c: &InboxConfig) -> InboxSummary {
    InboxSummary {
        key: c.inbox_key.clone(),
        title: c.title.clone(),
        description: c.description.clone(),
        ttl: c
            .ttl
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
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
