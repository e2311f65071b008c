//! Changing a kill switch: the rules (pure) and the one path that applies them.

use chrono::{DateTime, Utc};

use crate::model::switches::{
    HistoryPage, KillSwitches, Reason, Switch, SwitchChangeRecord, SwitchState,
};
use crate::model::AppError;
use crate::server::domain::redact::redact;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::switches::{self as store, Commit, AUDIT_ACTION, AUDIT_PARTITION};
use crate::server::store::Store;

/// A change as the form (or a client) asks for it.
#[derive(Clone, Debug)]
pub struct ChangeRequest {
    pub switch: Switch,
    pub enable: bool,
    /// The version the person saw when they decided.
    pub expected_version: u64,
    pub reason: String,
    /// Ticked "I confirm" (needed to turn safe mode off or automation on).
    pub confirmed: bool,
}

impl TryFrom<crate::server::contract::switches::SwitchChange> for ChangeRequest {
    type Error = AppError;

    fn try_from(c: crate::server::contract::switches::SwitchChange) -> Result<Self, AppError> {
        Ok(ChangeRequest {
            switch: Switch::parse(&c.switch)?,
            enable: c.enable,
            expected_version: c.expected_version,
            reason: c.reason,
            confirmed: c.confirm,
        })
    }
}

/// Checks that need no I/O; run before anything is read or written.
pub fn validate(req: &ChangeRequest) -> Result<Reason, AppError> {
    let reason = Reason::parse(&req.reason)?;
    if req.switch.needs_confirmation(req.enable) && !req.confirmed {
        return Err(AppError::invalid(
            "confirm",
            format!(
                "Confirm the change: {}",
                req.switch.describe(req.enable).to_lowercase()
            ),
        ));
    }
    Ok(reason)
}

/// The switches after the change, or why the change does not apply to `current`.
pub fn plan(
    current: &KillSwitches,
    req: &ChangeRequest,
    reason: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<KillSwitches, AppError> {
    if current.version != req.expected_version {
        return Err(stale(current));
    }
    if current.get(req.switch).enabled == req.enable {
        return Err(AppError::Conflict(format!(
            "{} is already {}; nothing changed.",
            req.switch.label(),
            if req.enable { "on" } else { "off" }
        )));
    }
    let mut next = current.clone();
    *next.get_mut(req.switch) = SwitchState {
        enabled: req.enable,
        changed_by: Some(actor.to_string()),
        changed_at: Some(now),
        reason: Some(reason.to_string()),
    };
    next.version = current.version + 1;
    Ok(next)
}

pub fn stale(current: &KillSwitches) -> AppError {
    AppError::Conflict(format!(
        "Changed by someone else since you loaded this page: now {}. Nothing was overwritten; \
         review the current values and try again.",
        current.summary()
    ))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    switch: Switch,
    from: bool,
    to: bool,
    version: u64,
    reason: String,
}

/// Settings the change needs from the configuration.
pub struct Ttls {
    pub audit_days: i64,
    pub settings_days: i64,
}

/// Validates, reads the current switches, and writes the change with its audit record in
/// one transaction conditioned on the version the person saw.
pub async fn change(
    store: &Store,
    req: &ChangeRequest,
    actor: &str,
    idempotency_key: &str,
    ttls: &Ttls,
    now: DateTime<Utc>,
    action_id: &str,
) -> Result<KillSwitches, ChangeError> {
    let reason = validate(req)?;
    // Staff write reasons; staff paste customer details into them. Keep none.
    let reason = redact(reason.as_str());
    let current = store::load(store, now).await?;
    let next = plan(&current, req, &reason, actor, now)?;

    let mut item = AuditItem::new(
        AUDIT_PARTITION,
        AUDIT_ACTION,
        now,
        action_id,
        ttls.audit_days,
    );
    item.actor = actor.to_string();
    item.idempotency_key = idempotency_key.to_string();
    item.action_payload_redacted = serde_json::to_string(&Payload {
        switch: req.switch,
        from: current.get(req.switch).enabled,
        to: req.enable,
        version: next.version,
        reason,
    })
    .unwrap_or_else(|_| "{}".into());

    match store::commit(
        store,
        &next,
        current.version,
        &item,
        now,
        ttls.settings_days,
    )
    .await?
    {
        Commit::Done => Ok(next),
        Commit::Stale(now_stored) => Err(stale(&now_stored).into()),
    }
}

/// The change history, newest first.
pub async fn history(
    store: &Store,
    cursor: Option<&str>,
    limit: i32,
) -> Result<HistoryPage, ChangeError> {
    let page = audit::list_partition(store, AUDIT_PARTITION, cursor, limit).await?;
    let entries = page
        .items
        .into_iter()
        .filter_map(|item| {
            let p: Payload = serde_json::from_str(&item.action_payload_redacted).ok()?;
            Some(SwitchChangeRecord {
                at: item.at()?,
                actor: item.actor,
                switch: p.switch,
                from: p.from,
                to: p.to,
                reason: p.reason,
                version: p.version,
            })
        })
        .collect();
    Ok(HistoryPage {
        entries,
        next_cursor: page.next_cursor,
    })
}

/// A rule said no (`App`), or storage failed (`Store`).
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error(transparent)]
    Store(#[from] crate::server::store::StoreError),
}

impl crate::server::domain::idempotency::StopReason for ChangeError {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn req(switch: Switch, enable: bool, version: u64) -> ChangeRequest {
        ChangeRequest {
            switch,
            enable,
            expected_version: version,
            reason: "incident 42".into(),
            confirmed: true,
        }
    }

    #[test]
    fn a_change_bumps_the_version_and_names_the_actor() {
        let now = Utc::now();
        let next = plan(
            &KillSwitches::safe_defaults(),
            &req(Switch::SafeMode, false, 0),
            "r",
            "alice",
            now,
        )
        .unwrap();
        assert_eq!(next.version, 1);
        assert!(!next.safe_mode.enabled);
        assert_eq!(next.safe_mode.changed_by.as_deref(), Some("alice"));
        assert!(
            !next.automation_enabled.enabled,
            "the other switch is untouched"
        );
    }

    #[test]
    fn stale_and_no_op_changes_are_conflicts() {
        let now = Utc::now();
        let current = KillSwitches::safe_defaults();
        let err = plan(&current, &req(Switch::SafeMode, false, 3), "r", "a", now).unwrap_err();
        assert!(
            matches!(&err, AppError::Conflict(m) if m.contains("someone else")),
            "{err:?}"
        );
        let err = plan(&current, &req(Switch::SafeMode, true, 0), "r", "a", now).unwrap_err();
        assert!(matches!(err, AppError::Conflict(_)));
    }

    #[test]
    fn risky_directions_need_confirmation_and_every_change_a_reason() {
        let mut r = req(Switch::AutomationEnabled, true, 0);
        r.confirmed = false;
        assert_eq!(validate(&r).unwrap_err().field(), Some("confirm"));
        let mut r = req(Switch::SafeMode, true, 0);
        r.confirmed = false;
        r.reason = "  ".into();
        assert_eq!(validate(&r).unwrap_err().field(), Some("reason"));
        r.reason = "drill".into();
        assert!(
            validate(&r).is_ok(),
            "turning safe mode on needs no confirmation"
        );
    }
}
