//! The kill switches (docs/switches.md): the [`Switches`] service that reads the switches
//! and applies a change together with its audit record, and ends timed changes
//! ([`reverts`]). The rules of a change, which need no I/O, are in `domain::kill_switches`.

pub mod approvals;
mod console;
pub mod reverts;
pub mod schedule;
pub mod triggers;
pub mod trips;
pub mod withdraw;

use chrono::{DateTime, Utc};

pub use self::approvals::ApprovalPolicy;
pub use self::console::{Changed, SCOPE};
use crate::model::kill_switches::{HistoryPage, KillSwitches, Switch, SwitchChangeRecord};
use crate::model::AppError;
use crate::server::clock::Clock;
use crate::server::config::TtlSection;
use crate::server::domain::kill_switches::approvals::{Route, EMERGENCY_NOTE};
use crate::server::domain::kill_switches::{plan, stale, timers, validate, ChangeRequest};
use crate::server::domain::redact::redact;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::kill_switches::{self as store, Commit, AUDIT_ACTION, AUDIT_PARTITION};
use crate::server::store::tx::{Refusal, Writes};
use crate::server::store::{Store, StoreError};

/// The audit record's payload: the change, with the reason already redacted.
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    switch: Switch,
    from: bool,
    to: bool,
    version: u64,
    reason: String,
    /// A timed change's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ends_at: Option<String>,
    /// What else the change did: it ended a running timed change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// Who asks for a change, and the ids it is recorded under.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    /// Named as the switch's last changer and on the audit record.
    pub actor: &'a str,
    /// The idempotency key the change runs under, kept on the audit record.
    pub idempotency_key: &'a str,
    /// The audit record's id (its sort key is the time, then this id).
    pub action_id: &'a str,
}

/// The audit record of the change of `switch` from `current` to `next`; `also` says what
/// else it was (an approval, an emergency).
#[allow(clippy::too_many_arguments)]
fn audit_record(
    switch: Switch,
    origin: &Origin<'_>,
    current: &KillSwitches,
    next: &KillSwitches,
    reason: String,
    now: DateTime<Utc>,
    audit_days: i64,
    also: Option<String>,
) -> AuditItem {
    let note = match (also, timers::voids(current, switch)) {
        (Some(a), Some(v)) => Some(format!("{a}; {v}")),
        (a, v) => a.or(v),
    };
    let mut item = AuditItem::new(
        AUDIT_PARTITION,
        AUDIT_ACTION,
        now,
        origin.action_id,
        audit_days,
    );
    item.actor = origin.actor.to_string();
    item.idempotency_key = origin.idempotency_key.to_string();
    item.action_payload_redacted = serde_json::to_string(&Payload {
        switch,
        from: current.get(switch).enabled,
        to: next.get(switch).enabled,
        version: next.version,
        reason,
        ends_at: next.get(switch).ends_at.clone(),
        note,
    })
    .unwrap_or_else(|_| "{}".into());
    item
}

impl Switches {
    /// The audit record of a change to the switches' settings (a trigger URL, a trip) by
    /// `actor`, of `action` type, with `payload`.
    fn settings_record(
        &self,
        action: &str,
        payload: serde_json::Value,
        actor: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let id = crate::server::ids::random_hex(8);
        self.record_of(action, payload, actor, &id, now)
    }

    /// An audit record of the kill switches' partition, of `action` type, by `actor`, with
    /// `payload`, under `id`.
    fn record_of(
        &self,
        action: &str,
        payload: serde_json::Value,
        actor: &str,
        id: &str,
        now: DateTime<Utc>,
    ) -> AuditItem {
        let mut record = AuditItem::new(AUDIT_PARTITION, action, now, id, self.ttls.audit_days);
        record.actor = actor.to_string();
        record.action_payload_redacted = payload.to_string();
        record
    }
}

/// How long what a change writes lives.
#[derive(Clone, Copy, Debug)]
pub struct Ttls {
    pub audit_days: i64,
    pub settings_days: i64,
}

impl From<&TtlSection> for Ttls {
    fn from(ttl: &TtlSection) -> Ttls {
        Ttls {
            audit_days: ttl.audit_days,
            settings_days: ttl.settings_days,
        }
    }
}

/// The kill switches: reading them, changing them (each change with its audit record, in
/// one transaction), and their history. Cheap to clone.
#[derive(Clone)]
pub struct Switches {
    store: Store,
    clock: Clock,
    ttls: Ttls,
    /// None required until [`Switches::with_approvals`] says otherwise.
    approvals: ApprovalPolicy,
}

impl Switches {
    pub fn new(store: Store, clock: Clock, ttls: Ttls) -> Switches {
        Switches {
            store,
            clock,
            ttls,
            approvals: ApprovalPolicy::default(),
        }
    }

    /// The current switches (strongly consistent); the safe defaults when never set.
    pub async fn load(&self) -> Result<KillSwitches, StoreError> {
        store::load(&self.store, self.clock.now()).await
    }

    /// The current switches as a page or a reader of the API sees them: one copy, as every
    /// request reads them (strongly consistent, written with every change), so that views
    /// put no load on the item itself.
    pub async fn shown(&self) -> Result<KillSwitches, StoreError> {
        store::load_copy(&self.store, self.clock.now()).await
    }

    /// Validates, reads the current switches, and writes the change with its audit record
    /// in one transaction conditioned on the version the person saw.
    pub async fn change(
        &self,
        req: &ChangeRequest,
        origin: &Origin<'_>,
    ) -> Result<KillSwitches, ChangeError> {
        self.change_at(req, origin, self.clock.now()).await
    }

