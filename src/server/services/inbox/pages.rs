//! What the Inbox pages read, and the compose form read into a publish request.

use super::publish::{uids, Publish};
use super::Inbox;
use crate::model::inbox::{InboxSummary, InboxView, PublicationRow, PublishForm};
use crate::model::AppError;
use crate::server::domain::inbox::keys::{InboxKey, TenantKey};
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

impl Inbox {
    /// The tenants; the chosen tenant's settings and inboxes; the chosen inbox's
    /// publications.
    pub async fn page(
        &self,
        tenant: &str,
        inbox_key: &str,
        cursor: Option<&str>,
    ) -> Result<InboxView, AppError> {
        let mut page = InboxView {
            tenants: store::tenants(&self.store).await?,
            form_key: random_hex(16),
            ..InboxView::default()
        };
        if tenant.trim().is_empty() {
            return Ok(page);
        }
        let tenant = TenantKey::parse(tenant)?;
        if let Some(s) = self.tenant(&tenant).await? {
            page.tenant_title = Some(s.title);
            page.tenant_ttl = Some(s.ttl);
        }
        let (configs, _, _) = store::list::<InboxConfig>(
            &self.store,
            &store::tenant_pk(&tenant),
            "si#",
            Start::First,
            100,
        )
        .await?;
        page.inboxes = configs.iter().map(summary).collect();
        page.tenant = Some(tenant.to_string());
        if inbox_key.trim().is_empty() {
            return Ok(page);
        }
        let ik = InboxKey::parse(inbox_key)?;
        page.inbox = Some(
            configs
                .iter()
                .find(|c| c.inbox_key == ik.as_str())
                .map_or_else(|| unconfigured(&ik), summary),
        );
        (page.publications, page.publications_next) =
            self.publications(&tenant, &ik, cursor).await?;
        Ok(page)
    }

    /// One page of an inbox's publications, newest first, with their read counts.
    async fn publications(
        &self,
        tenant: &str,
        inbox: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<PublicationRow>, Option<String>), AppError> {
        let start = match cursor.filter(|c| !c.is_empty()) {
            Some(c) => Start::After(c),
            None => Start::First,
        };
        let (pubs, next, _) = store::list::<Publication>(
            &self.store,
            &store::tenant_pk(tenant),
            &format!("pub#{inbox}#"),
            start,
            20,
        )
        .await?;
        let keys: Vec<(String, String)> = pubs
            .iter()
            .map(|p| (p.inbox_key.clone(), p.id.clone()))
            .collect();
        let reads = store::read_counts(&self.store, tenant, &keys).await?;
        let rows = pubs
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
                status: p.status.as_str().to_string(),
                created_at: p.created_at,
            })
            .collect();
        Ok((rows, next))
    }
}

/// An inbox that has no configuration yet: the defaults apply.
fn unconfigured(inbox: &str) -> InboxSummary {
    InboxSummary {
        key: inbox.to_string(),
        title: inbox.to_string(),
        description: "(no configuration yet: defaults apply)".into(),
        ttl: "default=30d".into(),
        default_ttl: String::new(),
        type_ttls: String::new(),
    }
}

/// The compose form as a publish request.
pub fn parse_form(f: &PublishForm, sender: &str) -> Result<Publish, AppError> {
    TenantKey::parse(&f.tenant)?;
    InboxKey::parse(&f.inbox)?;
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
