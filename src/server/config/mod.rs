//! Settings: typed sections with their defaults ([`sections`]), overridden by
//! `Leptos.toml` (or the file named by `OPS_CONFIG`), then by environment variables,
//! merged with figment and validated once at start-up. A bad setting stops the server with
//! a message that names it.
//!
//! Every setting `section.key` can be overridden by `OPS_<SECTION>_<KEY>` (e.g.
//! `OPS_DYNAMODB_ENDPOINT`); a few have conventional names too (`OPS_ENV`,
//! `DYNAMODB_ENDPOINT`, `AWS_REGION`, `IDEMPOTENCY_SECRET`, and the measurement variables of
//! the design).

mod auth;
mod events;
mod operations;
mod secret;
mod sections;
mod validate;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use figment::providers::Serialized;
use figment::Figment;

pub use auth::AuthSection;
pub use events::{check_limits, EventsSection, LimitsError, Rule};
pub use operations::{AlertsSection, OperationsSection, SwitchesSection, MAX_REQUEST_DEADLINE_MS};
pub use secret::Secret;
pub use sections::*;

/// Conventional names for settings people set most.
const ALIASES: &[(&str, &str)] = &[
    ("OPS_ENV", "app.environment"),
    ("DYNAMODB_ENDPOINT", "dynamodb.endpoint"),
    ("AWS_REGION", "dynamodb.region"),
    ("IDEMPOTENCY_SECRET", "idempotency.secret"),
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
    pub operations: OperationsSection,
    pub alerts: AlertsSection,
    /// `require_approval` is always set: unset in the file, it follows the environment.
    pub switches: SwitchesSection,
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
    pub(super) fn new(key: &str, message: impl Into<String>) -> Self {
        let alias = ALIASES.iter().find(|(_, k)| *k == key).map(|(n, _)| *n);
        ConfigError {
            key: key.to_string(),
            env_hint: format!(
                " (or env {})",
                alias.map_or_else(|| env_name(key), str::to_string)
            ),
            message: message.into(),
        }
    }

    /// A figment error, named by the setting it is about.
    fn of(e: figment::Error) -> ConfigError {
        use figment::error::Kind;
        let mut path = e.path.join(".");
        let message = match &e.kind {
            Kind::UnknownField(field, _) => {
                if !path.ends_with(field.as_str()) {
                    path = if path.is_empty() {
                        field.clone()
                    } else {
                        format!("{path}.{field}")
                    };
                }
                "unknown setting".to_string()
            }
            Kind::InvalidType(actual, expected) => format!("expected {expected}, found {actual}"),
            Kind::InvalidValue(actual, expected) => format!("`{actual}`: expected {expected}"),
            other => other.to_string(),
        };
        ConfigError::new(
            if path.is_empty() {
                "Leptos.toml"
            } else {
                &path
            },
            message,
        )
    }
}

fn env_name(key: &str) -> String {
    format!("OPS_{}", key.replace('.', "_").to_ascii_uppercase())
}

/// `OPS_<SECTION>_<KEY>` and the aliases, as `(section.key, value)`.
fn env_overrides(env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, key) in ALIASES {
        if let Some(v) = env.get(*name) {
            out.push((key.to_string(), v.clone()));
        }
    }
    for (name, value) in env {
        let Some(rest) = name.strip_prefix("OPS_") else {
            continue;
        };
        let lower = rest.to_ascii_lowercase();
        for section in SECTIONS {
            if let Some(key) = lower.strip_prefix(&format!("{section}_")) {
                out.push((format!("{section}.{key}"), value.clone()));
            }
        }
    }
    out
}

/// Settings that moved, with where they are now: a file or an environment that still sets
/// the old name is refused with the new one, not with "unknown field".
const MOVED: &[(&str, &str)] = &[
    ("operations.alert_webhook_url", "alerts.webhook_url"),
    ("operations.alert_slack_url", "alerts.slack_url"),
    ("operations.alert_check_seconds", "alerts.check_seconds"),
];

fn refuse_moved(file: &toml::Table, env: &[(String, String)]) -> Result<(), ConfigError> {
    for (old, new) in MOVED {
        let (section, key) = old.split_once('.').unwrap_or_default();
        let in_file = file
            .get(section)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key(key));
        let in_env = env.iter().any(|(k, _)| k == old);
        if in_file || in_env {
            return Err(ConfigError::new(
                old,
                format!("this setting moved: set {new} (env {})", env_name(new)),
            ));
        }
    }
    Ok(())
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
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        let overrides = env_overrides(env);
        if let Some(text) = file {
            let table: toml::Table =
                toml::from_str(text).map_err(|e| ConfigError::new("Leptos.toml", e.to_string()))?;
            refuse_moved(&table, &overrides)?;
            figment = figment.merge(Serialized::defaults(table));
        } else {
            refuse_moved(&toml::Table::new(), &overrides)?;
        }
        for (key, value) in overrides {
            figment = figment.merge(Serialized::default(&key, value));
        }
        // Lossy: an environment variable is text, read as the number or flag it sets.
        let raw: Settings = figment.extract_lossy().map_err(ConfigError::of)?;
        validate::settings(&raw)?;
        let Settings {
            app,
            dynamodb,
            ttl,
            auth,
            idempotency,
            events,
            inbox,
            measurements,
            operations,
            alerts,
            switches,
        } = raw;
        Ok(Config {
            env: app.environment,
            site_addr: app.site_addr,
            data_dir: PathBuf::from(&app.data_dir),
            demo_data: app.demo_data && app.environment == Environment::Dev,
            dynamodb: DynamoSection {
                endpoint: dynamodb.endpoint.trim().to_string(),
                ..dynamodb
            },
            ttl,
            auth,
            idempotency,
            events,
            inbox,
            measurements,
            operations,
            alerts,
            switches: switches.resolved(app.environment),
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
        let file = include_str!("../../../Leptos.toml");
        Config::from_parts(Some(file), &env, "tests".into()).expect("test settings are valid")
    }

    /// Embedded DynamoDB Local: only in dev, only when no endpoint is configured.
    pub fn wants_embedded_dynamodb(&self) -> bool {
        self.env == Environment::Dev && self.dynamodb.endpoint.is_empty()
    }
}

#[cfg(test)]
mod tests;
