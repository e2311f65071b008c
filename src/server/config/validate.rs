//! What the settings must satisfy beyond their types: ranges, URLs, names. The first
//! problem stops the start with the setting's name.

use super::events::{EventsSection, Rule};
use super::sections::*;
use super::ConfigError;

fn range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(ConfigError::new(
            key,
            format!("must be between {lo} and {hi}"),
        ));
    }
    Ok(())
}

fn url_or_empty(key: &str, url: &str, empty_means: &str) -> Result<(), ConfigError> {
    let url = url.trim();
    if !url.is_empty() && !url.starts_with("http://") && !url.starts_with("https://") {
        return Err(ConfigError::new(
            key,
            format!("expected an http:// or https:// URL, or empty {empty_means}"),
        ));
    }
    Ok(())
}

pub(super) fn settings(s: &Settings) -> Result<(), ConfigError> {
    dynamodb(&s.dynamodb)?;
    for (key, days) in [
        ("ttl.idempotency_days", s.ttl.idempotency_days),
        ("ttl.conversation_state_days", s.ttl.conversation_state_days),
        ("ttl.audit_days", s.ttl.audit_days),
        ("ttl.settings_days", s.ttl.settings_days),
        ("ttl.user_inactive_days", s.ttl.user_inactive_days),
        ("ttl.api_key_days", s.ttl.api_key_days),
        ("ttl.conversations_days", s.ttl.conversations_days),
    ] {
        if !(1..=3650).contains(&days) {
            return Err(ConfigError::new(key, "must be between 1 and 3650 days"));
        }
    }
    let a = &s.auth;
    range("auth.session_idle_hours", a.session_idle_hours, 1, 168)?;
    range("auth.session_absolute_days", a.session_absolute_days, 1, 90)?;
    range("auth.lockout_failures", a.lockout_failures, 1, 100)?;
    range("auth.lockout_minutes", a.lockout_minutes, 1, 1440)?;
    range(
        "auth.lockout_address_failures",
        a.lockout_address_failures,
        1,
        10_000,
    )?;
    range(
        "auth.lockout_name_failures",
        a.lockout_name_failures,
        1,
        10_000,
    )?;
    range(
        "auth.password_checks_at_once",
        a.password_checks_at_once,
        0,
        256,
    )?;
    range("auth.lookups_limit", a.lookups_limit, 1, 100_000)?;
    range("auth.lookups_minutes", a.lookups_minutes, 1, 1440)?;
    range(
        "auth.lookups_audit_after",
        a.lookups_audit_after,
        1,
        a.lookups_limit,
    )?;
    crate::server::outbound::networks::Networks::parse(a.proxies())
        .map_err(|e| ConfigError::new("auth.trusted_proxies", &e))?;
    idempotency(
        &s.idempotency,
        s.app.environment,
        s.operations.request_deadline_ms,
    )?;
    if s.app.environment != Environment::Dev && s.auth.trusted_proxies.trim().is_empty() {
        return Err(ConfigError::new(
            "auth.trusted_proxies",
            "must be set outside dev: the load balancer's networks as CIDRs, or `none` when clients connect directly",
        ));
    }
    events(&s.events)?;
    let i = &s.inbox;
    range(
        "inbox.stream_lease_seconds",
        i.stream_lease_seconds,
        1,
        3600,
    )?;
    range("inbox.stream_poll_ms", i.stream_poll_ms, 10, 60_000)?;
    operations(&s.operations)?;
    alerts(&s.alerts)?;
    switches(&s.switches)?;
    measurements(&s.measurements)
}

fn dynamodb(d: &DynamoSection) -> Result<(), ConfigError> {
    url_or_empty("dynamodb.endpoint", &d.endpoint, "")?;
    range("dynamodb.sweep_minutes", d.sweep_minutes, 0, 10_080)?;
    if d.region.trim().is_empty() {
        return Err(ConfigError::new("dynamodb.region", "must not be empty"));
    }
    let prefix_ok = d
        .table_prefix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !prefix_ok || d.table_prefix.len() > 64 {
        return Err(ConfigError::new(
            "dynamodb.table_prefix",
            "up to 64 characters of letters, digits, '_', '-' or '.'",
        ));
    }
    Ok(())
}

