//! Submitting one measurement (docs/measurements.md, "Ordering" and "The acceptance
//! transaction"): the override check, then rounds of "ordering state, decision, one
//! transaction" until DynamoDB takes the acceptance or an answer is found. The ordering
//! state may come from this process's copy; a rejection is only ever decided from the
//! database.

use chrono::{DateTime, Duration, Utc};

use super::{hour, Attempt, Context, Measurements, Outcome};
use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::contract::measurements::{MeasurementResult, Stored};
use crate::server::domain::measurements::payload::{diff, hash, Payload, Submission};
use crate::server::ids::random_hex;
use crate::server::store::measurements::{
    self as store, Acceptance, Accepted, Action, AuditItem, IdempItem, MeasurementItem, OrderItem,
};

/// Rounds a submission tries before it answers "in progress, retry".
const ROUNDS: usize = 20;

/// One submission on its way: what it says, its normalized payload and that payload's
/// hash, who sent it, and when.
struct Pending<'a> {
    s: &'a Submission,
    ctx: &'a Context,
    payload: Payload,
    payload_hash: String,
    now: DateTime<Utc>,
}

impl Pending<'_> {
    /// This submission's attempt, as its audit record says it.
    fn attempt(&self, action: Action, reason: String) -> Attempt<'_> {
        Attempt {
            user: &self.s.user_id,
            measurement_id: &self.s.measurement_id,
            action,
            reason,
            payload: Some(self.payload.clone()),
        }
    }
}

/// How one round ended.
enum Round {
    Answered(Outcome),
    /// Without an answer: read the ordering state again and try once more.
    Again,
}

/// What an acceptance writes, and the ordering version it is conditioned on.
struct Plan {
    result: MeasurementResult,
    overridden: bool,
    idemp: IdempItem,
    /// The ordering state after this acceptance and the version it replaces (`None`: there
    /// was none); `None` when the acceptance leaves the ordering alone (ordering off, or an
    /// override).
    order: Option<(OrderItem, Option<i64>)>,
    measurement: MeasurementItem,
    audit: AuditItem,
}

