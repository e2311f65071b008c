//! Measurements (design doc 5): each measurement id stored once (same payload again: the
//! first answer; another payload: 409 with the difference), each user's timestamps moving
//! forward (older than the last accepted minus a grace period: 422), and every attempt
//! audited.

pub mod batch;
pub mod payload;
pub mod views;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::model::AppError;
use crate::server::config::MeasurementsSection;
use crate::server::contract::measurements::{MeasurementResult, Stored};
use crate::server::ids::random_hex;
use crate::server::store::measurements::{
    self as store, Acceptance, Accepted, AuditItem, IdempItem, MeasurementItem, OrderItem, Payload,
};
use crate::server::store::Store;
use payload::{diff, hash, iso, Submission};

/// What a submission came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Stored now (an override too: `overridden`).
    Accepted {
        result: MeasurementResult,
        overridden: bool,
    },
    /// Stored before with the same payload: the first answer.
    Duplicate { result: MeasurementResult },
    /// Stored before with another payload.
    Conflict {
        original: MeasurementResult,
        diff: Value,
    },
    OutOfOrder {
        last_accepted: String,
        submitted: String,
        /// The earliest timestamp this user's measurements are accepted with now (the last
        /// accepted minus the grace period): when to resubmit from.
        accepted_from: String,
    },
}

impl Outcome {
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Accepted {
                overridden: true, ..
            } => "override",
            Outcome::Accepted { .. } => "accepted",
            Outcome::Duplicate { .. } => "duplicate",
            Outcome::Conflict { .. } => "conflict",
            Outcome::OutOfOrder { .. } => "out_of_order",
        }
    }
}

/// Who is submitting, and how.
#[derive(Clone, Debug)]
pub struct Context {
    pub correlation_id: String,
    /// `X-Force-Override: true`.
    pub force_override: bool,
    /// The API key has `measurements:admin`.
    pub admin: bool,
}

/// One attempt, as its audit record says it.
pub struct Attempt<'a> {
    pub user: &'a str,
    pub measurement_id: &'a str,
    pub action: &'a str,
    pub reason: String,
    pub payload: Option<Payload>,
}

impl Submission {
    fn attempt<'a>(&'a self, action: &'a str, reason: String, payload: &Payload) -> Attempt<'a> {
        Attempt {
            user: &self.user_id,
            measurement_id: &self.measurement_id,
            action,
            reason,
            payload: Some(payload.clone()),
        }
    }
}

#[derive(Clone)]
pub struct Measurements {
    store: Store,
    pub settings: Arc<MeasurementsSection>,
    /// Each user's ordering state as this process last wrote it, so an acceptance can be a
    /// single transaction conditioned on it instead of a read and a transaction. DynamoDB
    /// stays the source of truth (design doc 5, risk 3): a stale entry fails the
    /// transaction's version condition and the state is read again; a rejection is never
    /// decided from this copy.
    orders: Arc<Mutex<HashMap<String, OrderItem>>>,
}

/// Users whose ordering state is kept; past this the copy starts again empty.
const ORDER_CACHE_USERS: usize = 10_000;

fn hour(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H").to_string()
}

impl Measurements {
    pub fn new(store: Store, settings: MeasurementsSection) -> Measurements {
        Measurements {
            store,
            settings: Arc::new(settings),
            orders: Arc::default(),
        }
    }

    fn cached_order(&self, user: &str, now: DateTime<Utc>) -> Option<OrderItem> {
        let orders = self.orders.lock().ok()?;
        orders
            .get(user)
            .filter(|o| o.ttl > now.timestamp())
            .cloned()
    }

    fn remember_order(&self, user: &str, order: Option<OrderItem>) {
        let Ok(mut orders) = self.orders.lock() else {
            return;
        };
        match order {
            Some(o) => {
                if orders.len() >= ORDER_CACHE_USERS && !orders.contains_key(user) {
                    orders.clear();
                }
                let newer = orders.get(user).is_none_or(|had| had.version < o.version);
                if newer {
                    orders.insert(user.to_string(), o);
                }
            }
            None => {
                orders.remove(user);
            }
        }
    }

    fn audit(&self, a: Attempt<'_>, ctx: &Context, now: DateTime<Utc>) -> AuditItem {
        AuditItem {
            pk: store::user_pk(a.user),
            sk: format!("AUDIT#{}#{}", iso(now), random_hex(6)),
            user_id: a.user.to_string(),
            measurement_id: a.measurement_id.to_string(),
            action: a.action.to_string(),
            reason: a.reason,
            payload: a.payload,
            correlation_id: ctx.correlation_id.clone(),
            at: iso(now),
            audit_outcome: a.action.to_string(),
            ttl: (now + Duration::days(self.settings.audit_ttl_days)).timestamp(),
        }
    }

