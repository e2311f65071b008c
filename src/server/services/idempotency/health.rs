//! What the monitoring page shows: per-scope rates and alerts from the hourly counters,
//! the keys that need watching, and an admin's "expire now". The rates and alerts are pure
//! functions; the reads are the [`Engine`]'s.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};

use super::{hour_key, Engine};
use crate::model::idempotency::{
    Alert, Counts, Health, HourPoint, KeyPage, KeySummary, ScopeHealth,
};
use crate::model::kill_switches::Reason;
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::config::ScopePolicy;
use crate::server::domain::redact::{self, redact};
use crate::server::ids::random_hex;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::idempotency::{self as store, Bucket, KeyItem, KeyStatus, ALL_SCOPES};
use crate::server::store::StoreError;

pub const AUDIT_PARTITION: &str = "system#idempotency";
pub const AUDIT_EXPIRED: &str = "idempotency_key_expired";

fn counts_of(b: &BTreeMap<String, u64>) -> Counts {
    let g = |k: &str| b.get(k).copied().unwrap_or(0);
    Counts {
        requests: g("requests"),
        fresh: g("fresh"),
        replayed: g("replayed"),
        in_progress: g("in_progress"),
        takeovers: g("takeovers"),
        retries: g("retries"),
        failures: g("failures"),
        mismatches: g("mismatches"),
        client_errors: g("client_errors"),
    }
}

/// The alerts of docs/idempotency.md ("The Idempotency page"), judged only with enough
/// requests to mean something.
pub fn alerts(totals: &Counts, p: &ScopePolicy) -> Vec<Alert> {
    let judged = totals.requests as i64 >= p.alert_min_requests;
    let alert = |name: &str, label: &str, value: Option<f64>, threshold: f64, above: bool| {
        let breached =
            judged && value.is_some_and(|v| if above { v > threshold } else { v < threshold });
        Alert {
            name: name.into(),
            label: label.into(),
            value,
            threshold,
            above,
            breached,
        }
    };
    vec![
        alert(
            "cache_hit",
            "Cache-hit rate",
            totals.cache_hit_pct(),
            p.alert_cache_hit_min_pct,
            false,
        ),
        alert(
            "stale_takeover",
            "Stale-takeover rate",
            totals.stale_takeover_pct(),
            p.alert_stale_takeover_max_pct,
            true,
        ),
        alert(
            "failure",
            "Failure rate",
            totals.failure_pct(),
            p.alert_failure_max_pct,
            true,
        ),
    ]
}

/// One scope's window: every hour (zeros included), totals and alerts.
pub fn scope_health(
    scope: &str,
    buckets: &[Bucket],
    hours: &[String],
    p: &ScopePolicy,
) -> ScopeHealth {
    let by_hour: BTreeMap<&str, Counts> = buckets
        .iter()
        .map(|b| (b.hour.as_str(), counts_of(&b.counts)))
        .collect();
    let series: Vec<HourPoint> = hours
        .iter()
        .map(|h| HourPoint {
            hour: h.clone(),
            counts: by_hour.get(h.as_str()).cloned().unwrap_or_default(),
        })
        .collect();
    let mut totals = Counts::default();
    series.iter().for_each(|pt| totals.add(&pt.counts));
    ScopeHealth {
        scope: scope.to_string(),
        alerts: alerts(&totals, p),
        totals,
        series,
        min_requests: p.alert_min_requests,
    }
}

pub fn window_hours(window: &str) -> Result<i64, AppError> {
    match window {
        "" | "24h" => Ok(24),
        "7d" => Ok(24 * 7),
        _ => Err(AppError::invalid("window", "The window is 24h or 7d.")),
    }
}

fn ts(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_default()
}

pub fn summary(item: KeyItem, now: DateTime<Utc>, with_response: bool) -> KeySummary {
    KeySummary {
        expired: item.is_expired(now.timestamp()),
        created_at: ts(item.created_at),
        started_at: ts(item.started_at),
        completed_at: item.completed_at.map(ts),
        updated_at: ts(item.updated_at),
        expires_at: ts(item.expires_at * 1000),
        id: item.id,
        tenant: item.tenant,
        scope: item.scope,
        key_hash: item.key_hash,
        status: item.status.as_str().to_string(),
        attempts: item.attempt_count,
        stop_reason: item.stop_reason,
        response_json: if with_response {
            item.response_json
        } else {
            None
        },
        response_status: item.response_status,
        api_key: None,
        resource: None,
    }
}

/// A key as `role` may see it: viewers see no personal data, so its stored answer (a
/// measurement's answer names its user) and its stop reason are redacted for them, as the
/// user ids and reasons of the measurement attempts are.
pub fn for_role(mut key: KeySummary, role: Role) -> KeySummary {
    key.response_json = key
        .response_json
        .map(|json| redact::json_for_role(role, &json));
    key.stop_reason = key.stop_reason.map(|r| redact::for_role(role, &r));
    key
}

/// A key's page as `role` may see it: [`for_role`], and the link to what it changed (made
/// from the answer before its redaction, and for `role`).
pub fn detail_for_role(
    key: KeySummary,
    role: Role,
    user_ref: &dyn Fn(&str) -> String,
) -> KeySummary {
    let answer = key.response_json.as_deref();
    let resource = super::links::resource(&key.scope, answer, role, user_ref);
    KeySummary {
        resource,
        ..for_role(key, role)
    }
}