/// `deadline_ms`: the request deadline. In staging and prod a started key must not go
/// stale before it: the client's retry after the deadline's 503 would take over an
/// attempt whose writes still run (a write past the deadline runs to its end). Dev allows
/// it: the chaos run makes takeovers happen with a 3 s stale time.
fn idempotency(
    i: &IdempotencySection,
    env: Environment,
    deadline_ms: i64,
) -> Result<(), ConfigError> {
    if i.secret.is_empty() && env != Environment::Dev {
        return Err(ConfigError::new(
            "idempotency.secret",
            format!("required in {env}: set IDEMPOTENCY_SECRET to at least 32 random bytes"),
        ));
    }
    if !i.secret.is_empty() && i.secret.expose().len() < 32 {
        return Err(ConfigError::new(
            "idempotency.secret",
            format!(
                "is {} bytes; it must be at least 32",
                i.secret.expose().len()
            ),
        ));
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
        if let Some(h) = o.ttl_hours {
            range(&format!("{path}.ttl_hours"), h, 1, 24 * 90)?;
        }
        if let Some(s) = o.stale_seconds {
            range(&format!("{path}.stale_seconds"), s, 1, 86_400)?;
            if s * 1000 <= deadline_ms && env != Environment::Dev {
                return Err(ConfigError::new(
                    &format!("{path}.stale_seconds"),
                    format!(
                        "must be longer than operations.request_deadline_ms ({deadline_ms} ms): \
                         a retry after the deadline's 503 would take over the attempt still running"
                    ),
                ));
            }
        }
        for (name, pct) in [
            (
                "alert_stale_takeover_max_pct",
                o.alert_stale_takeover_max_pct,
            ),
            ("alert_cache_hit_min_pct", o.alert_cache_hit_min_pct),
            ("alert_failure_max_pct", o.alert_failure_max_pct),
        ] {
            if let Some(p) = pct {
                range(&format!("{path}.{name}"), p, 0.0, 100.0)?;
            }
        }
    }
    range("idempotency.flush_seconds", i.flush_seconds, 1, 3600)?;
    if i.alert_min_requests < 0 {
        return Err(ConfigError::new(
            "idempotency.alert_min_requests",
            "must not be negative",
        ));
    }
    Ok(())
}

fn measurements(m: &MeasurementsSection) -> Result<(), ConfigError> {
    range(
        "measurements.idempotency_ttl_days",
        m.idempotency_ttl_days,
        1,
        365,
    )?;
    range(
        "measurements.ordering_grace_period_seconds",
        m.ordering_grace_period_seconds,
        0,
        86_400,
    )?;
    range("measurements.audit_ttl_days", m.audit_ttl_days, 1, 3650)?;
    range(
        "measurements.measurement_ttl_days",
        m.measurement_ttl_days,
        1,
        3650,
    )?;
    range(
        "measurements.alert_duplicate_max_pct",
        m.alert_duplicate_max_pct,
        0.0,
        100.0,
    )?;
    range(
        "measurements.alert_out_of_order_max_pct",
        m.alert_out_of_order_max_pct,
        0.0,
        100.0,
    )?;
    range(
        "measurements.alert_audit_per_hour_max",
        m.alert_audit_per_hour_max,
        1,
        100_000_000,
    )
}

fn word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// How the consoles deliver: polling, concurrency, the breaker, the rate and the slots.
fn delivery(e: &EventsSection) -> Result<(), ConfigError> {
    range("events.dispatch_poll_ms", e.dispatch_poll_ms, 10, 60_000)?;
    range("events.dispatch_concurrency", e.dispatch_concurrency, 1, 64)?;
    range("events.breaker_failures", e.breaker_failures, 0, 1000)?;
    range(
        "events.breaker_failure_rate",
        e.breaker_failure_rate,
        0,
        100,
    )?;
    range(
        "events.breaker_min_attempts",
        e.breaker_min_attempts,
        1,
        1_000_000,
    )?;
    range(
        "events.breaker_probe_seconds",
        e.breaker_probe_seconds,
        1,
        3600,
    )?;
    super::events::check_limits(&e.limits())
        .map_err(|l| ConfigError::new(&format!("events.receiver_{}", l.field), l.rule))?;
    Ok(())
}

