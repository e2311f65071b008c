//! Resend a time window (docs/events.md, "Resend a time window"): side effects decided
//! within a window that the receiver took (or that died, or that an operator discarded), of
//! one kind or all, sent again under their own `webhook-id` so the receiver drops what it
//! already has. The page counts first; a start
//! with a reason is a bulk job (one per form), run by whichever console holds its lease,
//! which resends each action once: the move is conditioned on the action not carrying the
//! job's key already.

use chrono::{DateTime, Datelike, NaiveDateTime, Utc};

use super::ingest::Events;
use super::outbox::BulkRequest;
use crate::model::outbox::{ReceiverName, ResendCount};
use crate::model::AppError;
use crate::server::domain::events::decision::ActionType;
use crate::server::store::events::jobs::{self, JobOp};
use crate::server::store::events::outbox::Group;
use crate::server::store::events::outbox_reads::{self, Filter};

/// What a resend takes, checked once: a group (delivered, dead or discarded), one kind or
/// every kind, and a window that has begun.
#[derive(Clone, Debug, PartialEq)]
pub struct ResendScope {
    group: Group,
    action_type: Option<ActionType>,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    /// One receiver's side effects (`None`: every receiver's).
    receiver: Option<ReceiverName>,
}

/// A time as a form sends it (`2026-11-27T14:00`, seconds optional; UTC) or RFC 3339.
fn moment(field: &'static str, text: &str) -> Result<DateTime<Utc>, AppError> {
    let text = text.trim();
    let parsed = DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
                .map(|t| t.and_utc())
        });
    // Four-digit years only: records write times as text, and `+10000-…` sorts before them.
    parsed
        .filter(|t| (2000..=9999).contains(&t.year()))
        .ok_or_else(|| AppError::invalid(field, "A time like 2026-11-27T14:00 (UTC)."))
}

impl ResendScope {
    /// The scope a form names, as of `now`.
    pub fn parse(
        group: &str,
        action_type: &str,
        since: &str,
        until: &str,
        now: DateTime<Utc>,
    ) -> Result<ResendScope, AppError> {
        let group = match group.trim() {
            "" | "delivered" => Group::Delivered,
            "dead" => Group::Dead,
            "discarded" => Group::Discarded,
            _ => {
                return Err(AppError::invalid(
                    "group",
                    "Resend takes delivered side effects, dead letters or discarded ones.",
                ))
            }
        };
        let action_type =
            match action_type.trim() {
                "" | "all" => None,
                name => Some(ActionType::named(name).ok_or_else(|| {
                    AppError::invalid("action_type", "Not a kind of side effect.")
                })?),
            };
        let (since, until) = (moment("since", since)?, moment("until", until)?);
        if until <= since {
            return Err(AppError::invalid("until", "The end comes after the start."));
        }
        if since > now {
            return Err(AppError::invalid("since", "The window has not begun yet."));
        }
        // A window reaching past now takes what entered the group by the job's start (and
        // never what the job itself sends): the end stays as typed, so the same form
        // twice names the same job.
        Ok(ResendScope {
            group,
            action_type,
            since,
            until,
            receiver: None,
        })
    }

    /// The same scope, of the receiver `raw` names only (absent: every receiver's).
    pub fn of_receiver(self, raw: Option<&str>) -> Result<ResendScope, AppError> {
        let receiver = raw.map(ReceiverName::parse).transpose()?;
        Ok(ResendScope { receiver, ..self })
    }

    fn filter(&self) -> Filter {
        Filter {
            action_type: self.action_type.map(|t| t.as_str().to_string()),
            window: Some((self.since.timestamp_millis(), self.until.timestamp_millis())),
            receiver: self.receiver.as_ref().map(|r| r.as_str().to_string()),
            ..Filter::default()
        }
    }

    /// "12 delivered side effects (tag) decided from … to … UTC".
    fn words(&self, n: u64, exact: bool) -> String {
        let plural = if n == 1 { "" } else { "s" };
        let what = match self.group {
            Group::Dead => format!("dead letter{plural}"),
            Group::Discarded => format!("discarded side effect{plural}"),
            _ => format!("delivered side effect{plural}"),
        };
        let kind = self
            .action_type
            .map(|t| format!(" ({})", t.as_str()))
            .unwrap_or_default();
        let at = |t: DateTime<Utc>| t.format("%Y-%m-%d %H:%M:%S").to_string();
        let least = if exact { "" } else { "at least " };
        let to = self
            .receiver
            .as_ref()
            .map(|r| format!(" to {}", r.as_str()))
            .unwrap_or_default();
        format!(
            "{least}{n} {what}{kind}{to} decided from {} to {} UTC",
            at(self.since),
            at(self.until)
        )
    }
}

impl Events {
    /// `scope`'s filter, refused when its window ends before anything still kept begins
    /// (`events.outbox_days`): such a window can only read the whole group to find nothing.
    fn resend_filter(&self, scope: &ResendScope) -> Result<Filter, AppError> {
        let now = self.clock.now();
        if scope.until < now - chrono::Duration::days(self.config.events.outbox_days) {
            return Err(AppError::invalid(
                "until",
                format!(
                    "Side effects are kept {} days: this window ended before then.",
                    self.config.events.outbox_days
                ),
            ));
        }
        Ok(Filter {
            alive_at: Some(now.timestamp()),
            ..scope.filter()
        })
    }

