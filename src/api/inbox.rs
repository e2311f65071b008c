use leptos::prelude::*;

use crate::model::inbox::{InboxPage, PublishForm, UserView};
use crate::model::AppError;

#[server]
pub async fn load_inbox_page(
    tenant: String,
    inbox: String,
    cursor: Option<String>,
    draft: Option<String>,
) -> Result<InboxPage, AppError> {
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::inbox::views};
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let mut page = views::page(&state.inbox, &tenant, &inbox, cursor.as_deref()).await?;
    page.can_write = user.role.allows(Role::Operator);
    if let (true, Some(key), Some(t)) = (
        page.can_write,
        draft.filter(|d| !d.is_empty()),
        &page.tenant,
    ) {
        page.draft = views::draft(&state.inbox, &user.name, t, &key, state.clock.now()).await?;
        // The message in progress keeps its key until the person starts a new one.
        if key.len() >= 16 && key.bytes().all(|b| b.is_ascii_alphanumeric()) {
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
    use crate::model::accounts::Role;
    use crate::server::contract::inbox::TenantSettings;
    use crate::server::ctx;
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
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
    use crate::model::accounts::Role;
    use crate::server::ctx;
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
    use crate::model::accounts::Role;
    use crate::server::{ctx, domain::inbox::views};
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    views::save_draft(&state.inbox, &user.name, &p, state.clock.now()).await?;
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
    use crate::model::accounts::Role;
    use crate::model::inbox::Receipt;
    use crate::server::ctx;
    use crate::server::domain::idempotency::KeyInputs;
    use crate::server::domain::inbox::views;
    use crate::server::forms::{self, Submission};
    let user = ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    let found = views::draft(&state.inbox, &user.name, &tenant, &draft, now)
        .await?
        .ok_or_else(|| {
            AppError::invalid(
                "draft",
                "This message is no longer here (drafts are kept for a day). Start a new message.",
            )
        })?;
    let p = found.form;
    if p.inbox.trim() != inbox.trim() {
        return Err(AppError::invalid(
            "inbox",
            "This message was written for another inbox.",
        ));
    }
    let url = draft_url(&p.tenant, &p.inbox, &p.idempotency_key);
    if let Some(r) = found.receipt {
        leptos_axum::redirect(&url);
        return Ok(format!(
            "Published {} to {} recipient(s).",
            r.message_id, r.recipients
        ));
    }
    let publish = views::parse_form(&p, &user.name)?;
    let sub = Submission {
        actor: &user.name,
        scope: "inbox.publish",
        form_key: &p.idempotency_key,
        values: KeyInputs::new()
            .id("tenant", p.tenant.trim())
            .id("inbox", p.inbox.trim())
            .text("audience", &format!("{:?}", publish.uids))
            .id("category", publish.category.clone().unwrap_or_default())
            .text("title", &publish.title)
            .text("body", &publish.body)
            .text("cta", publish.cta_uri.as_deref().unwrap_or_default())
            .id("ttl", publish.ttl.clone().unwrap_or_default()),
    };
    let done = forms::once(&state, sub, |attempt| {
        let (state, p, publish) = (&state, &p, &publish);
        async move {
            let out = state
                .inbox
                .publish(&p.tenant, &p.inbox, publish, &attempt.key_hash, now)
                .await?;
            Ok(serde_json::json!({"ok": true, "data": {
                "message_id": out.message_id,
                "recipients": out.recipients,
                "published_at": now.to_rfc3339(),
            }}))
        }
    })
    .await?;
    let data = done.data.unwrap_or_default();
    let receipt = Receipt {
        message_id: data["message_id"].as_str().unwrap_or_default().to_string(),
        recipients: data["recipients"].as_i64().unwrap_or(0),
        published_at: data["published_at"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    views::draft_published(&state.inbox, &user.name, &p, &receipt).await?;
    tracing::info!(actor = %user.name, message = %receipt.message_id, "published from the console");
    leptos_axum::redirect(&url);
    Ok(format!(
        "Published {} to {} recipient(s).",
        receipt.message_id, receipt.recipients
    ))
}

/// The feed and counts a user sees.
#[server]
pub async fn load_user_view(
    tenant: String,
    inbox: String,
    uid: String,
    cursor: Option<String>,
) -> Result<UserView, AppError> {
    use crate::model::accounts::Role;
    use crate::server::ctx;
    use crate::server::domain::inbox::feed::PAGE_SIZE;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    let feed = state
        .inbox
        .feed(&tenant, &inbox, &uid, cursor.as_deref(), PAGE_SIZE, now)
        .await?;
    let counts = state.inbox.counts(&tenant, &inbox, &uid).await?;
    Ok(UserView {
        feed,
        counts,
        can_write: user.role.allows(Role::Operator),
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
    use crate::model::accounts::Role;
    use crate::server::ctx;
    ctx::require(Role::Operator)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    if message_id.trim().is_empty() {
        let n = state
            .inbox
            .mark_all_read(&tenant, &inbox, &uid, now)
            .await?;
        return Ok(format!("Marked {n} message(s) read."));
    }
    state
        .inbox
        .mark_read(&tenant, &inbox, &uid, &message_id, now)
        .await?;
    Ok("Marked read.".into())
}
