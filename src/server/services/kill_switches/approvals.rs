//! Four eyes (docs/switches.md, "Approvals"): with approvals required, a change in a risky
//! direction is a request that a second admin approves or rejects, each with a reason. The
//! request, its decision and what the decision does are written in one transaction
//! conditioned on the requests' version (and, for an approval, the switches' version the
//! request saw): two admins deciding at once, or two consoles, decide it once.

use chrono::{DateTime, Utc};

use super::{audit_record, validate, ChangeError, ChangeRequest, Origin, Switches};
use crate::model::kill_switches::{Approval, KillSwitches, Reason};
use crate::model::AppError;
use crate::server::config::SwitchesSection;
use crate::server::domain::kill_switches::approvals::{self as rules, Decision, Route};
use crate::server::domain::kill_switches::{plan, timers::minute};
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::store::audit;
use crate::server::store::kill_switch_approvals::{self as store, AUDIT_ACTION};
use crate::server::store::kill_switches as switches_store;
use crate::server::store::tx::Writes;
use crate::server::store::StoreError;

/// How often a decision or a request is tried again when the requests changed under it.
const ATTEMPTS: usize = 3;

/// Whether approvals are required, for how long a request waits, and who may skip it.
#[derive(Clone, Debug, Default)]
pub struct ApprovalPolicy {
    pub required: bool,
    pub minutes: i64,
    pub emergency_admins: Vec<String>,
}

impl From<&SwitchesSection> for ApprovalPolicy {
    fn from(s: &SwitchesSection) -> ApprovalPolicy {
        ApprovalPolicy {
            required: s.require_approval.unwrap_or(true),
            minutes: s.approval_minutes,
            emergency_admins: s
                .emergency_admins
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }
}

/// What a decision did, in words for the one who made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    pub words: String,
    /// The switches afterwards.
    pub switches: KillSwitches,
    pub decision: Decision,
    pub switch: crate::model::kill_switches::Switch,
}

impl Decided {
    /// Counts and logs a decision that was committed.
    pub fn count(&self) {
        tracing::info!(
            decision = self.decision.as_str(),
            switch = self.switch.key(),
            "kill switch request decided"
        );
        crate::server::metrics::kill_switch_approval(self.decision.past());
    }
}

impl Switches {
    /// These switches under `policy`.
    pub fn with_approvals(mut self, policy: ApprovalPolicy) -> Switches {
        self.approvals = policy;
        self
    }

    pub fn approvals_required(&self) -> bool {
        self.approvals.required
    }

    /// Whether `actor` may skip the approval in an emergency.
    pub fn may_skip_approval(&self, actor: &str) -> bool {
        self.approvals.emergency_admins.iter().any(|n| n == actor)
    }

    /// How `req` by `actor` goes ahead.
    pub fn route(&self, req: &ChangeRequest, actor: &str) -> Result<Route, AppError> {
        rules::route(req, self.approvals.required, self.may_skip_approval(actor))
    }

    /// The requests waiting for a second admin, oldest first (not the expired or stale
    /// ones: they can no longer be approved, and the history tells them).
    pub async fn approvals(&self) -> Result<Vec<Approval>, StoreError> {
        let version = switches_store::load(&self.store, self.clock.now())
            .await?
            .version;
        self.approvals_at(version).await
    }

    /// [`Switches::approvals`] against the switches' `version` as the caller read them.
    pub async fn approvals_at(&self, version: u64) -> Result<Vec<Approval>, StoreError> {
        let now = self.clock.now();
        let stored = store::load(&self.store, now).await?;
        Ok(rules::pending(&stored.requests, now, version))
    }

    /// The request `req` by `actor` makes, as writes (the requests, and its audit record) to
    /// commit with the idempotency key; the requests' item is first among them.
    pub async fn prepare_request(
        &self,
        req: &ChangeRequest,
        actor: &str,
        on_behalf_of: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(Approval, Writes), ChangeError> {
        let reason = redact(validate(req)?.as_str());
        let current = switches_store::load(&self.store, now).await?;
        let stored = store::load(&self.store, now).await?;
        let id = random_hex(16);
        let minutes = self.approvals.minutes;
        let (next, made) = rules::request(
            &stored.requests,
            &current,
            req,
            &reason,
            actor,
            on_behalf_of,
            &id,
            now,
            minutes,
        )?;
        let payload = serde_json::json!({
            "switch": made.switch, "enable": made.enable, "change": "requested",
            "id": made.id, "reason": made.reason, "expires_at": made.expires_at,
        });
        let record = self.record_of(AUDIT_ACTION, payload, actor, &format!("request-{id}"), now);
        let ttl = self.ttls.settings_days;
        let writes = store::save(&self.store, next, stored.version, now, ttl)?
            .and(audit::writes(&self.store, &record)?);
        Ok((made, writes))
    }

    /// The request `req` by `actor` (an API key, made by `on_behalf_of`) makes, committed on
    /// its own (a REST client's change).
    pub async fn request_change(
        &self,
        req: &ChangeRequest,
        actor: &str,
        on_behalf_of: Option<&str>,
    ) -> Result<Approval, ChangeError> {
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let (made, writes) = self.prepare_request(req, actor, on_behalf_of, now).await?;
            if writes.commit(&self.store).await?.is_done() {
                crate::server::metrics::kill_switch_approval("requested");
                return Ok(made);
            }
        }
        Err(busy().into())
    }