impl Engine {
    /// Per-scope rates and alerts over `window` (`24h` or `7d`), with this process's latest
    /// counters written first so the page is current. Reads `1 + scopes` queries: the
    /// `#all` partition says which scopes were active.
    pub async fn health(&self, window: &str) -> Result<Health, AppError> {
        let n = window_hours(window)?;
        if let Err(e) = self.flush_stats().await {
            tracing::warn!(error = %e, "could not write idempotency counters before reading them");
        }
        let now = self.clock.now();
        let hours: Vec<String> = (0..n)
            .rev()
            .map(|i| hour_key(now - Duration::hours(i)))
            .collect();
        let from = hours.first().cloned().unwrap_or_default();
        let mut scopes: Vec<String> = store::read_stats(&self.store, ALL_SCOPES, &from)
            .await?
            .into_iter()
            .flat_map(|b| b.scopes)
            .collect();
        scopes.sort();
        scopes.dedup();
        let mut out = Vec::new();
        for scope in scopes {
            let buckets = store::read_stats(&self.store, &scope, &from).await?;
            let policy = self.settings.policy(&scope);
            out.push(scope_health(&scope, &buckets, &hours, &policy));
        }
        Ok(Health {
            window: if n == 24 { "24h".into() } else { "7d".into() },
            scopes: out,
        })
    }

    /// `stuck` (started and past its stale time) or `failed` keys, paged.
    pub async fn watched_keys(
        &self,
        which: &str,
        cursor: Option<&str>,
    ) -> Result<KeyPage, AppError> {
        let status = match which {
            "stuck" => KeyStatus::Started,
            "failed" => KeyStatus::Failed,
            _ => return Err(AppError::invalid("list", "The list is stuck or failed.")),
        };
        let now = self.clock.now();
        let page =
            store::list_watch(&self.store, status, now.timestamp_millis(), cursor, 20).await?;
        Ok(KeyPage {
            keys: page
                .items
                .into_iter()
                .map(|i| summary(i, now, false))
                .collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// An admin expires a key so its operation can run again. Audited; expiring an already
    /// expired key is a no-op that says so.
    pub async fn expire_key(
        &self,
        id: &str,
        reason: &str,
        actor: &str,
        audit_days: i64,
    ) -> Result<bool, AppError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        let Some(item) = store::get(&self.store, id).await? else {
            return Err(AppError::NotFound);
        };
        let now = self.clock.now();
        let changed = store::expire_now(&self.store, id, now.timestamp()).await?;
        if changed {
            let mut audit_item = AuditItem::new(
                AUDIT_PARTITION,
                AUDIT_EXPIRED,
                now,
                &random_hex(8),
                audit_days,
            );
            audit_item.actor = actor.to_string();
            audit_item.idempotency_key = item.key_hash.clone();
            audit_item.action_payload_redacted = serde_json::json!({
                "scope": item.scope, "tenant": item.tenant, "status": item.status, "reason": reason,
            })
            .to_string();
            audit::put(&self.store, &audit_item)
                .await
                .map_err(|e: StoreError| AppError::from(e))?;
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ScopePolicy {
        ScopePolicy {
            ttl_hours: 24,
            stale_seconds: 300,
            alert_min_requests: 20,
            alert_stale_takeover_max_pct: 5.0,
            alert_cache_hit_min_pct: 30.0,
            alert_failure_max_pct: 10.0,
        }
    }

    fn breached(c: &Counts) -> Vec<String> {
        alerts(c, &policy())
            .into_iter()
            .filter(|a| a.breached)
            .map(|a| a.name)
            .collect()
    }

    #[test]
    fn thresholds_of_the_design_doc() {
        // 100 requests: 40 replays, 60 runs of which 3 takeovers and 6 failures: all fine.
        let fine = Counts {
            requests: 100,
            fresh: 60,
            replayed: 40,
            takeovers: 3,
            failures: 6,
            ..Default::default()
        };
        assert!(breached(&fine).is_empty());
        let bad = Counts {
            requests: 100,
            fresh: 80,
            replayed: 20,
            takeovers: 5,
            failures: 9,
            ..Default::default()
        };
        assert_eq!(
            breached(&bad),
            vec!["cache_hit", "stale_takeover", "failure"]
        );
        // Too few requests to judge.
        let few = Counts {
            requests: 5,
            fresh: 5,
            failures: 5,
            ..Default::default()
        };
        assert!(breached(&few).is_empty());
    }

    #[test]
    fn every_hour_of_the_window_is_in_the_series() {
        let hours: Vec<String> = (0..3).map(|h| format!("2026-11-22T0{h}")).collect();
        let bucket = Bucket {
            hour: "2026-11-22T01".into(),
            counts: BTreeMap::from([("requests".to_string(), 7), ("fresh".to_string(), 7)]),
            scopes: vec![],
        };
        let h = scope_health("s", &[bucket], &hours, &policy());
        assert_eq!(h.series.len(), 3);
        assert_eq!(h.series[0].counts.requests, 0);
        assert_eq!(h.series[1].counts.requests, 7);
        assert_eq!(h.totals.fresh, 7);
    }
}
