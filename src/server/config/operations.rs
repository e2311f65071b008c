//! The `[operations]` and `[alerts]` sections: running it in production (docs/operations.md).

use serde::{Deserialize, Serialize};

/// Running it in production (docs/operations.md): metrics, the public address, the
/// networks the console's own requests may reach, how long a request may take.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OperationsSection {
    /// A second address serving only `/metrics`, without an API key (for a scraper inside
    /// the network); empty: none, and `/metrics` on the main address needs `metrics:read`.
    pub metrics_listen: String,
    /// The console's address as people reach it, for links in alerts (empty: none).
    pub public_url: String,
    /// Networks outside the public internet that the console's own requests (the
    /// receiver, alerts) may go to, comma-separated CIDRs (`10.20.0.0/16, fd00::/8`); empty:
    /// the public internet only.
    pub outbound_allowed_networks: String,
    /// How long a request may take, in milliseconds, before it is answered 503 with
    /// `Retry-After` (its work goes on, as if its client had given up). At most 25 s:
    /// below the load balancer's idle timeout (60 s) and a leaving task's deregistration
    /// delay (30 s) in the service template, so a slow DynamoDB is a clear "try again"
    /// and never a dropped connection.
    pub request_deadline_ms: i64,
}

/// The longest request deadline: below the service template's deregistration delay
/// (30 s) and the load balancer's idle timeout (60 s), which `deploy` asserts.
pub const MAX_REQUEST_DEADLINE_MS: i64 = 25_000;

impl Default for OperationsSection {
    fn default() -> Self {
        OperationsSection {
            metrics_listen: String::new(),
            public_url: String::new(),
            outbound_allowed_networks: String::new(),
            request_deadline_ms: 20_000,
        }
    }
}

/// The console's alerter (docs/operations.md, "Alerts"): where alerts go and how often a
/// console judges the rules. The thresholds live with what they watch: the
/// `alert_*` settings of `[idempotency]` (per scope in `[idempotency.scopes."…"]`) and of
/// `[measurements]`; the outbox's (dead letters, a failing receiver) are fixed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertsSection {
    /// Where alerts go as JSON (empty: nowhere).
    pub webhook_url: String,
    /// A Slack incoming webhook for alerts (empty: none).
    pub slack_url: String,
    /// How often a console judges the alert rules, in seconds.
    pub check_seconds: i64,
}

impl Default for AlertsSection {
    fn default() -> Self {
        AlertsSection {
            webhook_url: String::new(),
            slack_url: String::new(),
            check_seconds: 60,
        }
    }
}

/// Four eyes on the kill switches (docs/switches.md, "Approvals").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchesSection {
    /// Turning safe mode off or automation on waits for a second admin's approval.
    /// Unset: on in staging and prod, off in dev.
    pub require_approval: Option<bool>,
    /// How long a request waits for its approval, in minutes.
    pub approval_minutes: i64,
    /// The admins (user names, comma-separated) who may skip the approval in an emergency;
    /// each use is marked in the history and raises an alert. Empty: nobody.
    pub emergency_admins: String,
}

impl Default for SwitchesSection {
    fn default() -> Self {
        SwitchesSection {
            require_approval: None,
            approval_minutes: 60,
            emergency_admins: String::new(),
        }
    }
}

impl SwitchesSection {
    /// The section with `require_approval` always set: unset, it follows `env` (on
    /// outside dev).
    pub fn resolved(self, env: super::Environment) -> SwitchesSection {
        SwitchesSection {
            require_approval: Some(
                self.require_approval
                    .unwrap_or(env != super::Environment::Dev),
            ),
            ..self
        }
    }
}
