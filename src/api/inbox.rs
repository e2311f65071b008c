use leptos::prelude::*;

use crate::model::inbox::{InboxView, PublishForm, UserView};
use crate::model::AppError;

#[server]
pub async fn load_inbox_page(
    tenant: String,
    inbox: String,
    cursor: Option<String>,
    draft: Option<String>,
) -> Result<InboxView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let mut page = state.inbox.page(&tenant, &inbox, cursor.as_deref()).await?;
    page.can_write = user.role.allows(Role::Operator);
    if let (true, Some(key), Some(t)) = (
        page.can_write,
        draft.filter(|d| !d.is_empty()),
        &page.tenant,
    ) {
        page.draft = state
            .inbox
            .draft(&user.name, t, &key, state.clock.now())
            .await?;
        // The message in progress keeps its key until the person starts a new one.
        if crate::server::services::inbox::drafts::is_draft_key(&key) {
            page.form_key = key;
        }
    }
    for p in &mut page.publications {
        p.audience = crate::server::domain::redact::for_role(user.role, &p.audience);
    }
    Ok(page)
}

/// Creates or edits a tenant's settings (title, default message lifetime).
#[server]
pub async fn save_tenant(tenant: String, title: String, ttl: String) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::contract::inbox::TenantSettings;
    use crate::server::ctx;
    use crate::server::domain::inbox::keys::TenantKey;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let tenant = TenantKey::parse(&tenant)?;
    let body = TenantSettings {
        title: Some(title),
        ttl: Some(ttl),
    };
    let s = state
        .inbox
        .put_tenant(&tenant, body, state.clock.now())
        .await?;
    tracing::info!(actor = %user.name, tenant = %s.tenant_key, "tenant settings saved");
    Ok(s.tenant_key)
}

/// Creates or edits an inbox: title, description, default lifetime and lifetimes per
/// message type (`billing=7d, promo=2d`).
#[server]
pub async fn save_inbox(
    tenant: String,
    inbox: String,
    title: String,
    description: String,
    ttl: String,
    ttl_types: String,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::inbox::keys::{InboxKey, TenantKey};
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let mut ttls = std::collections::BTreeMap::new();
    if !ttl.trim().is_empty() {
        ttls.insert("default".into(), ttl.trim().into());
    }
    for pair in ttl_types
        .split([',', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').ok_or_else(|| {
            AppError::invalid(
                "ttl_types",
                "Write lifetimes per type as type=7d, separated by commas.",
            )
        })?;
        ttls.insert(k.trim().into(), v.trim().into());
    }
    let body = crate::server::contract::inbox::InboxSettings {
        title: Some(title),
        description: Some(description),
        ttl: Some(ttls),
    };
    let (tenant, inbox) = (TenantKey::parse(&tenant)?, InboxKey::parse(&inbox)?);
    let c = state
        .inbox
        .put_inbox(&tenant, &inbox, body, state.clock.now())
        .await?;
    tracing::info!(actor = %user.name, tenant = %c.tenant_key, inbox = %c.inbox_key, "inbox saved");
    Ok(c.inbox_key)
}

/// Keeps the compose form as a draft (checked as a publish would be) and shows its
/// preview: the page's URL names the draft, never its content.
#[server]
pub async fn save_draft(p: PublishForm) -> Result<(), AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    state
        .inbox
        .save_draft(&user.name, &p, state.clock.now())
        .await?;
    leptos_axum::redirect(&draft_url(&p.tenant, &p.inbox, &p.idempotency_key));
    Ok(())
}

#[cfg(feature = "ssr")]
fn draft_url(tenant: &str, inbox: &str, key: &str) -> String {
    use crate::server::http::middleware::url_encode;
    format!(
        "/inbox?tenant={}&inbox={}&draft={}",
        url_encode(tenant.trim()),
        url_encode(inbox.trim()),
        url_encode(key.trim())
    )
}