impl Measurements {
    /// Submits one measurement.
    pub async fn submit(
        &self,
        s: &Submission,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<Outcome, AppError> {
        let payload = s.payload();
        let p = Pending {
            s,
            ctx,
            payload_hash: hash(&payload),
            payload,
            now,
        };
        if ctx.force_override {
            self.check_override(&p).await?;
        }
        // Ordering state from this process's copy first: the transaction's conditions then
        // check both the measurement id and the version, with no read before it.
        let mut cached = self
            .settings
            .enable_ordering
            .then(|| self.cached_order(&s.user_id, now))
            .flatten();
        for _ in 0..ROUNDS {
            if let Round::Answered(outcome) = self.round(&p, cached.take()).await? {
                crate::server::metrics::measurement(outcome.name());
                return Ok(outcome);
            }
        }
        Err(AppError::InProgress {
            retry_after_secs: 1,
        })
    }

    /// An override needs the setting on and an API key with `measurements:admin`; without
    /// them it is refused (403) and audited as invalid.
    async fn check_override(&self, p: &Pending<'_>) -> Result<(), AppError> {
        let why = if !self.settings.allow_timestamp_override {
            "timestamp overrides are turned off (ALLOW_TIMESTAMP_OVERRIDE)"
        } else if !p.ctx.admin {
            "a timestamp override needs an API key with measurements:admin"
        } else {
            return Ok(());
        };
        crate::server::metrics::measurement(Action::Invalid.as_str());
        let attempt = p.attempt(Action::Invalid, format!("override refused: {why}"));
        self.record(attempt, p.ctx, p.now).await?;
        Err(AppError::Refused(format!("Refused: {why}.")))
    }

    /// One round: the ordering state (this process's copy, or read from DynamoDB with the
    /// measurement id's record), the decision, and the acceptance's transaction.
    async fn round(&self, p: &Pending<'_>, cached: Option<OrderItem>) -> Result<Round, AppError> {
        let cfg = &self.settings;
        let from_cache = cached.is_some();
        let (order, idemp) = match cached {
            Some(o) => (Some(o), None),
            // Without ordering, the transaction's condition finds a repeat by itself.
            None if cfg.enable_ordering => {
                store::read_state(&self.store, &p.s.user_id, &p.s.measurement_id).await?
            }
            None => (None, None),
        };
        let idemp = idemp.filter(|i| cfg.enable_idempotency && i.ttl > p.now.timestamp());
        if let Some(first) = idemp {
            return self.answer_repeat(p, &first).await.map(Round::Answered);
        }
        let grace = Duration::seconds(cfg.ordering_grace_period_seconds);
        let last = order
            .as_ref()
            .filter(|_| cfg.enable_ordering)
            .and_then(|o| DateTime::parse_from_rfc3339(&o.last_accepted).ok())
            .map(|t| t.with_timezone(&Utc));
        let behind = last.filter(|l| p.s.timestamp < *l - grace);
        if let Some(last) = behind {
            if from_cache {
                // Judged from the database only.
                self.remember_order(&p.s.user_id, None);
                return Ok(Round::Again);
            }
            if !p.ctx.force_override {
                let outcome = self.reject_out_of_order(p, last, grace).await?;
                return Ok(Round::Answered(outcome));
            }
        }
        let plan = self.plan(p, order.as_ref(), last, behind.is_some())?;
        self.write(p, plan, from_cache).await
    }

    /// Older than the user's last accepted timestamp minus the grace period: refused with
    /// the time to resubmit from, and audited.
    async fn reject_out_of_order(
        &self,
        p: &Pending<'_>,
        last: DateTime<Utc>,
        grace: Duration,
    ) -> Result<Outcome, AppError> {
        let accepted_from = iso(last - grace);
        let last = iso(last);
        let reason = format!(
            "timestamp {} is older than the last accepted {last} minus the grace period",
            iso(p.s.timestamp)
        );
        self.record(p.attempt(Action::OutOfOrder, reason), p.ctx, p.now)
            .await?;
        Ok(Outcome::OutOfOrder {
            last_accepted: last,
            submitted: iso(p.s.timestamp),
            accepted_from,
        })
    }

    /// The records an acceptance writes, judged against `order` (whose last accepted
    /// timestamp is `last`). An override is stored without moving the ordering state.
    fn plan(
        &self,
        p: &Pending<'_>,
        order: Option<&OrderItem>,
        last: Option<DateTime<Utc>>,
        overriding: bool,
    ) -> Result<Plan, AppError> {
        let version = order.map_or(0, |o| o.version);
        let moves_order = self.settings.enable_ordering && !overriding;
        let seq = if moves_order { version + 1 } else { 0 };
        let result = answer(p, seq, overriding);
        let (action, reason) = if overriding {
            (
                Action::Override,
                "stored older than the last accepted timestamp by an admin override".to_string(),
            )
        } else {
            (Action::Accepted, String::new())
        };
        Ok(Plan {
            idemp: self.idemp_item(p, &result)?,
            order: moves_order.then(|| {
                let expected = order.map(|o| o.version);
                (self.order_after(p, last, version + 1), expected)
            }),
            measurement: self.measurement_item(p, seq, overriding),
            audit: self.audit(p.attempt(action, reason), p.ctx, p.now),
            result,
            overridden: overriding,
        })
    }

    /// The user's ordering state once this measurement is in: its last accepted timestamp
    /// never moves back.
    fn order_after(&self, p: &Pending<'_>, last: Option<DateTime<Utc>>, version: i64) -> OrderItem {
        let s = p.s;
        OrderItem {
            pk: store::user_pk(&s.user_id),
            sk: "ORDER".into(),
            last_accepted: match last {
                Some(l) if l > s.timestamp => iso(l),
                _ => iso(s.timestamp),
            },
            last_measurement_id: s.measurement_id.to_string(),
            version,
            updated_at: iso(p.now),
            ttl: (p.now + Duration::days(self.settings.measurement_ttl_days)).timestamp(),
        }
    }

    /// The measurement id's record: the payload's hash and the answer, replayed to every
    /// repeat.
    fn idemp_item(
        &self,
        p: &Pending<'_>,
        result: &MeasurementResult,
    ) -> Result<IdempItem, AppError> {
        Ok(IdempItem {
            pk: store::user_pk(&p.s.user_id),
            sk: format!("IDEMP#{}", p.s.measurement_id),
            measurement_id: p.s.measurement_id.to_string(),
            payload_hash: p.payload_hash.clone(),
            payload: p.payload.clone(),
            result: serde_json::to_string(result)
                .map_err(|e| crate::server::telemetry::internal(&e))?,
            processed_at: iso(p.now),
            ttl: (p.now + Duration::days(self.settings.idempotency_ttl_days)).timestamp(),
        })
    }

    fn measurement_item(&self, p: &Pending<'_>, seq: i64, overriding: bool) -> MeasurementItem {
        let (s, payload) = (p.s, &p.payload);
        MeasurementItem {
            pk: store::user_pk(&s.user_id),
            sk: format!("MEAS#{}#{}", payload.timestamp, s.measurement_id),
            measurement_id: s.measurement_id.to_string(),
            user_id: s.user_id.to_string(),
            weight_kg: payload.weight_kg.parse().unwrap_or(0.0),
            weight: s.weight,
            unit: s.unit.clone(),
            timestamp: payload.timestamp.clone(),
            source: payload.source.clone(),
            received_at: iso(p.now),
            seq,
            overridden: overriding,
            correlation_id: p.ctx.correlation_id.clone(),
            ttl: (p.now + Duration::days(self.settings.measurement_ttl_days)).timestamp(),
        }
    }

    /// Writes the acceptance in one transaction and reads what came of it.
    async fn write(
        &self,
        p: &Pending<'_>,
        plan: Plan,
        from_cache: bool,
    ) -> Result<Round, AppError> {
        let acceptance = Acceptance {
            idemp: self.settings.enable_idempotency.then_some(&plan.idemp),
            order: plan.order.as_ref().map(|(o, expected)| (o, *expected)),
            measurement: &plan.measurement,
            audit: &plan.audit,
            hour: &hour(p.now),
            now_s: p.now.timestamp(),
            keep_until: Self::keep_stats(p.now),
        };
        match store::accept(&self.store, &acceptance).await? {
            Accepted::Done => Ok(Round::Answered(self.accepted(&p.s.user_id, plan))),
            // Our own record, exactly: this very acceptance was applied before and only
            // its answer was lost (the helper resent it after its token window).
            Accepted::Exists(first) if *first == plan.idemp => {
                Ok(Round::Answered(self.accepted(&p.s.user_id, plan)))
            }
            Accepted::Exists(first) => self.answer_repeat(p, &first).await.map(Round::Answered),
            // Our copy was behind: read the state (no wait, nobody is in the way).
            Accepted::OrderMoved if from_cache => {
                self.remember_order(&p.s.user_id, None);
                Ok(Round::Again)
            }
            Accepted::OrderMoved => {
                pause().await;
                Ok(Round::Again)
            }
        }
    }

    /// Stored: the moved ordering state becomes this process's copy, and the answer goes out.
    fn accepted(&self, user: &str, plan: Plan) -> Outcome {
        if let Some((order, _)) = plan.order {
            self.remember_order(user, Some(order));
        }
        Outcome::Accepted {
            result: plan.result,
            overridden: plan.overridden,
        }
    }

    /// The measurement id was stored before: the first answer, or the difference.
    async fn answer_repeat(&self, p: &Pending<'_>, first: &IdempItem) -> Result<Outcome, AppError> {
        let original: MeasurementResult = serde_json::from_str(&first.result)
            .map_err(|e| crate::server::telemetry::internal(&e))?;
        if first.payload_hash == p.payload_hash {
            let attempt = p.attempt(Action::Duplicate, "same measurement id and payload".into());
            self.record(attempt, p.ctx, p.now).await?;
            return Ok(Outcome::Duplicate { result: original });
        }
        let d = diff(&first.payload, &p.payload);
        let fields: Vec<&str> = d
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let reason = format!("same measurement id, other payload ({})", fields.join(", "));
        self.record(p.attempt(Action::Conflict, reason), p.ctx, p.now)
            .await?;
        Ok(Outcome::Conflict { original, diff: d })
    }
}

/// The answer this submission gets (and every repeat of it after).
fn answer(p: &Pending<'_>, seq: i64, overriding: bool) -> MeasurementResult {
    MeasurementResult {
        correlation_id: p.ctx.correlation_id.clone(),
        measurement_id: p.s.measurement_id.to_string(),
        seq,
        source: p.payload.source.clone(),
        status: if overriding {
            Stored::Override
        } else {
            Stored::Accepted
        },
        timestamp: p.payload.timestamp.clone(),
        user_id: p.s.user_id.to_string(),
        weight_kg: p.payload.weight_kg.parse::<f64>().unwrap_or(0.0),
    }
}

/// A short random wait after another acceptance moved the ordering state first, so that
/// submissions that met on one version are unlikely to meet on the next.
async fn pause() {
    let jitter = u64::from_str_radix(&random_hex(1), 16).unwrap_or(0) % 10;
    tokio::time::sleep(std::time::Duration::from_millis(2 + jitter)).await;
}