fn events(e: &EventsSection) -> Result<(), ConfigError> {
    url_or_empty("events.webhook_url", &e.webhook_url, "for the outbox")?;
    range(
        "events.webhook_timeout_ms",
        e.webhook_timeout_ms,
        10,
        120_000,
    )?;
    if !e.webhook_url.trim().is_empty() {
        crate::server::outbound::signature::SigningSecret::parse(e.webhook_secret.expose())
            .map_err(|why| {
                ConfigError::new(
                    "events.webhook_secret",
                    format!("required with events.webhook_url: {why}"),
                )
            })?;
    }
    crate::server::outbound::schedule::RetrySchedule::parse(&e.retry_schedule)
        .map_err(|why| ConfigError::new("events.retry_schedule", why))?;
    delivery(e)?;
    range("events.outbox_days", e.outbox_days, 1, 3650)?;
    range("events.lease_seconds", e.lease_seconds, 1, 3600)?;
    range("events.bulk_confirm_ms", e.bulk_confirm_ms, 0, 600_000)?;
    // A delivery still waiting for its answer must not be taken over by another console.
    if e.webhook_timeout_ms >= e.lease_seconds * 1000 {
        return Err(ConfigError::new(
            "events.webhook_timeout_ms",
            "must be shorter than events.lease_seconds (a delivery still waiting would be taken over)",
        ));
    }
    range(
        "events.hash_bucket_seconds",
        e.hash_bucket_seconds,
        1,
        86_400,
    )?;
    range(
        "events.order_flow_max_attempts",
        e.order_flow_max_attempts,
        1,
        100,
    )?;
    if ![
        crate::server::store::events::DAY_SHARDS_BEFORE,
        crate::server::store::events::DAY_SHARDS,
    ]
    .contains(&e.day_shards)
    {
        return Err(ConfigError::new(
            "events.day_shards",
            "must be 32 (what the release before reads) or 64",
        ));
    }
    for (i, r) in e.rules.iter().enumerate() {
        rule(&format!("events.rules[{i}]"), r)?;
    }
    Ok(())
}

fn rule(at: &str, r: &Rule) -> Result<(), ConfigError> {
    let key = |field: &str| format!("{at}.{field}");
    if r.name.trim().is_empty() {
        return Err(ConfigError::new(&key("name"), "must not be empty"));
    }
    if r.keywords.is_empty() || r.keywords.iter().any(|k| k.trim().is_empty()) {
        return Err(ConfigError::new(
            &key("keywords"),
            "give at least one non-empty keyword",
        ));
    }
    if r.intent.is_empty() != r.team.is_empty() {
        return Err(ConfigError::new(
            &key("team"),
            "a rule sets intent and team together, or neither",
        ));
    }
    for (field, value) in [
        ("intent", &r.intent),
        ("team", &r.team),
        ("auto_reply", &r.auto_reply),
        ("assign", &r.assign),
    ] {
        if !value.is_empty() && !word(value) {
            return Err(ConfigError::new(
                &key(field),
                "up to 64 letters, digits, '_', '-' or '.'",
            ));
        }
    }
    if r.tags.iter().chain(&r.risk_flags).any(|t| !word(t)) {
        return Err(ConfigError::new(
            &key("tags"),
            "tags and risk flags are up to 64 letters, digits, '_', '-' or '.'",
        ));
    }
    range(&key("confidence"), r.confidence, 0.0, 1.0)
}

fn operations(o: &super::OperationsSection) -> Result<(), ConfigError> {
    if !o.metrics_listen.is_empty() && o.metrics_listen.parse::<std::net::SocketAddr>().is_err() {
        return Err(ConfigError::new(
            "operations.metrics_listen",
            "must be an address and port, like 0.0.0.0:9100",
        ));
    }
    crate::server::outbound::networks::Networks::parse(&o.outbound_allowed_networks)
        .map_err(|e| ConfigError::new("operations.outbound_allowed_networks", &e))?;
    range(
        "operations.request_deadline_ms",
        o.request_deadline_ms,
        500,
        super::operations::MAX_REQUEST_DEADLINE_MS,
    )
}

fn switches(s: &super::SwitchesSection) -> Result<(), ConfigError> {
    // A name that is no user's would switch the emergency path off silently, to be found
    // out in the emergency.
    for name in s
        .emergency_admins
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        if crate::model::users::parse_user_name(name).ok().as_deref() != Some(name) {
            return Err(ConfigError::new(
                "switches.emergency_admins",
                format!(
                    "{name:?} is not a user name (lower-case letters, digits, '.', '_' or '-')"
                ),
            ));
        }
    }
    range("switches.approval_minutes", s.approval_minutes, 5, 1440)
}

fn alerts(a: &super::AlertsSection) -> Result<(), ConfigError> {
    for (key, url) in [
        ("alerts.webhook_url", &a.webhook_url),
        ("alerts.slack_url", &a.slack_url),
    ] {
        if !url.is_empty() && crate::server::outbound::parse_url(url).is_err() {
            return Err(ConfigError::new(key, "must be an http or https URL"));
        }
    }
    range("alerts.check_seconds", a.check_seconds, 5, 3600)
}