/// Publishes a draft, once: its key is the idempotency key, so a double click, a second
/// tab or a refresh answers with the first publish. The page then shows the receipt.
#[server]
pub async fn publish_message(
    tenant: String,
    inbox: String,
    draft: String,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::inbox::drafts::{self, ToPublish};
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    let ready = state
        .inbox
        .draft_to_publish(&user.name, &tenant, &inbox, &draft, now);
    let (form, receipt) = match ready.await? {
        ToPublish::Published(form, receipt) => (form, receipt),
        ToPublish::Ready(form, publish) => {
            let receipt = publish_once(&state, &user.name, &form, &publish, now).await?;
            (form, receipt)
        }
    };
    leptos_axum::redirect(&draft_url(&form.tenant, &form.inbox, &form.idempotency_key));
    Ok(drafts::published_text(&receipt))
}

/// Publishes a draft through the idempotency engine, as every console form is (its key
/// is the form's), then notes the receipt on the draft.
#[cfg(feature = "ssr")]
async fn publish_once(
    state: &crate::server::state::AppState,
    actor: &str,
    form: &PublishForm,
    publish: &crate::server::services::inbox::publish::Publish,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<crate::model::inbox::Receipt, AppError> {
    use crate::api::submission::{self, Submission};
    use crate::server::services::inbox::drafts::{self, PUBLISH_SCOPE};
    let sub = Submission {
        actor,
        scope: PUBLISH_SCOPE,
        form_key: &form.idempotency_key,
        values: drafts::publish_values(form, publish),
    };
    let inbox = &state.inbox;
    let done = submission::once(state, sub, move |attempt| {
        inbox.publish_form(form, publish, attempt.key_hash, now)
    });
    let receipt = drafts::receipt(done.await?.data);
    inbox.draft_published(actor, form, &receipt).await?;
    tracing::info!(actor = %actor, message = %receipt.message_id, "published from the console");
    Ok(receipt)
}

/// The feed and counts a user sees.
#[server]
pub async fn load_user_view(
    tenant: String,
    inbox: String,
    uid: String,
    cursor: Option<String>,
) -> Result<UserView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::inbox::keys::{InboxKey, TenantKey, UserKey};
    use crate::server::services::inbox::feed::PAGE_SIZE;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    // Links carry the user's reference, never the id (docs/security.md); an id typed
    // into the address is counted as the person's lookup.
    let refs = state.answer_refs(&user.name, &[], &[&uid]).await?;
    let uid = refs.given_user(&uid).into_id();
    let (tenant, inbox, uid) = (
        TenantKey::parse(&tenant)?,
        InboxKey::parse(&inbox)?,
        UserKey::parse(&uid)?,
    );
    let feed = state
        .inbox
        .feed(&tenant, &inbox, &uid, cursor.as_deref(), PAGE_SIZE, now)
        .await?;
    let counts = state.inbox.counts(&tenant, &inbox, &uid).await?;
    Ok(UserView {
        feed,
        counts,
        can_write: user.role.allows(Role::Operator),
        uid_ref: refs.user(&uid),
        // A viewer holding a reference (a link from the Measurements page, a ticket, the
        // history) sees the user masked, as everywhere else.
        uid: crate::server::domain::redact::for_role(user.role, &uid),
    })
}

/// Marks one message read for a user (`message_id` empty: all of them).
#[server]
pub async fn mark_read(
    tenant: String,
    inbox: String,
    uid: String,
    message_id: String,
) -> Result<String, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::inbox::keys::{InboxKey, MessageKey, TenantKey, UserKey};
    let me = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    let uid = state
        .answer_refs(&me.name, &[], &[&uid])
        .await?
        .given_user(&uid)
        .into_id();
    let (tenant, inbox, uid) = (
        TenantKey::parse(&tenant)?,
        InboxKey::parse(&inbox)?,
        UserKey::parse(&uid)?,
    );
    if message_id.trim().is_empty() {
        let n = state
            .inbox
            .mark_all_read(&tenant, &inbox, &uid, now)
            .await?;
        return Ok(match n {
            1 => "Marked 1 message read for this user.".into(),
            n => format!("Marked {n} messages read for this user."),
        });
    }
    let id = MessageKey::parse(&message_id)?;
    state
        .inbox
        .mark_read(&tenant, &inbox, &uid, &id, now)
        .await?;
    Ok("Marked read for this user.".into())
}
