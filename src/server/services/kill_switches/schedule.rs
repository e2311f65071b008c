//! Scheduled changes (docs/switches.md, "Scheduled changes"): an admin (or a client) sets a
//! change for a later time, with its reason; any admin cancels one, with a reason. Every
//! console looks every [`super::reverts::EVERY`]; the first to find a change due runs it
//! in one transaction with taking it off the schedule (conditioned on the schedule's
//! version and the switches'), so it runs once across consoles, whichever set it. A change
//! whose switch was changed after it was set does nothing, and the history says why.

use chrono::{DateTime, Utc};

use super::{audit_record, validate, ChangeError, ChangeRequest, Origin, Switches};
use crate::model::kill_switches::{Reason, Scheduled};
use crate::model::AppError;
use crate::server::domain::kill_switches::approvals::Route;
use crate::server::domain::kill_switches::schedule::{self as rules, Run, ACTOR};
use crate::server::domain::kill_switches::{plan, timers::minute};
use crate::server::domain::redact::redact;
use crate::server::ids::random_hex;
use crate::server::store::audit;
use crate::server::store::kill_switch_schedule::{self as store, AUDIT_ACTION};
use crate::server::store::kill_switches as switches_store;
use crate::server::store::tx::Writes;
use crate::server::store::StoreError;

/// How often a write is tried again when the schedule changed under it.
const ATTEMPTS: usize = 3;
/// The schedule's item lives at least this long after its last write (a change may be set a
/// month ahead).
const KEEP_DAYS: i64 = 60;

impl Switches {
    /// The changes set for later, soonest first.
    pub async fn schedule(&self) -> Result<Vec<Scheduled>, StoreError> {
        Ok(store::load(&self.store, self.clock.now()).await?.pending)
    }

    /// Sets `req` by `actor` for `at`, as writes (the schedule, its audit record) for a
    /// caller that commits them with the form's key.
    pub async fn prepare_scheduled(
        &self,
        req: &ChangeRequest,
        at: DateTime<Utc>,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(Scheduled, Writes), ChangeError> {
        let reason = redact(validate(req)?.as_str());
        // A schedule cannot be a second pair of eyes: where turning safety off needs one,
        // it is asked for when it is due, not set for later.
        if self.route(req, actor)? != Route::Apply {
            return Err(AppError::Refused(
                "Turning safety off needs a second admin's approval here, which a schedule \
                 cannot give: ask for it when it is due."
                    .into(),
            )
            .into());
        }
        let current = switches_store::load(&self.store, now).await?;
        let stored = store::load(&self.store, now).await?;
        let id = random_hex(16);
        let (next, made) =
            rules::schedule(&stored.pending, &current, req, &reason, actor, &id, at, now)?;
        let payload = serde_json::json!({
            "switch": made.switch, "enable": made.enable, "change": "scheduled",
            "id": made.id, "at": made.at, "reason": made.reason,
        });
        let record = self.record_of(
            AUDIT_ACTION,
            payload,
            actor,
            &format!("scheduled-{id}"),
            now,
        );
        let writes = store::save(&self.store, next, stored.version, now, self.keep())?
            .and(audit::writes(&self.store, &record)?);
        Ok((made, writes))
    }

    /// Sets `req` by `actor` for `at`, committed on its own (a REST client's change).
    pub async fn schedule_change(
        &self,
        req: &ChangeRequest,
        at: DateTime<Utc>,
        actor: &str,
    ) -> Result<Scheduled, ChangeError> {
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let (made, writes) = self.prepare_scheduled(req, at, actor, now).await?;
            if writes.commit(&self.store).await?.is_done() {
                return Ok(made);
            }
        }
        Err(AppError::Unavailable {
            retry_after_secs: 1,
        }
        .into())
    }