    /// How many a resend of `scope` would send, in words: what the page shows before it
    /// asks for a reason.
    pub async fn count_resend(&self, scope: &ResendScope) -> Result<ResendCount, AppError> {
        if let Some(r) = &scope.receiver {
            self.known_receiver(r).await?;
        }
        let c = outbox_reads::tally(&self.store, scope.group, &self.resend_filter(scope)?).await?;
        Ok(ResendCount {
            n: c.n,
            words: scope.words(c.n, c.exact),
            form_key: crate::server::ids::random_hex(16),
        })
    }

    /// Starts the resend of `scope` as a bulk job, by `by`; a second start from the same
    /// form finds the first. Discarded side effects are an admin's to resend (an operator
    /// discarded them on purpose); one resend runs per receiver at a time, and one person
    /// or key runs at most [`RUNNING_PER_ACTOR`] jobs at once. Answers what it started, in
    /// words.
    pub async fn start_resend(
        &self,
        scope: &ResendScope,
        reason: &str,
        by: &Resender<'_>,
        form_key: &str,
    ) -> Result<String, AppError> {
        if let Some(r) = &scope.receiver {
            self.known_receiver(r).await?;
        }
        let op = if scope.group == Group::Discarded {
            if !by.admin {
                return Err(AppError::Refused(
                    "Resending discarded side effects is an admin's choice: an operator \
                     discarded them on purpose. An admin resends them on the Outbox."
                        .into(),
                ));
            }
            JobOp::ResendDiscarded
        } else {
            JobOp::Resend
        };
        let req = BulkRequest {
            op,
            filter: self.resend_filter(scope)?,
            reason: reason.to_string(),
            actor: by.actor.to_string(),
            form_key: form_key.to_string(),
        };
        self.resend_room(&req, scope.group.as_str()).await?;
        let job = self.start_bulk(scope.group.as_str(), req).await?;
        let total = u64::try_from(job.total).unwrap_or(0);
        Ok(format!(
            "Resending {} ({}). Its progress is under Bulk jobs on the Outbox.",
            scope.words(total, true),
            job.reason
        ))
    }
}

/// Who starts a resend: a person (an admin or not) or a client (`api:<key>`, never an
/// admin).
pub struct Resender<'a> {
    pub actor: &'a str,
    pub admin: bool,
}

/// The jobs one person or key may have running at once.
pub const RUNNING_PER_ACTOR: usize = 2;

impl Events {
    /// Refuses a resend while another runs for its receiver, or while its starter runs
    /// [`RUNNING_PER_ACTOR`] jobs already (the same form again finds its own job). Read
    /// from the running jobs in DynamoDB, not held: two starts racing from two forms can
    /// both pass, at most once each.
    async fn resend_room(&self, req: &BulkRequest, group: &str) -> Result<(), AppError> {
        // The job's key as `start_bulk` makes it.
        let (g, _) = req.op.group_and_move(super::jobs::group_named(group)?)?;
        let key = req.job_key(g);
        let running = jobs::running(&self.store).await?;
        if running.iter().any(|j| j.event_id == key) {
            return Ok(());
        }
        // A resend without a receiver takes every receiver's: it meets every other.
        let meets = |r: &Option<String>| {
            r.is_none() || req.filter.receiver.is_none() || *r == req.filter.receiver
        };
        if let Some(other) = running
            .iter()
            .find(|j| j.op.resends() && meets(&j.receiver))
        {
            return Err(AppError::Conflict(format!(
                "A resend to {} is running already (started by {}): wait for it to finish \
                 (Bulk jobs on the Outbox).",
                other.receiver.as_deref().unwrap_or("every receiver"),
                other.actor
            )));
        }
        let mine = running.iter().filter(|j| j.actor == req.actor).count();
        if mine >= RUNNING_PER_ACTOR {
            return Err(AppError::Conflict(format!(
                "You have {mine} bulk jobs running, the most one person or key may: wait for \
                 one to finish."
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-27T15:30:00Z".parse().unwrap()
    }

    #[test]
    fn a_scope_is_checked_once_at_the_edge() {
        let s =
            ResendScope::parse("", "tag", "2026-11-27T14:00", "2026-11-27T15:00", now()).unwrap();
        assert_eq!(s.group, Group::Delivered);
        assert_eq!(s.action_type, Some(ActionType::Tag));
        assert_eq!(
            s.words(2, true),
            "2 delivered side effects (tag) decided from 2026-11-27 14:00:00 to 2026-11-27 15:00:00 UTC"
        );
        let s = ResendScope::parse(
            "dead",
            "all",
            "2026-11-27T15:00:00Z",
            "2026-11-28T00:00",
            now(),
        )
        .unwrap();
        assert_eq!(s.group, Group::Dead);
        assert!(s
            .words(1, false)
            .starts_with("at least 1 dead letter decided"));
        for (group, kind, since, until, field) in [
            ("held", "", "2026-11-27T14:00", "2026-11-27T15:00", "group"),
            (
                "",
                "shopify",
                "2026-11-27T14:00",
                "2026-11-27T15:00",
                "action_type",
            ),
            ("", "", "yesterday", "2026-11-27T15:00", "since"),
            ("", "", "2026-11-27T15:00", "2026-11-27T14:00", "until"),
            ("", "", "2026-11-27T16:00", "2026-11-27T17:00", "since"),
            ("", "", "2026-11-27T14:00", "+10000-01-01T00:00", "until"),
            (
                "",
                "",
                "2026-11-27T14:00",
                "+10000-01-01T00:00:00Z",
                "until",
            ),
        ] {
            let e = ResendScope::parse(group, kind, since, until, now()).unwrap_err();
            assert!(
                matches!(&e, AppError::Invalid { field: f, .. } if f == field),
                "{group} {kind} {since} {until}: {e:?}"
            );
        }
    }
}
