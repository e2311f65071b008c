//! Drafts: what someone composes in the console, kept for a day under the form's key, and
//! published from there at most once (the key is the publish's idempotency key; the
//! console runs the publish through the idempotency engine with the values below).

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::pages::parse_form;
use super::publish::Publish;
use super::Inbox;
use crate::model::inbox::{Draft, PublishForm, Receipt};
use crate::model::AppError;
use crate::server::domain::idempotency::sent_keys::FormKey;
use crate::server::domain::inbox::keys::{InboxKey, TenantKey};
use crate::server::services::idempotency::KeyInputs;
use crate::server::store::inbox::{self as store, DraftItem, Kind};

/// How long a draft is kept.
const DRAFT_DAYS: i64 = 1;

/// The idempotency scope of a publish from the console.
pub const PUBLISH_SCOPE: &str = "inbox.publish";

/// A draft's key is its form's key ([`FormKey`]), exactly as the form carries it (it is
/// part of the draft's address).
pub fn is_draft_key(key: &str) -> bool {
    FormKey::parse(key).is_ok_and(|k| *k == *key)
}

fn check_draft_key(key: &str) -> Result<(), AppError> {
    is_draft_key(key).then_some(()).ok_or_else(|| {
        AppError::invalid(
            "idempotency_key",
            "This message form is out of date. Start a new message.",
        )
    })
}

/// Where a draft stands when someone asks to publish it.
pub enum ToPublish {
    /// Published before: its receipt.
    Published(PublishForm, Receipt),
    /// Not yet: the form and the publish it reads as.
    Ready(PublishForm, Publish),
}

impl Inbox {
    /// Keeps what `owner` composed under its key (checked as a publish would be, so the
    /// preview shows what is wrong). A draft already published is not changed.
    pub async fn save_draft(
        &self,
        owner: &str,
        form: &PublishForm,
        now: DateTime<Utc>,
    ) -> Result<(), AppError> {
        check_draft_key(&form.idempotency_key)?;
        parse_form(form, owner)?;
        let tenant = TenantKey::parse(&form.tenant)?;
        let item = DraftItem {
            pk: store::tenant_pk(&tenant),
            sk: store::draft_sk(owner, &form.idempotency_key),
            kind: Kind::Draft,
            form: form.clone(),
            receipt: None,
            expiredat: (now + Duration::days(DRAFT_DAYS)).timestamp(),
        };
        if !store::put_draft(&self.store, &item).await? {
            return Err(AppError::Conflict(
                "This message was published already; start a new message to send another.".into(),
            ));
        }
        Ok(())
    }

    /// `owner`'s draft under `draft_key`, if there is one (another user's is never shown).
    pub async fn draft(
        &self,
        owner: &str,
        tenant: &str,
        draft_key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Draft>, AppError> {
        if !is_draft_key(draft_key) {
            return Ok(None);
        }
        let tenant = TenantKey::parse(tenant)?;
        let found: Option<DraftItem> = store::get(
            &self.store,
            &store::tenant_pk(&tenant),
            &store::draft_sk(owner, draft_key),
        )
        .await?;
        Ok(found
            .filter(|d| d.expiredat > now.timestamp())
            .map(|d| Draft {
                form: d.form,
                receipt: d.receipt,
            }))
    }

    /// `owner`'s draft for `inbox` as it stands before a publish: published already, or
    /// ready with the publish it reads as.
    pub async fn draft_to_publish(
        &self,
        owner: &str,
        tenant: &str,
        inbox: &str,
        draft_key: &str,
        now: DateTime<Utc>,
    ) -> Result<ToPublish, AppError> {
        let found = self
            .draft(owner, tenant, draft_key, now)
            .await?
            .ok_or_else(|| {
                AppError::invalid(
                    "draft",
                    "This message is no longer here (drafts are kept for a day). Start a new message.",
                )
            })?;
        let form = found.form;
        if form.inbox.trim() != inbox.trim() {
            return Err(AppError::invalid(
                "inbox",
                "This message was written for another inbox.",
            ));
        }
        if let Some(r) = found.receipt {
            return Ok(ToPublish::Published(form, r));
        }
        let publish = parse_form(&form, owner)?;
        Ok(ToPublish::Ready(form, publish))
    }

    /// Publishes a draft's message under `job` (the idempotency engine's key); the answer
    /// the engine keeps and replays, with what the receipt shows.
    pub async fn publish_form(
        &self,
        form: &PublishForm,
        publish: &Publish,
        job: String,
        now: DateTime<Utc>,
    ) -> Result<Value, AppError> {
        let (tenant, inbox) = (
            TenantKey::parse(&form.tenant)?,
            InboxKey::parse(&form.inbox)?,
        );
        let out = self.publish(&tenant, &inbox, publish, &job, now).await?;
        Ok(json!({"ok": true, "data": {
            "message_id": out.message_id,
            "recipients": out.recipients,
            "published_at": now.to_rfc3339(),
        }}))
    }

    /// Records that the draft was published (what its receipt shows).
    pub async fn draft_published(
        &self,
        owner: &str,
        form: &PublishForm,
        receipt: &Receipt,
    ) -> Result<(), AppError> {
        let tenant = TenantKey::parse(&form.tenant)?;
        store::set_draft_receipt(
            &self.store,
            &store::tenant_pk(&tenant),
            &store::draft_sk(owner, &form.idempotency_key),
            receipt,
        )
        .await?;
        Ok(())
    }
}

/// What a publish from a draft is: the same key with other values is refused.
pub fn publish_values(form: &PublishForm, publish: &Publish) -> KeyInputs {
    KeyInputs::new()
        .id("tenant", form.tenant.trim())
        .id("inbox", form.inbox.trim())
        .text("audience", &format!("{:?}", publish.uids))
        .id("category", publish.category.as_deref().unwrap_or_default())
        .text("title", &publish.title)
        .text("body", &publish.body)
        .text("cta", publish.cta_uri.as_deref().unwrap_or_default())
        .id("ttl", publish.ttl.clone().unwrap_or_default())
}

/// The receipt in the answer [`Inbox::publish_form`] gave (its `data`), fresh or replayed.
pub fn receipt(data: Option<Value>) -> Receipt {
    let data = data.unwrap_or_default();
    Receipt {
        message_id: data["message_id"].as_str().unwrap_or_default().to_string(),
        recipients: data["recipients"].as_i64().unwrap_or(0),
        published_at: data["published_at"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// What the console says once a draft is published.
pub fn published_text(r: &Receipt) -> String {
    match r.recipients {
        1 => format!("Published {} to 1 recipient.", r.message_id),
        n => format!("Published {} to {n} recipients.", r.message_id),
    }
}