    /// Cancels the change `id`, by `actor`, with `reason`, as writes for a caller that
    /// commits them with the form's key; answers in words.
    pub async fn prepare_cancel(
        &self,
        id: &str,
        reason: &str,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, Writes), ChangeError> {
        let reason = redact(Reason::parse(reason)?.as_str());
        let stored = store::load(&self.store, now).await?;
        let Some(found) = stored.pending.iter().find(|s| s.id == id).cloned() else {
            return Err(AppError::Conflict(
                "This change is no longer set: it ran, or was cancelled. Reload the page.".into(),
            )
            .into());
        };
        let rest = stored
            .pending
            .iter()
            .filter(|s| s.id != id)
            .cloned()
            .collect();
        let payload = serde_json::json!({
            "switch": found.switch, "enable": found.enable, "change": "cancelled",
            "id": found.id, "at": found.at, "scheduled_by": found.scheduled_by, "reason": reason,
        });
        let record = self.record_of(
            AUDIT_ACTION,
            payload,
            actor,
            &format!("cancelled-{id}"),
            now,
        );
        let writes = store::save(&self.store, rest, stored.version, now, self.keep())?
            .and(audit::writes(&self.store, &record)?);
        let words = format!(
            "Cancelled: {} was to turn {} at {}.",
            found.switch.label(),
            if found.enable { "on" } else { "off" },
            minute(&found.at)
        );
        Ok((words, writes))
    }

