//! A change from the console's form: one submission changes the switch once, however often
//! the browser sends it (a double click, a refresh, a retry), through the idempotency engine
//! (docs/idempotency.md).

use std::time::Duration;

use super::{validate, ChangeError, ChangeRequest, Origin, Switches};
use crate::model::kill_switches::KillSwitches;
use crate::model::AppError;
use crate::server::domain::idempotency::sent_keys::FormKey;
use crate::server::domain::kill_switches::timers::Ends;
use crate::server::ids::random_hex;
use crate::server::services::idempotency::{Call, Engine, KeyInputs, Outcome};

/// The idempotency scope of kill-switch changes from the console.
pub const SCOPE: &str = "kill_switches.change";

/// How long a repeated submission waits for the first one to finish.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(5);

impl Switches {
    /// Applies `req`, sent by `actor` with the page's `form_key`, at most once per key;
    /// answers with the switches as stored afterwards.
    pub async fn change_once(
        &self,
        engine: &Engine,
        req: &ChangeRequest,
        form_key: &str,
        actor: &str,
    ) -> Result<KillSwitches, AppError> {
        // Bad input is answered before the key is claimed: fixing it and resubmitting the
        // same form is a new attempt, not a replay.
        validate(req)?;
        let form_key = FormKey::parse(form_key)?;
        let inputs = KeyInputs::new()
            .id("form_key", &*form_key)
            .id("actor", actor);
        let call = Call {
            tenant: "console",
            scope: SCOPE,
            inputs: &inputs,
            fingerprint: Some(fingerprint(req)),
        };
        let now = self.clock.now();
        let action_id = random_hex(8);
        // The change, its audit record and the key in one transaction (one request).
        let outcome = engine
            .run_writes(
                &call,
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
        if matches!(outcome, Outcome::Fresh(_)) {
            tracing::info!(actor = %actor, switch = req.switch.key(), enabled = req.enable, "kill switch changed");
        }
        self.settle(engine, &call, outcome).await
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
fn fingerprint(req: &ChangeRequest) -> String {
    let inputs = KeyInputs::new()
        .id("switch", req.switch.key())
        .flag("enable", req.enable)
        .num("expected_version", req.expected_version as i64)
        .text("reason", &req.reason)
        .flag("confirmed", req.confirmed);
    // Only a timed change names its end: an untimed one's fingerprint is what it was before
    // changes had ends, so a retry across a deployment still matches.
    match req.ends {
        None => inputs,
        Some(Ends::After(m)) => inputs.num("for_minutes", m),
        Some(Ends::At(t)) => inputs.text("ends_at", &crate::server::clock::iso(t)),
    }
    .fingerprint()
}