    fn keep_stats(now: DateTime<Utc>) -> i64 {
        (now + Duration::days(35)).timestamp()
    }

    /// Audits an attempt that changed nothing else.
    pub async fn record(
        &self,
        a: Attempt<'_>,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<(), AppError> {
        let item = self.audit(a, ctx, now);
        store::record_attempt(&self.store, &item, &hour(now), Self::keep_stats(now)).await?;
        Ok(())
    }

    /// An invalid body: audited under the user it names (or `unknown`), with the field.
    pub async fn record_invalid(
        &self,
        body: &Value,
        error: &AppError,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<(), AppError> {
        let plain = |k: &str| {
            body.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= 128 && !s.contains('#'))
                .unwrap_or("unknown")
                .to_string()
        };
        let (user, id) = (plain("user_id"), plain("measurement_id"));
        let attempt = Attempt {
            user: &user,
            measurement_id: &id,
            action: "invalid",
            reason: format!("{}: {error}", error.field().unwrap_or("body")),
            payload: None,
        };
        self.record(attempt, ctx, now).await
    }

    /// Submits one measurement.
    pub async fn submit(
        &self,
        s: &Submission,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<Outcome, AppError> {
        let payload = s.payload();
        let payload_hash = hash(&payload);
        let cfg = &self.settings;
        if ctx.force_override {
            let refusal = if !cfg.allow_timestamp_override {
                Some("timestamp overrides are turned off (ALLOW_TIMESTAMP_OVERRIDE)")
            } else if !ctx.admin {
                Some("a timestamp override needs an API key with measurements:admin")
            } else {
                None
            };
            if let Some(why) = refusal {
                let attempt = s.attempt("invalid", format!("override refused: {why}"), &payload);
                self.record(attempt, ctx, now).await?;
                return Err(AppError::Refused(format!("Refused: {why}.")));
            }
        }
        let grace = Duration::seconds(cfg.ordering_grace_period_seconds);
        // Ordering state from this process's copy first: the transaction's conditions then
        // check both the measurement id and the version, with no read before it.
        let mut cached = cfg
            .enable_ordering
            .then(|| self.cached_order(&s.user_id, now))
            .flatten();
        for _ in 0..20 {
            let from_cache = cached.is_some();
            let (order, idemp) = match cached.take() {
                Some(o) => (Some(o), None),
                // Without ordering, the transaction's condition finds a repeat by itself.
                None if cfg.enable_ordering => {
                    store::read_state(&self.store, &s.user_id, &s.measurement_id).await?
                }
                None => (None, None),
            };
            let idemp = idemp.filter(|i| cfg.enable_idempotency && i.ttl > now.timestamp());
            if let Some(first) = idemp {
                return self
                    .answer_repeat(s, &first, &payload, &payload_hash, ctx, now)
                    .await;
            }
            let last = order
                .as_ref()
                .filter(|_| cfg.enable_ordering)
                .and_then(|o| DateTime::parse_from_rfc3339(&o.last_accepted).ok())
                .map(|t| t.with_timezone(&Utc));
            let behind = last.is_some_and(|l| s.timestamp < l - grace);
            if behind && from_cache {
                // Judged from the database only.
                self.remember_order(&s.user_id, None);
                continue;
            }
            let overriding = behind && ctx.force_override;
            if behind && !overriding {
                let accepted_from = last.map(|l| iso(l - grace)).unwrap_or_default();
                let last = last.map(iso).unwrap_or_default();
                let reason = format!(
                    "timestamp {} is older than the last accepted {last} minus the grace period",
                    iso(s.timestamp)
                );
                self.record(s.attempt("out_of_order", reason, &payload), ctx, now)
                    .await?;
                return Ok(Outcome::OutOfOrder {
                    last_accepted: last,
                    submitted: iso(s.timestamp),
                    accepted_from,
                });
            }
            let version = order.as_ref().map_or(0, |o| o.version);
            let moves_order = cfg.enable_ordering && !overriding;
            let new_order = OrderItem {
                pk: store::user_pk(&s.user_id),
                sk: "ORDER".into(),
                last_accepted: match last {
                    Some(l) if l > s.timestamp => iso(l),
                    _ => iso(s.timestamp),
                },
                last_measurement_id: s.measurement_id.clone(),
                version: version + 1,
                updated_at: iso(now),
                ttl: (now + Duration::days(cfg.measurement_ttl_days)).timestamp(),
            };
            let seq = if moves_order { version + 1 } else { 0 };
            let result = MeasurementResult {
                correlation_id: ctx.correlation_id.clone(),
                measurement_id: s.measurement_id.clone(),
                seq,
                source: payload.source.clone(),
                status: if overriding {
                    Stored::Override
                } else {
                    Stored::Accepted
                },
                timestamp: payload.timestamp.clone(),
                user_id: s.user_id.clone(),
                weight_kg: payload.weight_kg.parse::<f64>().unwrap_or(0.0),
            };
            let idemp_item = IdempItem {
                pk: store::user_pk(&s.user_id),
                sk: format!("IDEMP#{}", s.measurement_id),
                measurement_id: s.measurement_id.clone(),
                payload_hash: payload_hash.clone(),
                payload: payload.clone(),
                result: serde_json::to_string(&result)
                    .map_err(|e| crate::server::errors::internal(&e))?,
                processed_at: iso(now),
                ttl: (now + Duration::days(cfg.idempotency_ttl_days)).timestamp(),
            };
            let measurement = MeasurementItem {
                pk: store::user_pk(&s.user_id),
                sk: format!("MEAS#{}#{}", payload.timestamp, s.measurement_id),
                measurement_id: s.measurement_id.clone(),
                user_id: s.user_id.clone(),
                weight_kg: payload.weight_kg.parse().unwrap_or(0.0),
                weight: s.weight,
                unit: s.unit.clone(),
                timestamp: payload.timestamp.clone(),
                source: payload.source.clone(),
                received_at: iso(now),
                seq,
                overridden: overriding,
                correlation_id: ctx.correlation_id.clone(),
                ttl: (now + Duration::days(cfg.measurement_ttl_days)).timestamp(),
            };
            let action = if overriding { "override" } else { "accepted" };
            let reason = if overriding {
                "stored older than the last accepted timestamp by an admin override".to_string()
            } else {
                String::new()
            };
            let audit = self.audit(s.attempt(action, reason, &payload), ctx, now);
            let acceptance = Acceptance {
                idemp: cfg.enable_idempotency.then_some(&idemp_item),
                order: moves_order.then_some((&new_order, order.as_ref().map(|o| o.version))),
                measurement: &measurement,
                audit: &audit,
                hour: &hour(now),
                now_s: now.timestamp(),
                keep_until: Self::keep_stats(now),
            };
            match store::accept(&self.store, &acceptance).await? {
                Accepted::Done => {
                    if moves_order {
                        self.remember_order(&s.user_id, Some(new_order));
                    }
                    return Ok(Outcome::Accepted {
                        result,
                        overridden: overriding,
                    });
                }
                // Our own record, exactly: this very acceptance was applied before and only
                // its answer was lost (the helper resent it after its token window).
                Accepted::Exists(first) if *first == idemp_item => {
                    if moves_order {
                        self.remember_order(&s.user_id, Some(new_order));
                    }
                    return Ok(Outcome::Accepted {
                        result,
                        overridden: overriding,
                    });
                }
                Accepted::Exists(first) => {
                    return self
                        .answer_repeat(s, &first, &payload, &payload_hash, ctx, now)
                        .await
                }
                // Our copy was behind: read the state (no wait, nobody is in the way).
                Accepted::OrderMoved if from_cache => self.remember_order(&s.user_id, None),
                Accepted::OrderMoved => {
                    tokio::time::sleep(std::time::Duration::from_millis(
                        2 + u64::from_str_radix(&random_hex(1), 16).unwrap_or(0) % 10,
                    ))
                    .await;
                }
            }
        }
        Err(AppError::InProgress {
            retry_after_secs: 1,
        })
    }

    /// The measurement id was stored before: the first answer, or the difference.
    async fn answer_repeat(
        &self,
        s: &Submission,
        first: &IdempItem,
        payload: &Payload,
        payload_hash: &str,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<Outcome, AppError> {
        let original: MeasurementResult =
            serde_json::from_str(&first.result).map_err(|e| crate::server::errors::internal(&e))?;
        if first.payload_hash == payload_hash {
            let attempt = s.attempt(
                "duplicate",
                "same measurement id and payload".into(),
                payload,
            );
            self.record(attempt, ctx, now).await?;
            Ok(Outcome::Duplicate { result: original })
        } else {
            let d = diff(&first.payload, payload);
            let fields: Vec<&String> = d
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            let reason = format!(
                "same measurement id, other payload ({})",
                fields
                    .iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.record(s.attempt("conflict", reason, payload), ctx, now)
                .await?;
            Ok(Outcome::Conflict { original, diff: d })
        }
    }
}
