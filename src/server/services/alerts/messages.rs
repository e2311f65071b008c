//! The messages to the alert channels: an alert's state (firing, resolved), and notices,
//! one-off messages about something the console did on its own (a timed kill-switch change
//! ended). Unlike an alert, a notice has no state to follow: it is sent once by the console
//! that did the thing, with an id a channel can drop a repeat by.

use axum::body::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::{slack_escaped, Alerts, Judged};
use crate::server::outbound::{parse_url, Answer, Message};
use crate::server::store::alerts::AlertItem;

impl Alerts {
    /// The message of `item`'s state: its id, the generic JSON and Slack's.
    pub(super) fn messages(
        &self,
        j: &Judged,
        item: &AlertItem,
        now: DateTime<Utc>,
    ) -> (String, Value, Value) {
        let id = format!("{}#{}#{}", j.id, item.episode, item.state);
        let link = self.link(j.page);
        let generic = json!({
            "id": id,
            "alert": j.id,
            "state": item.state,
            "summary": j.summary,
            "value": j.value,
            "threshold": j.threshold,
            "window": j.window,
            "sample": j.sample,
            "link": link,
            "since": item.since,
            "at": now.to_rfc3339_opts(SecondsFormat::Secs, true),
        });
        let word = if item.state == "firing" {
            "FIRING"
        } else {
            "RESOLVED"
        };
        let mut text = format!(
            "[ops-console {}] {word}: {}",
            self.config.env,
            slack_escaped(&j.summary)
        );
        if !link.is_empty() {
            text.push_str(&format!(" <{link}|Open the page>"));
        }
        let slack = json!({ "text": text });
        (id, generic, slack)
    }

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
                traceparent: None,
            };
            let answer = self.sender.send(&uri, &[], &message).await;
            if !matches!(answer, Answer::Delivered(_)) {
                tracing::warn!(notice = %id, answer = %answer.describe(), "an alert channel did not take a notice");
            }
        }
    }
}
