//! `POST /find`: the console's search and filter forms (Conversations, Events, Audit) post
//! what a person typed here, and get redirected to the page with the conversation or the
//! recipient as a link reference. A typed conversation id or recipient can be a phone
//! number or an email; posted, it never lands in the URL, the browser history, a link on
//! the page or a proxy's log.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use serde::Deserialize;

use crate::model::accounts::CurrentUser;
use crate::server::state::AppState;
use crate::ui::components::links::enc;

#[derive(Debug, Default, Deserialize)]
pub struct FindForm {
    /// `conversations`, `events` or `audit`.
    #[serde(default)]
    pub page: String,
    #[serde(default)]
    pub recipient: String,
    /// The recipient of the search on screen (a reference), kept when the box is left
    /// empty.
    #[serde(default)]
    pub recipient_ref: String,
    #[serde(default)]
    pub company: String,
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
}

pub async fn find(
    State(state): State<AppState>,
    user: Option<axum::Extension<CurrentUser>>,
    Form(f): Form<FindForm>,
) -> Response {
    if user.is_none() {
        return (StatusCode::SEE_OTHER, [(header::LOCATION, "/login")]).into_response();
    }
    let page = match f.page.as_str() {
        "events" => "events",
        "conversations" => "conversations",
        _ => "audit",
    };
    let reference = |typed: &str| {
        let typed = typed.trim();
        if typed.is_empty() {
            String::new()
        } else {
            state.refs.of_id(&state.refs.resolve(typed))
        }
    };
    let mut query = Vec::new();
    if page == "conversations" {
        query.extend([
            (
                "recipient",
                if f.recipient.trim().is_empty() {
                    f.recipient_ref.trim().to_string()
                } else {
                    reference(&f.recipient)
                },
            ),
            ("company", f.company.trim().to_string()),
            ("project", f.project.trim().to_string()),
            ("company_number", f.company_number.trim().to_string()),
            ("channel", f.channel.trim().to_string()),
            ("status", f.status.trim().to_string()),
            ("task", f.task.trim().to_string()),
            ("from", f.from.trim().to_string()),
            ("to", f.to.trim().to_string()),
        ]);
    } else {
        let conversation = if f.conversation.trim().is_empty() {
            f.conversation_ref.trim().to_string()
        } else {
            reference(&f.conversation)
        };
        query.push(("conversation", conversation));
    }
    if page == "audit" {
        query.extend([
            ("action_type", f.action_type.trim().to_string()),
            ("day", f.day.trim().to_string()),
            ("from", f.from.trim().to_string()),
            ("to", f.to.trim().to_string()),
        ]);
    }
    let qs: Vec<String> = query
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", enc(&v)))
        .collect();
    let location = if qs.is_empty() {
        format!("/{page}")
    } else {
        format!("/{page}?{}", qs.join("&"))
    };
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}
