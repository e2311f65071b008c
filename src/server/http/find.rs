//! `POST /find`: the console's search and filter forms (Conversations, Events, Audit,
//! Measurements, an inbox's user) post what a person typed here, and get redirected to the
//! page with the conversation, the recipient or the user as a link reference. A typed
//! conversation id, recipient or user id can be a phone number or an email; posted, it
//! never lands in the URL, the browser history, a link on the page or a proxy's log.
//!
//! What was typed (not a reference a page made) is a lookup by a phone number, an email or
//! an id: it is counted against the person, and past their limit refused with a page that
//! says so (`Users::count_lookup`). The references in the redirect are new ones
//! (`Refs::for_answer`): comparing one with a page's says nothing.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use serde::Deserialize;

use crate::model::pages::query_value as enc;
use crate::model::users::CurrentUser;
use crate::model::AppError;
use crate::server::services::conversations::reference::Refs;
use crate::server::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct FindForm {
    /// `conversations`, `events`, `audit`, `measurements`, `attempts` (the Audit page's
    /// measurement attempts) or `inbox-user`.
    #[serde(default)]
    pub page: String,
    /// The Conversations page's one search box: a conversation id, a recipient's phone or
    /// email, or a company's id or name.
    #[serde(default)]
    pub q: String,
    /// The recipient of the search on screen (a reference), kept when the box is left
    /// empty.
    #[serde(default)]
    pub recipient_ref: String,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub company_number: String,
    #[serde(default)]
    pub channel: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub conversation: String,
    /// The conversation of the filter on screen (a reference), kept when the box is left
    /// empty.
    #[serde(default)]
    pub conversation_ref: String,
    #[serde(default)]
    pub action_type: String,
    #[serde(default)]
    pub day: String,
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
    /// The reader's offset from UTC in minutes, for the day and times.
    #[serde(default)]
    pub tz: String,
    /// A measurements user id, or an inbox's user id, as typed.
    #[serde(default)]
    pub user: String,
    /// The user on screen (a reference), kept when the box is left empty.
    #[serde(default)]
    pub user_ref: String,
    #[serde(default)]
    pub outcome: String,
    #[serde(default)]
    pub window: String,
    #[serde(default)]
    pub tenant: String,
    #[serde(default)]
    pub inbox: String,
}

/// Redirects to the page the form names with what was typed as link references. Not signed
/// in: to the sign-in page.
pub async fn find(
    State(state): State<AppState>,
    user: Option<axum::Extension<CurrentUser>>,
    Form(f): Form<FindForm>,
) -> Response {
    let Some(axum::Extension(me)) = user else {
        return see_other("/login".to_string());
    };
    let q = match typed(&f.q) {
        Typed::Conversation(_) | Typed::Recipient(_) => f.q.as_str(),
        Typed::Nothing | Typed::Company(_) => "",
    };
    let conversations = [q, &f.conversation, &f.conversation_ref, &f.recipient_ref];
    let users = [f.user.as_str(), &f.user_ref];
    let refs = match state.answer_refs(&me.name, &conversations, &users).await {
        Ok(refs) => refs,
        Err(e) => return refused(&e),
    };
    let company = match typed(&f.q) {
        Typed::Company(c) => match company(&state, &refs, c).await {
            Ok(company) => company,
            Err(e) => return refused(&e),
        },
        _ => String::new(),
    };
    let (page, query) = destination(&refs, &f, company);
    see_other(location(page, query))
}

/// A company typed into the search box, as the address carries it: the id of a company the
/// directory knows by that id or name; anything else (a mistyped phone number or email
/// among them) as a reference, never as typed.
async fn company(state: &AppState, refs: &Refs, typed: &str) -> Result<String, AppError> {
    use crate::server::services::conversations::directory::Resolved;
    let now = state.clock.now().timestamp();
    Ok(
        match state.conversations.directory.resolve(typed, now).await? {
            Resolved::One(c) => c.company_id,
            Resolved::Several(_) | Resolved::Unknown => refs.company(typed),
        },
    )
}

/// A lookup refused (past the person's limit, or DynamoDB busy): a page that says why,
/// with the status and `Retry-After` the error carries.
fn refused(e: &AppError) -> Response {
    let retry = match e {
        AppError::Limited {
            retry_after_secs, ..
        }
        | AppError::Unavailable { retry_after_secs } => *retry_after_secs,
        _ => 1,
    };
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let text: String = e
        .to_string()
        .chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            c => c.to_string(),
        })
        .collect();
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Search refused</title></head><body><main>\
         <h1>Search refused</h1><p role=\"alert\">{text}</p>\
         <p><a href=\"/\">Back to the console</a></p></main></body></html>"
    );
    (
        status,
        [(header::RETRY_AFTER, retry.to_string())],
        Html(body),
    )
        .into_response()
}

