//! Measurements (docs/measurements.md): each measurement id stored once (same payload
//! again: the first answer; another payload: 409 with the difference), each user's
//! timestamps moving forward (older than the last accepted minus a grace period: 422), and
//! every attempt audited.

pub mod batch;
pub mod pages;
mod submit;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::config::MeasurementsSection;
use crate::server::contract::measurements::MeasurementResult;
use crate::server::domain::measurements::ids::{MeasuredUserId, MeasurementId};
use crate::server::domain::measurements::payload::Payload;
use crate::server::ids::random_hex;
use crate::server::store::measurements::{self as store, Action, AuditItem, OrderItem};
use crate::server::store::Store;

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
    /// The action its audit record names.
    pub fn action(&self) -> Action {
        match self {
            Outcome::Accepted {
                overridden: true, ..
            } => Action::Override,
            Outcome::Accepted { .. } => Action::Accepted,
            Outcome::Duplicate { .. } => Action::Duplicate,
            Outcome::Conflict { .. } => Action::Conflict,
            Outcome::OutOfOrder { .. } => Action::OutOfOrder,
        }
    }

    pub fn name(&self) -> &'static str {
        self.action().as_str()
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
    pub action: Action,
    pub reason: String,
    pub payload: Option<Payload>,
}

#[derive(Clone)]
pub struct Measurements {
    store: Store,
    pub settings: Arc<MeasurementsSection>,
    /// Each user's ordering state as this process last wrote it, so an acceptance can be a
    /// single transaction conditioned on it instead of a read and a transaction. DynamoDB
    /// stays the source of truth (docs/measurements.md, "Ordering"): a stale entry fails the
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
            action: a.action,
            reason: a.reason,
            payload: a.payload,
            correlation_id: ctx.correlation_id.clone(),
            at: iso(now),
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
        // The ids the body names, when they are ids (the same rule as a valid body's).
        let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
        let user =
            MeasuredUserId::parse(text("user_id")).map_or("unknown".into(), |u| u.to_string());
        let id = MeasurementId::parse(text("measurement_id"))
            .map_or("unknown".into(), |m| m.to_string());
        crate::server::metrics::measurement(Action::Invalid.as_str());
        let attempt = Attempt {
            user: &user,
            measurement_id: &id,
            action: Action::Invalid,
            reason: format!("{}: {error}", error.field().unwrap_or("body")),
            payload: None,
        };
        self.record(attempt, ctx, now).await
    }
}
