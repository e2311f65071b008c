//! What the rules decide for one event, as it is stored and shown: the mode the switches
//! allowed, the side effects asked for and their kinds. The rules that make one are in
//! `rules.rs`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::server::domain::events::state::PendingFlow;

/// What the automation switch allowed when an event was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Automation off: route, tag, assign, escalate; no auto-reply.
    #[serde(rename = "route_only")]
    RouteOnly,
    #[serde(rename = "automation_candidate")]
    AutomationCandidate,
}

impl Mode {
    pub fn of(automation_enabled: bool) -> Mode {
        if automation_enabled {
            Mode::AutomationCandidate
        } else {
            Mode::RouteOnly
        }
    }

    /// The stored string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::RouteOnly => "route_only",
            Mode::AutomationCandidate => "automation_candidate",
        }
    }
}

/// The kinds of side effect a decision can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActionType {
    #[serde(rename = "route")]
    Route,
    #[serde(rename = "tag")]
    Tag,
    #[serde(rename = "assign")]
    Assign,
    #[serde(rename = "auto_reply")]
    AutoReply,
    #[serde(rename = "escalate")]
    Escalate,
}

impl ActionType {
    /// Every kind, in the order pages list them.
    pub const ALL: [ActionType; 5] = [
        ActionType::Route,
        ActionType::Tag,
        ActionType::Assign,
        ActionType::AutoReply,
        ActionType::Escalate,
    ];

    /// The kind stored as `name`.
    pub fn named(name: &str) -> Option<ActionType> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The stored string, also the audit record's `action_type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionType::Route => "route",
            ActionType::Tag => "tag",
            ActionType::Assign => "assign",
            ActionType::AutoReply => "auto_reply",
            ActionType::Escalate => "escalate",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One side effect the decision asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedAction {
    pub action_type: ActionType,
    pub target: String,
    /// Its idempotency key (docs/events.md, "Side effects").
    pub key: String,
}

/// What the rules decided for one event. Holds no text: safe to store and show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub mode: Mode,
    pub intent: String,
    pub team: String,
    pub confidence: f64,
    pub tags: Vec<String>,
    pub risk_flags: Vec<String>,
    pub matched_rules: Vec<String>,
    #[serde(default)]
    pub auto_reply: Option<String>,
    #[serde(default)]
    pub escalate: Option<String>,
    /// The order flow after this event: `None` = no flow pending.
    #[serde(default)]
    pub pending_flow: Option<PendingFlow>,
    #[serde(default)]
    pub order_ref_last4: Option<String>,
    pub actions: Vec<PlannedAction>,
}

/// Switch positions the decision depends on.
#[derive(Clone, Copy, Debug)]
pub struct Switches {
    pub safe_mode: bool,
    pub automation_enabled: bool,
}

#[cfg(test)]
mod tests {
    use super::ActionType;

    #[test]
    fn the_pages_list_every_kind_as_stored() {
        let names: Vec<&str> = ActionType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names, crate::model::outbox::ACTION_TYPES);
        for t in ActionType::ALL {
            assert_eq!(ActionType::named(t.as_str()), Some(t));
        }
        assert_eq!(ActionType::named("shopify"), None);
    }
}
