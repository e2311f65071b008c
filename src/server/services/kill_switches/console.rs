//! A change from the console's form: one submission changes the switch once, however often
//! the browser sends it (a double click, a refresh, a retry), through the idempotency engine
//! (docs/idempotency.md).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::approvals::requested_in_words;
use super::{validate, ChangeError, ChangeRequest, Origin, Switches};
use crate::model::kill_switches::{ChangeAnswer, KillSwitches};
use crate::model::AppError;
use crate::server::domain::idempotency::sent_keys::FormKey;
use crate::server::domain::kill_switches::approvals::Route;
use crate::server::domain::kill_switches::timers::Ends;
use crate::server::ids::random_hex;
use crate::server::services::idempotency::{Call, Engine, KeyInputs, Outcome};

/// The idempotency scope of kill-switch changes from the console.
pub const SCOPE: &str = "kill_switches.change";

/// How long a repeated submission waits for the first one to finish.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(5);

/// What a change form's submission did, and, the first time an emergency change is made,
/// the words to announce on the alert channels.
#[derive(Clone, Debug, PartialEq)]
pub struct Changed {
    pub answer: ChangeAnswer,
    pub announce: Option<String>,
}

impl Switches {
    /// Applies `req`, sent by `actor` with the page's `form_key`, at most once per key (or,
    /// when it waits for a second admin, makes the request once); answers with the switches
    /// as stored afterwards.
    pub async fn change_once(
        &self,
        engine: &Engine,
        req: &ChangeRequest,
        at: Option<DateTime<Utc>>,
        form_key: &str,
        actor: &str,
    ) -> Result<Changed, AppError> {
        // Bad input is answered before the key is claimed: fixing it and resubmitting the
        // same form is a new attempt, not a replay.
        validate(req)?;
        let route = self.route(req, actor)?;
        let form_key = FormKey::parse(form_key)?;
        let inputs = KeyInputs::new()
            .id("form_key", &*form_key)
            .id("actor", actor);
        let call = Call {
            tenant: "console",
            scope: SCOPE,
            inputs: &inputs,
            fingerprint: Some(fingerprint(req, at)),
        };
        if let Some(at) = at {
            return self.schedule_once(engine, &call, req, at, actor).await;
        }
        if route == Route::Request {
            return self.request_once(engine, &call, req, actor).await;
        }
        self.apply_once(engine, &call, req, route == Route::Emergency, actor)
            .await
    }

    /// The change made at once (an `emergency` skipping the approval), once per form key:
    /// the change, its audit record and the key in one transaction (one request).
    async fn apply_once(
        &self,
        engine: &Engine,
        call: &Call<'_>,
        req: &ChangeRequest,
        emergency: bool,
        actor: &str,
    ) -> Result<Changed, AppError> {
        let now = self.clock.now();
        let action_id = random_hex(8);
        let outcome = engine
            .run_writes(
                call,
                |attempt| async move {
                    let origin = Origin {
                        actor,
                        idempotency_key: &attempt.key_hash,
                        action_id: &action_id,
                    };
                    let (next, writes) = self.prepare_at(req, &origin, now).await?;
                    let answer = serde_json::json!({"ok": true, "data": {"version": next.version}});
                    Ok::<_, ChangeError>((writes, answer))
                },
                |refusal| self.refused(&refusal, now),
            )
            .await?;
        let fresh = matches!(outcome, Outcome::Fresh(_));
        if fresh {
            tracing::info!(actor = %actor, switch = req.switch.key(), enabled = req.enable, "kill switch changed");
        }
        let switches = self.settle(engine, call, outcome).await?;
        let announce = (fresh && emergency).then(|| {
            crate::server::metrics::kill_switch_approval("emergency");
            format!(
                "Emergency: {actor} turned {} {} without a second admin's approval: “{}”",
                req.switch.label(),
                if req.enable { "on" } else { "off" },
                crate::server::domain::redact::redact(req.reason.trim())
            )
        });
        Ok(Changed {
            answer: ChangeAnswer {
                switches,
                requested: None,
            },
            announce,
        })
    }