/// The page a form leads to, and its query: what was typed as references.
fn destination(
    refs: &Refs,
    f: &FindForm,
    company: String,
) -> (&'static str, Vec<(&'static str, String)>) {
    // A typed conversation id or recipient, as the reference of its id.
    let reference = |typed: &str| {
        let typed = typed.trim();
        if typed.is_empty() {
            String::new()
        } else {
            refs.of_id(refs.given(typed).id())
        }
    };
    // A typed user id, as its reference (the one on screen when the box was left empty).
    let typed_user = if f.user.trim().is_empty() {
        &f.user_ref
    } else {
        &f.user
    };
    let user = refs.user(refs.given_user(typed_user).id());
    match f.page.as_str() {
        "conversations" => ("conversations", conversations_query(f, reference, company)),
        "events" => ("events", vec![("conversation", conversation(f, reference))]),
        "measurements" => (
            "measurements",
            vec![
                ("user", user),
                ("outcome", f.outcome.trim().to_string()),
                ("window", f.window.trim().to_string()),
            ],
        ),
        "attempts" => (
            "audit",
            vec![
                ("m_user", user),
                ("m_outcome", f.outcome.trim().to_string()),
            ],
        ),
        "inbox-user" => (
            "inbox/user",
            vec![
                ("tenant", f.tenant.trim().to_string()),
                ("inbox", f.inbox.trim().to_string()),
                ("uid", user),
            ],
        ),
        _ => {
            let mut q = vec![("conversation", conversation(f, reference))];
            q.extend(audit_filters(f));
            ("audit", q)
        }
    }
}

fn see_other(location: String) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

/// The Conversations page's search: what the box holds (a conversation id or a recipient
/// as a reference; a company as its id or a reference; the search on screen when the box
/// was left empty), and the rest as typed.
fn conversations_query(
    f: &FindForm,
    reference: impl Fn(&str) -> String,
    company: String,
) -> Vec<(&'static str, String)> {
    let (mut conversation, mut recipient) = (String::new(), String::new());
    match typed(&f.q) {
        // The hidden fields are sealed again: a value a client put there raw never
        // reaches the URL.
        Typed::Nothing => {
            conversation = reference(&f.conversation_ref);
            recipient = reference(&f.recipient_ref);
        }
        Typed::Conversation(id) => conversation = reference(id),
        Typed::Recipient(r) => recipient = reference(&r),
        // Resolved on the server (`company`).
        Typed::Company(_) => {}
    }
    vec![
        ("conversation", conversation),
        ("recipient", recipient),
        ("company", company),
        ("project", f.project.trim().to_string()),
        ("company_number", f.company_number.trim().to_string()),
        ("channel", f.channel.trim().to_string()),
        ("status", f.status.trim().to_string()),
        ("task", f.task.trim().to_string()),
        ("from", f.from.trim().to_string()),
        ("to", f.to.trim().to_string()),
    ]
}

/// What the one search box holds.
#[derive(Debug, PartialEq)]
enum Typed<'a> {
    Nothing,
    /// Conversation ids join their parts with `#`.
    Conversation(&'a str),
    /// An email, or a phone number (with `+` added when it was typed without).
    Recipient(String),
    /// Anything else: a company id or name.
    Company(&'a str),
}

fn typed(q: &str) -> Typed<'_> {
    let q = q.trim();
    if q.is_empty() {
        return Typed::Nothing;
    }
    if q.contains('#') {
        return Typed::Conversation(q);
    }
    if q.contains('@') {
        return Typed::Recipient(q.to_string());
    }
    let compact = crate::server::services::conversations::search::compact_phone(q);
    let digits = compact.strip_prefix('+').unwrap_or(&compact);
    if (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Typed::Recipient(format!("+{digits}"));
    }
    Typed::Company(q)
}

/// The Events and Audit pages' conversation filter, as a reference (the one on screen
/// when the box was left empty).
fn conversation(f: &FindForm, reference: impl Fn(&str) -> String) -> String {
    if f.conversation.trim().is_empty() {
        reference(&f.conversation_ref)
    } else {
        reference(&f.conversation)
    }
}

/// The Audit page's other filters, as typed.
fn audit_filters(f: &FindForm) -> [(&'static str, String); 5] {
    [
        ("action_type", f.action_type.trim().to_string()),
        ("day", f.day.trim().to_string()),
        ("from", f.from.trim().to_string()),
        ("to", f.to.trim().to_string()),
        ("tz", f.tz.trim().to_string()),
    ]
}

/// `/{page}` with the non-empty parameters of `query`, URL-encoded.
fn location(page: &str, query: Vec<(&'static str, String)>) -> String {
    let qs: Vec<String> = query
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", enc(&v)))
        .collect();
    if qs.is_empty() {
        format!("/{page}")
    } else {
        format!("/{page}?{}", qs.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_box_tells_ids_recipients_and_companies_apart() {
        assert_eq!(typed("  "), Typed::Nothing);
        assert_eq!(
            typed("ci-aaa-001#pi-aaa-001#req1#447123456789"),
            Typed::Conversation("ci-aaa-001#pi-aaa-001#req1#447123456789")
        );
        assert_eq!(
            typed(" Jane@Example.com "),
            Typed::Recipient("Jane@Example.com".into())
        );
        assert_eq!(
            typed("+44 7123 456-789"),
            Typed::Recipient("+447123456789".into())
        );
        assert_eq!(
            typed("447123456789"),
            Typed::Recipient("+447123456789".into())
        );
        assert_eq!(typed("ci-aaa-001"), Typed::Company("ci-aaa-001"));
        assert_eq!(typed("Cucumber"), Typed::Company("Cucumber"));
    }
}
