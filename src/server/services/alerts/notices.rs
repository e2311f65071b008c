//! Notices: one-off messages to the alert channels about something the console did on its
//! own (a timed kill-switch change ended). Unlike an alert, a notice has no state to follow:
//! it is sent once by the console that did the thing, with an id a channel can drop a
//! repeat by.

use axum::body::Bytes;
use chrono::SecondsFormat;
use serde_json::json;

use super::{slack_escaped, Alerts};
use crate::server::outbound::{parse_url, Answer, Message};

impl Alerts {
    /// Sends `summary` to every configured channel under `id`, linking to `page`. A
    /// channel that does not take it is logged; the history keeps what happened either way.
    pub async fn notify(&self, id: &str, summary: &str, page: &str) {
        let now = self.clock.now();
        let link = self.link(page);
        let generic = json!({
            "id": id,
            "notice": id.split('#').next().unwrap_or(id),
            "state": "notice",
            "summary": summary,
            "link": link,
            "at": now.to_rfc3339_opts(SecondsFormat::Secs, true),
        });
        let mut text = format!(
            "[ops-console {}] NOTICE: {}",
            self.config.env,
            slack_escaped(summary)
        );
        if !link.is_empty() {
            text.push_str(&format!(" <{link}|Open the page>"));
        }
        let channels = &self.config.alerts;
        for (url, body) in [
            (&channels.webhook_url, generic),
            (&channels.slack_url, json!({ "text": text })),
        ] {
            if url.is_empty() {
                continue;
            }
            let Ok(uri) = parse_url(url) else { continue };
            let message = Message {
                id,
                timestamp: now.timestamp(),
                body: Bytes::from(body.to_string()),
            };
            let answer = self.sender.send(&uri, &[], &message).await;
            if !matches!(answer, Answer::Delivered(_)) {
                tracing::warn!(notice = %id, answer = %answer.describe(), "an alert channel did not take a notice");
            }
        }
    }
}