    /// A change set for later, once per form key: a repeated submission answers with the
    /// same words.
    async fn schedule_once(
        &self,
        engine: &Engine,
        call: &Call<'_>,
        req: &ChangeRequest,
        at: DateTime<Utc>,
        actor: &str,
    ) -> Result<Changed, AppError> {
        let now = self.clock.now();
        let outcome = engine
            .run_writes(
                call,
                |_| async move {
                    let (made, writes) = self.prepare_scheduled(req, at, actor, now).await?;
                    let words = format!(
                        "Scheduled: {} turns {} at {}.",
                        made.switch.label(),
                        if made.enable { "on" } else { "off" },
                        crate::server::domain::kill_switches::timers::minute(&made.at)
                    );
                    let answer = serde_json::json!({"ok": true, "data": {"requested": words}});
                    Ok::<_, ChangeError>((writes, answer))
                },
                |_| {
                    ChangeError::App(AppError::Conflict(
                        "The schedule changed at the same moment; nothing was set. Reload the \
                         page and try again."
                            .into(),
                    ))
                },
            )
            .await?;
        self.answered(engine, call, outcome).await
    }

    /// The request a change that waits for a second admin makes, once per form key: a
    /// repeated submission answers with the same request.
    async fn request_once(
        &self,
        engine: &Engine,
        call: &Call<'_>,
        req: &ChangeRequest,
        actor: &str,
    ) -> Result<Changed, AppError> {
        let now = self.clock.now();
        let outcome = engine
            .run_writes(
                call,
                |_| async move {
                    let (made, writes) = self.prepare_request(req, actor, None, now).await?;
                    let words = requested_in_words(&made);
                    let answer = serde_json::json!({"ok": true, "data": {"requested": words}});
                    Ok::<_, ChangeError>((writes, answer))
                },
                |_| {
                    ChangeError::App(AppError::Conflict(
                        "Another request was made at the same moment; nothing was asked. \
                         Reload the page and try again."
                            .into(),
                    ))
                },
            )
            .await?;
        if matches!(outcome, Outcome::Fresh(_)) {
            crate::server::metrics::kill_switch_approval("requested");
        }
        self.answered(engine, call, outcome).await
    }

    /// The switches after a request or a scheduled change was made, with its words.
    async fn answered(
        &self,
        engine: &Engine,
        call: &Call<'_>,
        outcome: Outcome<ChangeError>,
    ) -> Result<Changed, AppError> {
        let words = |r: &crate::server::services::idempotency::SafeResponse| {
            r.data
                .as_ref()
                .and_then(|d| d.get("requested"))
                .and_then(|w| w.as_str())
                .map(str::to_string)
        };
        let requested = match &outcome {
            Outcome::Fresh(r) | Outcome::Replayed(r) => words(r),
            _ => None,
        };
        let switches = self.settle(engine, call, outcome).await?;
        Ok(Changed {
            answer: ChangeAnswer {
                switches,
                requested: Some(requested.unwrap_or_else(|| "Done.".into())),
            },
            announce: None,
        })
    }

    /// The switches as stored once the submission has run, or why it did not change them.
    async fn settle(
        &self,
        engine: &Engine,
        call: &Call<'_>,
        outcome: Outcome<ChangeError>,
    ) -> Result<KillSwitches, AppError> {
        match outcome {
            Outcome::Fresh(_) | Outcome::Replayed(_) => Ok(self.load().await?),
            // A double click: the first submission is still running; answer with its result.
            Outcome::InProgress { retry_after } => match engine.wait(call, WAIT_FOR_FIRST).await? {
                Some(_) => Ok(self.load().await?),
                None => Err(AppError::InProgress {
                    retry_after_secs: retry_after.as_secs().max(1),
                }),
            },
            Outcome::Failed(e) => Err(e.into()),
            Outcome::Mismatch => Err(AppError::Conflict(
                "This form was already submitted with other values. Reload the page and try again."
                    .into(),
            )),
        }
    }
}

/// The whole request: the same form key sent again with other values is a mismatch, not a
/// replay.
fn fingerprint(req: &ChangeRequest, at: Option<DateTime<Utc>>) -> String {
    let inputs = KeyInputs::new()
        .id("switch", req.switch.key())
        .flag("enable", req.enable)
        .num("expected_version", req.expected_version as i64)
        .text("reason", &req.reason)
        .flag("confirmed", req.confirmed);
    // Only an emergency names itself, as only a timed change names its end.
    let inputs = if req.emergency {
        inputs.flag("emergency", true)
    } else {
        inputs
    };
    let inputs = match at {
        Some(at) => inputs.text("at", &crate::server::clock::iso(at)),
        None => inputs,
    };
    // Only a timed change names its end: an untimed one's fingerprint is what it was before
    // changes had ends, so a retry across a deployment still matches.
    match req.ends {
        None => inputs,
        Some(Ends::After(m)) => inputs.num("for_minutes", m),
        Some(Ends::At(t)) => inputs.text("ends_at", &crate::server::clock::iso(t)),
    }
    .fingerprint()
}
