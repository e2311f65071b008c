//! One conversation's timeline (docs/events.md, "A conversation's timeline"): its events
//! oldest first, each with its message id, duplicate deliveries, decision, and side effects
//! read from their own records — so "sent" and "delivered" are said only when they happened.

use std::collections::HashMap;

use crate::model::events::{Timeline, TimelineEffect, TimelineEntry};
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::services::conversations::reference::Refs;
use crate::server::store::events::{self as records, ActionRecord, ActionStatus, EventRecord};

use super::pages::required_conversation;
use super::Events;
use crate::server::domain::events::decision::Decision;

/// Events a timeline shows (the newest).
const EVENTS: i32 = 50;
/// Side effects read for them, at most (five each, more than a decision plans).
const MAX_EFFECTS: usize = 250;

/// What people call a side effect: "Route to billing".
fn what(action_type: &str, target: &str) -> String {
    match action_type {
        "route" => format!("Route to {target}"),
        "tag" => format!("Tag {target}"),
        "assign" => format!("Assign to {target}"),
        "auto_reply" => format!("Auto-reply “{}”", target.replace('_', " ")),
        "escalate" => format!("Escalate to {target}"),
        other => format!("{} {target}", other.replace('_', " ")),
    }
}

/// Where a side effect is, in one word and in a sentence.
pub fn state_of(a: &ActionRecord) -> (&'static str, String) {
    let last = a.tries.last().map(|t| t.result.clone()).unwrap_or_default();
    let tries = |n: i64| {
        if n == 1 {
            "1 attempt".to_string()
        } else {
            format!("{n} attempts")
        }
    };
    match a.status {
        ActionStatus::Queued => ("queued", "Queued: not sent yet.".into()),
        ActionStatus::Claimed => ("sending", "Being sent now.".into()),
        ActionStatus::Retry if a.unknown => (
            "sent",
            format!(
                "Sent, no answer ({last}); it goes again with the same webhook-id after {}.",
                tries(a.attempts)
            ),
        ),
        ActionStatus::Retry => (
            "failed",
            format!(
                "Failed ({last}) after {}; it will be tried again.",
                tries(a.attempts)
            ),
        ),
        ActionStatus::Held => (
            "held",
            format!(
                "Held ({}): not sent until an operator releases it.",
                a.held_reason
                    .as_deref()
                    .unwrap_or("by an operator")
                    .replace('_', " ")
            ),
        ),
        ActionStatus::Delivered => (
            "delivered",
            format!(
                "Delivered: the receiver took it ({last}), after {}.",
                tries(a.attempts)
            ),
        ),
        ActionStatus::Dead | ActionStatus::Rejected => (
            "dead",
            format!("Dead letter after {} ({last}).", tries(a.attempts)),
        ),
        ActionStatus::Discarded => ("discarded", "Discarded by an operator: never sent.".into()),
    }
}

impl Events {
    /// The timeline of the conversation `conversation` (an id or its reference).
    pub async fn timeline(&self, refs: &Refs, conversation: &str) -> Result<Timeline, AppError> {
        let conversation = &required_conversation(refs, conversation)?;
        let page = records::events_of_conversation(&self.store, conversation, None, EVENTS).await?;
        let mut events = page.items;
        events.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        let decisions: Vec<Option<Decision>> = events
            .iter()
            .map(|e| {
                e.decision
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d).ok())
            })
            .collect();
        // BatchGetItem refuses a request that names a key twice.
        let mut keys: Vec<String> = decisions
            .iter()
            .flatten()
            .flat_map(|d| d.actions.iter().map(|a| a.key.clone()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.truncate(MAX_EFFECTS);
        let actions: HashMap<String, ActionRecord> = records::get_actions(&self.store, keys)
            .await?
            .into_iter()
            .map(|a| (a.event_id.clone(), a))
            .collect();
        let entries = events
            .into_iter()
            .zip(decisions)
            .map(|(e, d)| entry(e, d, &actions))
            .collect();
        Ok(Timeline {
            entries,
            older: page.next_cursor.is_some(),
        })
    }
}

fn entry(
    e: EventRecord,
    d: Option<Decision>,
    actions: &HashMap<String, ActionRecord>,
) -> TimelineEntry {
    let decision = match &d {
        Some(d) => {
            let mut line = format!("Decided “{}” for {}", d.intent.replace('_', " "), d.team);
            line.push_str(&format!(" ({:.0} % sure)", d.confidence * 100.0));
            if e.safe_mode {
                line.push_str(", in safe mode");
            }
            if !e.automation_enabled {
                line.push_str(", automation off");
            }
            line
        }
        None => "Not decided yet.".into(),
    };
    let effects = d
        .iter()
        .flat_map(|d| d.actions.iter())
        .map(|p| {
            let what = what(p.action_type.as_str(), &p.target);
            match actions.get(&p.key) {
                Some(a) => {
                    let (state, words) = state_of(a);
                    TimelineEffect {
                        what,
                        state: state.into(),
                        words: redact::redact(&words),
                        attempts: a.attempts,
                        at: a.updated_at.clone(),
                    }
                }
                None => TimelineEffect {
                    what,
                    state: "not queued".into(),
                    words: if e.safe_mode {
                        "Not queued: safe mode was on.".into()
                    } else {
                        "Not queued.".into()
                    },
                    attempts: 0,
                    at: e.created_at.clone(),
                },
            }
        })
        .collect();
    TimelineEntry {
        at: e.created_at,
        message_id: e.source_message_id.map(|m| redact::redact(&m)),
        duplicates: e.duplicates,
        decision,
        effects,
    }
}
