use leptos::prelude::*;

use crate::model::conversations::{CompanyChoice, ConversationDetail, SearchPage, SearchQuery};
use crate::model::AppError;

/// Searches conversations: by recipient (phone or email), by company (and project), or by
/// company sending number (and recipient); filtered by status, channel, task complete and
/// creation date; `after`/`before` are page cursors.
#[server]
pub async fn search_conversations(query: SearchQuery) -> Result<SearchPage, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let mut query = query;
    // The page's links carry the recipient as a reference (a phone or an email is not
    // for URLs); a recipient typed into the URL works too, counted as the person's lookup.
    let refs = state
        .answer_refs(&me.name, &[&query.recipient, &query.conversation], &[])
        .await?;
    query.recipient = refs.given(&query.recipient).into_id();
    query.conversation = refs.given(&query.conversation).into_id();
    // A company typed into the search box that the directory did not know comes as a
    // reference (it may be a mistyped phone number); a company's link carries its id.
    query.company = refs.given_company(&query.company);
    let now = state.clock.now();
    let mut page = state.conversations.search_page(&refs, &query, now).await?;
    if !query.recipient.trim().is_empty() {
        page.recipient = Some(crate::server::domain::redact::conversation_id(
            &query.recipient,
        ));
    }
    Ok(page)
}

/// The companies the search box suggests (the company directory): names and ids.
#[server]
pub async fn company_suggestions() -> Result<Vec<CompanyChoice>, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let now = state.clock.now().timestamp();
    state.conversations.directory.suggestions(now).await
}

/// One conversation, as the signed-in user's role may see it.
#[server]
pub async fn load_conversation(r: String) -> Result<ConversationDetail, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    state
        .conversations
        .detail(&state.refs.for_answer(), &r, &user.name, user.role, now)
        .await
}

/// An admin reveals a conversation's contact details, with a reason (audited).
#[server]
pub async fn reveal_contact(
    r: String,
    reason: String,
    idempotency_key: String,
) -> Result<(), AppError> {
    use crate::api::submission::{self, Submission};
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::conversations::view::{self, Reveal};
    use crate::server::services::idempotency::KeyInputs;
    let admin = ctx::require(Role::Admin)?;
    let state = ctx::state()?;
    // Bad input is answered before the form's key is claimed: fixing it and submitting
    // again is a new attempt.
    view::check_reason(&reason)?;
    let sub = Submission {
        actor: &admin.name,
        scope: "conversations.reveal",
        form_key: &idempotency_key,
        values: KeyInputs::new().id("r", r.trim()).text("reason", &reason),
    };
    let now = state.clock.now();
    // The audit record and the form's key in one transaction.
    submission::once_writes(&state, sub, |attempt| {
        let (state, r, reason, admin) = (&state, &r, &reason, &admin.name);
        async move {
            let req = Reveal {
                r,
                reason,
                admin,
                idempotency_key: &attempt.key_hash,
            };
            let writes = state.conversations.reveal(&state.refs, &req, now).await?;
            Ok((writes, serde_json::json!({"ok": true})))
        }
    })
    .await?;
    tracing::info!(actor = %admin.name, "contact details revealed");
    Ok(())
}