    /// Approves or rejects the request `id`, by `decider`, with `reason`: once, however
    /// many admins or consoles decide it at the same moment. Committed on its own, tried
    /// again on what is stored when the requests or the switches changed under it.
    pub async fn decide(
        &self,
        id: &str,
        decision: Decision,
        reason: &str,
        decider: &str,
    ) -> Result<Decided, ChangeError> {
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let (decided, writes) = self
                .prepare_decision(id, decision, reason, decider, now)
                .await?;
            // Refused: the requests or the switches changed meanwhile. Decide again on what
            // is stored now (a request decided by someone else is no longer pending; a
            // change of the switches makes it stale).
            if writes.commit(&self.store).await?.is_done() {
                decided.count();
                return Ok(decided);
            }
        }
        Err(busy().into())
    }

    /// The decision as writes, for a caller that commits them with the form's key: the
    /// requests without it (conditioned on their version), the decider's record, and for
    /// an approval the switches' change (conditioned on the version the request saw) with
    /// its record.
    pub async fn prepare_decision(
        &self,
        id: &str,
        decision: Decision,
        reason: &str,
        decider: &str,
        now: DateTime<Utc>,
    ) -> Result<(Decided, Writes), ChangeError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        let stored = store::load(&self.store, now).await?;
        let current = switches_store::load(&self.store, now).await?;
        let (found, rest) = rules::decide(&stored.requests, &current, id, decider, decision, now)?;
        if decision == Decision::Approve {
            self.may_approve(&found, decider, now).await?;
        }
        let ttl = self.ttls.settings_days;
        // The decider's own record: the audit trail finds every approval and rejection by
        // who made it.
        let payload = serde_json::json!({
            "switch": found.switch, "enable": found.enable, "change": decision.past(),
            "id": found.id, "requested_by": found.requested_by, "reason": reason,
        });
        let record = self.record_of(
            AUDIT_ACTION,
            payload,
            decider,
            &format!("{}-{id}", decision.past()),
            now,
        );
        let writes = store::save(&self.store, rest, stored.version, now, ttl)?
            .and(audit::writes(&self.store, &record)?);
        let (writes, next) = match decision {
            Decision::Reject => (writes, current.clone()),
            Decision::Approve => {
                let (change, next) = self.approved(&found, &current, decider, &reason, now)?;
                (writes.and(change), next)
            }
        };
        let decided = Decided {
            words: decided_in_words(&found, decision),
            switches: next,
            decision,
            switch: found.switch,
        };
        Ok((decided, writes))
    }

    /// The change an approved request makes: its writes (the switches, conditioned on the
    /// version the request saw, and the change's record) and the switches afterwards.
    fn approved(
        &self,
        found: &Approval,
        current: &KillSwitches,
        decider: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<(Writes, KillSwitches), ChangeError> {
        let req = rules::change_of(found)?;
        let next = plan(current, &req, &found.reason, &found.requested_by, now)?;
        let action_id = format!("change-{}", found.id);
        let origin = Origin {
            actor: &found.requested_by,
            idempotency_key: "",
            action_id: &action_id,
        };
        let note = rules::approved_note(found, decider, reason);
        let days = self.ttls.audit_days;
        let item = audit_record(
            found.switch,
            &origin,
            current,
            &next,
            found.reason.clone(),
            now,
            days,
            Some(note),
        );
        let ttl = self.ttls.settings_days;
        let writes = switches_store::change(&self.store, &next, current.version, &item, now, ttl)?;
        Ok((writes, next))
    }
}

impl Switches {
    /// Whether `decider` may approve `found`: they are an enabled admin, and were one
    /// before it was asked (an admin made or promoted after a request is no second pair
    /// of eyes for it: its requester could have made them); and its requester may still
    /// ask it (an enabled admin, or a live key with `switches:write`).
    async fn may_approve(
        &self,
        found: &Approval,
        decider: &str,
        now: DateTime<Utc>,
    ) -> Result<(), ChangeError> {
        let Ok(asked) =
            DateTime::parse_from_rfc3339(&found.requested_at).map(|t| t.with_timezone(&Utc))
        else {
            return Err(AppError::Conflict(
                "This request's time does not read: reject it and ask again.".into(),
            )
            .into());
        };
        match crate::server::store::users::get(&self.store, decider, now).await? {
            Some(u) if u.is_active_admin(now) && u.admin_since() <= asked => {}
            Some(u) if u.is_active_admin(now) => {
                return Err(AppError::Refused(format!(
                    "You became an admin at {}, after this request was made at {}: an admin \
                     of before it must approve it.",
                    minute(&u.admin_since().to_rfc3339()),
                    minute(&found.requested_at)
                ))
                .into())
            }
            _ => return Err(AppError::Forbidden.into()),
        }
        if let Some(why) = self
            .author_refusal(&found.requested_by, &found.requested_at, now)
            .await?
        {
            let why = why.trim_start_matches("void: ");
            return Err(AppError::Refused(format!(
                "This request can no longer be approved: {why}. Reject it."
            ))
            .into());
        }
        Ok(())
    }
}

fn busy() -> AppError {
    AppError::Unavailable {
        retry_after_secs: 1,
    }
}

fn decided_in_words(a: &Approval, decision: Decision) -> String {
    let what = format!(
        "{} turns {}",
        a.switch.label(),
        if a.enable { "on" } else { "off" }
    );
    match decision {
        Decision::Approve => format!("Approved: {what} (asked by {}).", a.requested_by),
        Decision::Reject => format!(
            "Rejected: {}'s request ({what}, asked at {}).",
            a.requested_by,
            minute(&a.requested_at)
        ),
    }
}

/// A request made, in words for its requester.
pub fn requested_in_words(a: &Approval) -> String {
    format!(
        "Requested: {} turns {} once another admin approves, by {}.",
        a.switch.label(),
        if a.enable { "on" } else { "off" },
        minute(&a.expires_at)
    )
}
