//! The idempotency engine's health, as the monitoring page shows it.

use serde::{Deserialize, Serialize};

use super::percent;

/// Counters of one scope over a window (or one hour).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub requests: u64,
    pub fresh: u64,
    pub replayed: u64,
    pub in_progress: u64,
    pub takeovers: u64,
    pub retries: u64,
    /// Operations that failed (5xx, a dependency, an answer that could not be stored).
    pub failures: u64,
    pub mismatches: u64,
    /// Requests the operation refused on purpose, as the client's own business (a 409 for
    /// the same id with another payload, a 4xx refusal before any write): not failures.
    #[serde(default)]
    pub client_errors: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.fresh += o.fresh;
        self.replayed += o.replayed;
        self.in_progress += o.in_progress;
        self.takeovers += o.takeovers;
        self.retries += o.retries;
        self.failures += o.failures;
        self.mismatches += o.mismatches;
        self.client_errors += o.client_errors;
    }

    /// Replays among all requests.
    pub fn cache_hit_pct(&self) -> Option<f64> {
        percent(self.replayed, self.requests)
    }

    /// Takeovers of stale claims among the operations run.
    pub fn stale_takeover_pct(&self) -> Option<f64> {
        percent(self.takeovers, self.fresh)
    }

    /// Failed operations among the operations run.
    pub fn failure_pct(&self) -> Option<f64> {
        percent(self.failures, self.fresh)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// `stale_takeover`, `cache_hit` or `failure`.
    pub name: String,
    pub label: String,
    pub value: Option<f64>,
    pub threshold: f64,
    /// `true`: alert when above the threshold; `false`: when below.
    pub above: bool,
    pub breached: bool,
}

impl Alert {
    /// Where the rate stands against its threshold: `breached`; `near` (within a fifth of
    /// it); `fine`; `off` (a "below" threshold of 0 is no alert); `none` (no data).
    pub fn standing(&self) -> &'static str {
        let Some(v) = self.value else { return "none" };
        let t = self.threshold;
        if !self.above && t <= 0.0 {
            "off"
        } else if self.breached {
            "breached"
        } else if (self.above && v >= t * 0.8) || (!self.above && v <= t * 1.25) {
            "near"
        } else {
            "fine"
        }
    }

    /// The text colour of its standing.
    pub fn colour(&self) -> &'static str {
        match self.standing() {
            "breached" => "text-red-800",
            "near" => "text-amber-800",
            "fine" => "text-emerald-800",
            _ => "text-slate-800",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HourPoint {
    /// `YYYY-MM-DDTHH` (UTC)
    pub hour: String,
    pub counts: Counts,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeHealth {
    pub scope: String,
    pub totals: Counts,
    /// Every hour of the window, oldest first, zeros included.
    pub series: Vec<HourPoint>,
    pub alerts: Vec<Alert>,
    /// Alerts are judged only when the window has this many requests.
    pub min_requests: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// `24h` or `7d`
    pub window: String,
    pub scopes: Vec<ScopeHealth>,
}

/// A key, as the lists and the detail view show it: never its inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeySummary {
    pub id: String,
    pub tenant: String,
    pub scope: String,
    pub key_hash: String,
    pub status: String,
    pub attempts: u32,
    pub created_at: String,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub updated_at: String,
    pub expires_at: String,
    pub expired: bool,
    pub stop_reason: Option<String>,
    /// The stored, sanitized response (detail view only).
    pub response_json: Option<String>,
    pub response_status: Option<u16>,
    /// The name of the API key that sent it (REST keys; the key's page only).
    #[serde(default)]
    pub api_key: Option<String>,
    /// The page of what its operation made or changed (the key's page only).
    #[serde(default)]
    pub resource: Option<KeyLink>,
}

/// A link from a key to a page of the console.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyLink {
    pub label: String,
    pub href: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyPage {
    pub keys: Vec<KeySummary>,
    pub next_cursor: Option<String>,
}

/// What a scope's operation is, in words, and where its requests come from: one operation
/// reads the same whether the console's form or the REST API ran it (`inbox.publish` and
/// `http:POST …/messages` are both "Publish to an inbox"). A scope not named here reads as
/// itself.
pub fn operation(scope: &str) -> (String, &'static str) {
    const REST: &str = "REST API";
    const CONSOLE: &str = "console";
    let named = |name: &str, via| (name.to_string(), via);
    let Some(route) = scope.strip_prefix("http:") else {
        return match scope {
            "inbox.publish" => named("Publish to an inbox", CONSOLE),
            "kill_switches.change" => named("Change a kill switch", CONSOLE),
            "kill_switches.trip" => named("Attach or remove a kill switch's trip", CONSOLE),
            "kill_switches.rotate_trigger" => named("Make a kill switch's trigger URL", CONSOLE),
            "kill_switches.revoke_trigger" => named("Revoke a kill switch's trigger URL", CONSOLE),
            "conversations.reveal" => named("Reveal a conversation's text", CONSOLE),
            "accounts.add_user" => named("Add a user", CONSOLE),
            "accounts.reset_password" => named("Reset a password", CONSOLE),
            "accounts.create_api_key" => named("Create an API key", CONSOLE),
            "accounts.revoke_api_key" => named("Revoke an API key", CONSOLE),
            other => (other.to_string(), CONSOLE),
        };
    };
    let name = match route {
        "POST /api/v1/events" => "Receive a helpdesk event",
        "POST /api/v1/kill-switches" => "Change a kill switch",
        "POST /api/v1/kill-switches/schedule/cancel" => "Cancel a scheduled kill-switch change",
        "POST /api/v1/conversations" => "Create a conversation",
        "POST /api/v1/conversations/{primary_channel}/{conversation_id}/messages" => {
            "Add a message to a conversation"
        }
        "PATCH /api/v1/conversations/{primary_channel}/{conversation_id}" => {
            "Change a conversation"
        }
        "PUT /api/v1/inbox/tenants/{tenant}" => "Set up an inbox tenant",
        "PUT /api/v1/inbox/tenants/{tenant}/inboxes/{inbox}" => "Set up an inbox",
        "POST /api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/messages" => "Publish to an inbox",
        "POST /api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/messages/{message_id}/read" => {
            "Mark an inbox message read"
        }
        "POST /api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/users/{uid}/read-all" => {
            "Mark a user's inbox read"
        }
        "POST /api/v1/measurements" => "Post a measurement",
        "POST /api/v1/measurements/batch" => "Post measurements in a batch",
        r if r.starts_with("POST /api/v1/receiver/") => "Change the receiver",
        other => return (other.to_string(), REST),
    };
    named(name, REST)
}

#[cfg(test)]
mod operation_tests {
    use super::operation;

    #[test]
    fn one_operation_reads_the_same_from_the_console_and_the_api() {
        let console = operation("inbox.publish");
        let api = operation("http:POST /api/v1/inbox/tenants/{tenant}/inboxes/{inbox}/messages");
        assert_eq!(console.0, api.0);
        assert_eq!((console.1, api.1), ("console", "REST API"));
        assert_eq!(
            operation("kill_switches.change").0,
            operation("http:POST /api/v1/kill-switches").0
        );
        assert_eq!(operation("http:GET /x"), ("GET /x".to_string(), "REST API"));
    }
}