    /// [`Switches::change`] at a given time (which, with the action id, names the audit
    /// record).
    pub async fn change_at(
        &self,
        req: &ChangeRequest,
        origin: &Origin<'_>,
        now: DateTime<Utc>,
    ) -> Result<KillSwitches, ChangeError> {
        let (current, next, item) = self.plan_at(req, origin, now).await?;
        let ttl = self.ttls.settings_days;
        match store::commit(&self.store, &next, current.version, &item, now, ttl).await? {
            Commit::Done => {
                tracing::info!(actor = %origin.actor, switch = req.switch.key(), enabled = req.enable, version = next.version, "kill switch changed");
                Ok(next)
            }
            Commit::Stale(now_stored) => Err(stale(&now_stored).into()),
        }
    }

    /// The change as writes (the switches and their audit record), for a caller that
    /// commits them with something else: the idempotency engine's one-request path.
    pub async fn prepare_at(
        &self,
        req: &ChangeRequest,
        origin: &Origin<'_>,
        now: DateTime<Utc>,
    ) -> Result<(KillSwitches, Writes), ChangeError> {
        let (current, next, item) = self.plan_at(req, origin, now).await?;
        let ttl = self.ttls.settings_days;
        let writes = store::change(&self.store, &next, current.version, &item, now, ttl)?;
        Ok((next, writes))
    }

    /// Why [`Switches::prepare_at`]'s writes were refused.
    pub fn refused(&self, refusal: &Refusal, now: DateTime<Utc>) -> ChangeError {
        match store::refused(&self.store, refusal, now) {
            Ok(now_stored) => stale(&now_stored).into(),
            Err(e) => e.into(),
        }
    }

    /// Validates `req` against the switches as stored: what they are, what they become,
    /// and the audit record saying so.
    async fn plan_at(
        &self,
        req: &ChangeRequest,
        origin: &Origin<'_>,
        now: DateTime<Utc>,
    ) -> Result<(KillSwitches, KillSwitches, AuditItem), ChangeError> {
        let reason = validate(req)?;
        // A change that waits for a second admin is a request, never a change: the callers
        // that take requests route it before it gets here.
        let also = match self.route(req, origin.actor)? {
            Route::Apply => None,
            Route::Emergency => Some(EMERGENCY_NOTE.to_string()),
            Route::Request => {
                return Err(AppError::Refused(
                    "This change waits for a second admin's approval.".into(),
                )
                .into())
            }
        };
        // Staff write reasons; staff paste customer details into them. Keep none.
        let reason = redact(reason.as_str());
        let current = store::load(&self.store, now).await?;
        let next = plan(&current, req, &reason, origin.actor, now)?;
        let item = audit_record(
            req.switch,
            origin,
            &current,
            &next,
            reason,
            now,
            self.ttls.audit_days,
            also,
        );
        Ok((current, next, item))
    }

    /// The change history, newest first.
    pub async fn history(
        &self,
        cursor: Option<&str>,
        limit: i32,
    ) -> Result<HistoryPage, ChangeError> {
        let page = audit::list_partition(&self.store, AUDIT_PARTITION, cursor, limit).await?;
        // Every record of the partition is a row: a move of a switch, or a change of what
        // moves it without a person (a trip, a trigger URL), in words.
        let entries = page.items.into_iter().filter_map(history_row).collect();
        Ok(HistoryPage {
            entries,
            next_cursor: page.next_cursor,
        })
    }
}

/// One record of the kill switches' audit partition as a row of their history; none for a
/// record this release cannot read.
fn history_row(item: AuditItem) -> Option<SwitchChangeRecord> {
    use crate::server::domain::kill_switches::approvals::approval_in_words;
    use crate::server::domain::kill_switches::schedule::schedule_in_words;
    use crate::server::domain::kill_switches::{trigger_in_words, trip_in_words};
    use crate::server::store::{
        kill_switch_approvals, kill_switch_schedule, kill_switch_triggers, kill_switch_trips,
    };
    let at = crate::server::clock::iso(item.at()?);
    let actor = item.actor;
    let words = |in_words: fn(&serde_json::Value) -> String| {
        let p: serde_json::Value = serde_json::from_str(&item.action_payload_redacted).ok()?;
        let switch = Switch::parse(p.get("switch")?.as_str()?).ok()?;
        Some((switch, in_words(&p)))
    };
    let automation = match item.action_type.as_str() {
        kill_switch_trips::AUDIT_ACTION => Some(words(trip_in_words)?),
        kill_switch_triggers::AUDIT_ACTION => Some(words(trigger_in_words)?),
        kill_switch_approvals::AUDIT_ACTION => Some(words(approval_in_words)?),
        kill_switch_schedule::AUDIT_ACTION => Some(words(schedule_in_words)?),
        _ => None,
    };
    if let Some((switch, reason)) = automation {
        return Some(SwitchChangeRecord {
            at,
            actor,
            switch,
            moved: None,
            reason,
            version: 0,
            ends_at: None,
            note: None,
        });
    }
    let p: Payload = serde_json::from_str(&item.action_payload_redacted).ok()?;
    Some(SwitchChangeRecord {
        at,
        actor,
        switch: p.switch,
        moved: Some((p.from, p.to)),
        reason: p.reason,
        version: p.version,
        ends_at: p.ends_at,
        note: p.note,
    })
}

/// A rule said no (`App`), or storage failed (`Store`).
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<ChangeError> for AppError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::App(e) => e,
            ChangeError::Store(e) => e.into(),
        }
    }
}

impl crate::server::services::idempotency::StopReason for ChangeError {
    fn stop_reason(&self) -> String {
        match self {
            ChangeError::App(AppError::Conflict(_)) => "conflict",
            ChangeError::App(AppError::Invalid { .. }) => "invalid",
            ChangeError::App(_) => "refused",
            ChangeError::Store(_) => "storage_error",
        }
        .into()
    }
}
