//! The `[operations]` section: running it in production (docs/operations.md).

use serde::{Deserialize, Serialize};

/// Running it in production (docs/operations.md): metrics and alerts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OperationsSection {
    /// A second address serving only `/metrics`, without an API key (for a scraper inside
    /// the network); empty: none, and `/metrics` on the main address needs `metrics:read`.
    pub metrics_listen: String,
    /// Where alerts go as JSON (empty: nowhere).
    pub alert_webhook_url: String,
    /// A Slack incoming webhook for alerts (empty: none).
    pub alert_slack_url: String,
    /// How often a console judges the alert rules, in seconds.
    pub alert_check_seconds: i64,
    /// The console's address as people reach it, for links in alerts (empty: none).
    pub public_url: String,
    /// Networks outside the public internet that the console's own requests (the
    /// receiver, alerts) may go to, comma-separated CIDRs (`10.20.0.0/16, fd00::/8`); empty:
    /// the public internet only.
    pub outbound_allowed_networks: String,
}

impl Default for OperationsSection {
    fn default() -> Self {
        OperationsSection {
            metrics_listen: String::new(),
            alert_webhook_url: String::new(),
            alert_slack_url: String::new(),
            alert_check_seconds: 60,
            public_url: String::new(),
            outbound_allowed_networks: String::new(),
        }
    }
}
