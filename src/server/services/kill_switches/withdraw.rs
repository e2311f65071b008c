//! What an author left pending, withdrawn with their right (docs/switches.md, "Who may
//! still"): when an API key is revoked, or an admin disabled or made something else, the
//! changes they set for later and the requests they left for a second admin are taken off
//! the schedule and the approvals in the same transaction as the revoke or the change of
//! the user, with one audit record per list and switch. So nothing they asked runs, or can be approved,
//! after they lost the right to ask it; a run that finds its author without the right is
//! void all the same (`schedule::author_refusal`).

use chrono::{DateTime, Utc};

use super::Ttls;
use crate::model::kill_switches::Switch;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::kill_switches::AUDIT_PARTITION;
use crate::server::store::tx::Writes;
use crate::server::store::{kill_switch_approvals, kill_switch_schedule, Store, StoreError};

/// The schedule's item lives at least this long after its last write (as
/// `schedule::KEEP_DAYS`).
const SCHEDULE_KEEP_DAYS: i64 = 60;

/// What withdrawing an author's pending changes and requests writes, and how many.
pub struct Withdrawn {
    /// None when they left nothing pending.
    pub writes: Option<Writes>,
    pub scheduled: usize,
    pub requests: usize,
}

/// The writes that take every change set for later and every request for approval by one
/// of `authors` (a user's name, `api:<key name>`) off their lists, each conditioned on the
/// list's version as read now, with a record per list and switch naming `actor` and `why`
/// (at most six writes, whatever was pending). A caller
/// whose transaction is refused by a list's version reads again.
pub async fn withdraw(
    store: &Store,
    authors: &[String],
    actor: &str,
    why: &str,
    ttls: Ttls,
    now: DateTime<Utc>,
) -> Result<Withdrawn, StoreError> {
    let mine = |by: &str| authors.iter().any(|a| a == by);
    // One record per list and switch, naming every change withdrawn: the transaction
    // stays small however much was left pending.
    let records = |action: &str, gone: &[(Switch, &str)]| -> Result<Option<Writes>, StoreError> {
        let mut out: Option<Writes> = None;
        for switch in Switch::ALL {
            let ids: Vec<&str> = gone
                .iter()
                .filter(|(s, _)| *s == switch)
                .map(|(_, id)| *id)
                .collect();
            let Some(first) = ids.first() else { continue };
            let mut r = AuditItem::new(
                AUDIT_PARTITION,
                action,
                now,
                &format!("withdrawn-{first}"),
                ttls.audit_days,
            );
            r.actor = actor.to_string();
            r.action_payload_redacted = serde_json::json!({
                "switch": switch, "change": "withdrawn", "ids": ids, "authors": authors,
                "reason": why,
            })
            .to_string();
            out = Some(both(out, audit::writes(store, &r)?));
        }
        Ok(out)
    };
    let mut writes: Option<Writes> = None;

    let schedule = kill_switch_schedule::load(store, now).await?;
    let (gone, kept): (Vec<_>, Vec<_>) = schedule
        .pending
        .into_iter()
        .partition(|s| mine(&s.scheduled_by));
    if !gone.is_empty() {
        let keep = ttls.settings_days.max(SCHEDULE_KEEP_DAYS);
        let save = kill_switch_schedule::save(store, kept, schedule.version, now, keep)?;
        writes = Some(both(writes, save));
        let ids: Vec<(Switch, &str)> = gone.iter().map(|s| (s.switch, s.id.as_str())).collect();
        if let Some(r) = records(kill_switch_schedule::AUDIT_ACTION, &ids)? {
            writes = Some(both(writes, r));
        }
    }

    let approvals = kill_switch_approvals::load(store, now).await?;
    let (asked, kept): (Vec<_>, Vec<_>) = approvals
        .requests
        .into_iter()
        .partition(|a| mine(&a.requested_by));
    if !asked.is_empty() {
        let days = ttls.settings_days;
        let save = kill_switch_approvals::save(store, kept, approvals.version, now, days)?;
        writes = Some(both(writes, save));
        let ids: Vec<(Switch, &str)> = asked.iter().map(|a| (a.switch, a.id.as_str())).collect();
        if let Some(r) = records(kill_switch_approvals::AUDIT_ACTION, &ids)? {
            writes = Some(both(writes, r));
        }
    }
    Ok(Withdrawn {
        writes,
        scheduled: gone.len(),
        requests: asked.len(),
    })
}

/// `first` (if any) followed by `then`, in one transaction.
fn both(first: Option<Writes>, then: Writes) -> Writes {
    match first {
        Some(all) => all.and(then),
        None => then,
    }
}