    /// Cancels the change `id` that `actor` (a client) set, with `reason`, committed on its
    /// own; a change someone else set is refused (an admin cancels any in the console).
    pub async fn cancel_own(
        &self,
        id: &str,
        reason: &str,
        actor: &str,
    ) -> Result<String, ChangeError> {
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let stored = store::load(&self.store, now).await?;
            if let Some(found) = stored.pending.iter().find(|s| s.id == id) {
                if found.scheduled_by != actor {
                    return Err(AppError::Refused(format!(
                        "{} set this change: a client cancels only the changes it set (an \
                         admin cancels any on the Kill switch automation page).",
                        found.scheduled_by
                    ))
                    .into());
                }
            }
            let (words, writes) = self.prepare_cancel(id, reason, actor, now).await?;
            if writes.commit(&self.store).await?.is_done() {
                return Ok(words);
            }
        }
        Err(AppError::Unavailable {
            retry_after_secs: 1,
        }
        .into())
    }

    /// Runs every change whose time has come: each once across consoles (or, when its
    /// switch was changed after it was set, nothing, said in the history). Answers what
    /// this console ran, in words, for the alert channels.
    pub async fn run_schedule_due(&self) -> Result<Vec<String>, StoreError> {
        let mut done = Vec::new();
        for _ in 0..ATTEMPTS {
            let now = self.clock.now();
            let stored = store::load(&self.store, now).await?;
            let Some(s) = rules::due(&stored.pending, now).into_iter().next() else {
                break;
            };
            let current = switches_store::load(&self.store, now).await?;
            let rest: Vec<Scheduled> = stored
                .pending
                .iter()
                .filter(|p| p.id != s.id)
                .cloned()
                .collect();
            let run = match self
                .author_refusal(&s.scheduled_by, &s.scheduled_at, now)
                .await?
            {
                Some(why) => Err(why),
                None => self.run_writes(&s, &current, &stored.pending, now)?,
            };
            let (writes, words) = match run {
                Ok((next, change, words)) => {
                    // The switch's other changes were set against the schedule's own moves.
                    let rest = rules::after_run(rest, &s, next.get(s.switch).changed_at.clone());
                    let writes = store::save(&self.store, rest, stored.version, now, self.keep())?;
                    (writes.and(change), words)
                }
                Err(why) => {
                    let payload = serde_json::json!({
                        "switch": s.switch, "enable": s.enable, "change": "void", "id": s.id,
                        "at": s.at, "scheduled_by": s.scheduled_by, "why": why,
                    });
                    let record = self.record_of(
                        AUDIT_ACTION,
                        payload,
                        ACTOR,
                        &format!("void-{}", s.id),
                        now,
                    );
                    let words = format!(
                        "A scheduled change did not run: {} was to turn {} at {} (set by {}); {why}",
                        s.switch.label(),
                        if s.enable { "on" } else { "off" },
                        minute(&s.at),
                        s.scheduled_by
                    );
                    let writes = store::save(&self.store, rest, stored.version, now, self.keep())?;
                    (writes.and(audit::writes(&self.store, &record)?), words)
                }
            };
            // Refused: another console ran it (or the schedule or the switches changed):
            // read again.
            if writes.commit(&self.store).await?.is_done() {
                tracing::info!(switch = s.switch.key(), "scheduled kill-switch change ran");
                done.push(words);
            }
        }
        Ok(done)
    }

    /// A due change's writes: the switches afterwards, their change with its audit record
    /// and the words to announce; or why it does nothing.
    #[allow(clippy::type_complexity)]
    fn run_writes(
        &self,
        s: &Scheduled,
        current: &crate::model::kill_switches::KillSwitches,
        pending: &[Scheduled],
        now: DateTime<Utc>,
    ) -> Result<
        Result<(crate::model::kill_switches::KillSwitches, Writes, String), String>,
        StoreError,
    > {
        let req = match rules::run(s, current, pending, now) {
            Run::Change(req) => req,
            Run::Void(why) => return Ok(Err(why)),
        };
        // Four eyes are judged when it runs too: turned on since it was set, they hold.
        match self.route(&req, &s.scheduled_by) {
            Ok(Route::Apply) => {}
            _ => {
                return Ok(Err(
                    "void: turning safety off needs a second admin's approval now".into(),
                ))
            }
        }
        let reason = rules::reason_of(s);
        let next = match plan(current, &req, &reason, ACTOR, now) {
            Ok(next) => next,
            Err(e) => return Ok(Err(format!("void: {e}"))),
        };
        let action_id = format!("run-{}", s.id);
        let origin = Origin {
            actor: ACTOR,
            idempotency_key: "",
            action_id: &action_id,
        };
        let note = format!("on behalf of {}", s.scheduled_by);
        let item = audit_record(
            s.switch,
            &origin,
            current,
            &next,
            reason,
            now,
            self.ttls.audit_days,
            Some(note),
        );
        let ttl = self.ttls.settings_days;
        let writes = switches_store::change(&self.store, &next, current.version, &item, now, ttl)?;
        let words = format!(
            "Scheduled: {} turned {} (set by {} at {}): “{}”",
            s.switch.label(),
            if s.enable { "on" } else { "off" },
            s.scheduled_by,
            minute(&s.scheduled_at),
            s.reason
        );
        Ok(Ok((next, writes, words)))
    }

    /// Why the author of a scheduled change (or a request) made at `made_at` may no longer
    /// make it, if so: a change runs as its author's, so it needs what they would need now.
    /// A user must still be an enabled admin, and have been one since; an API key
    /// (`api:<name>`) must still be live, unrevoked, with `switches:write`, under that name,
    /// and made before it (a new key of an old name is not its author). A time that does
    /// not read is refused.
    pub(super) async fn author_refusal(
        &self,
        author: &str,
        made_at: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        use crate::model::api_keys::ApiScope;
        let Ok(made_at) = DateTime::parse_from_rfc3339(made_at).map(|t| t.with_timezone(&Utc))
        else {
            return Ok(Some("void: when it was made does not read".into()));
        };
        if let Some(name) = author.strip_prefix("api:") {
            let keys = crate::server::store::api_keys::list(&self.store, now).await?;
            let live = keys.iter().any(|k| {
                k.name == name
                    && k.revoked_at.is_none()
                    && k.created_at <= made_at
                    && k.scopes
                        .iter()
                        .any(|s| ApiScope::parse(s) == Some(ApiScope::SwitchesWrite))
            });
            return Ok((!live).then(|| {
                format!("void: the API key {name} that set it was revoked or has expired")
            }));
        }
        let user = crate::server::store::users::get(&self.store, author, now).await?;
        Ok(match user {
            Some(u) if u.is_active_admin(now) && u.admin_since() <= made_at => None,
            Some(u) if u.disabled => Some(format!("void: {author} who set it is disabled")),
            Some(_) => Some(format!("void: {author} who set it is no longer an admin")),
            None => Some(format!("void: {author} who set it is no longer a user")),
        })
    }

    fn keep(&self) -> i64 {
        self.ttls.settings_days.max(KEEP_DAYS)
    }
}
