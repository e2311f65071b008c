//! The server functions' write forms, through the idempotency engine (server only). Each form carries a key the server
//! rendered into it; a double click, a refresh or a retry of the same submission runs the
//! operation once, and the second submission waits for the first's answer.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::model::AppError;
use crate::server::domain::idempotency::sent_keys::FormKey;
use crate::server::services::idempotency::{Attempt, Call, KeyInputs, Outcome, SafeResponse};
use crate::server::state::AppState;
use crate::server::store::tx::Writes;

/// One submitted form: who sent it, which form, its key, and what it asked for.
pub struct Submission<'a> {
    pub actor: &'a str,
    /// The idempotency scope, e.g. `conversations.reveal`.
    pub scope: &'a str,
    pub form_key: &'a str,
    /// The form's values: the same key with other values is refused.
    pub values: KeyInputs,
}

/// Runs `op` at most once for this submission. Its response (the engine's allow-list, docs/idempotency.md)
/// comes back on every submission of the same form.
pub async fn once<F, Fut>(
    state: &AppState,
    sub: Submission<'_>,
    op: F,
) -> Result<SafeResponse, AppError>
where
    F: FnOnce(Attempt) -> Fut,
    Fut: Future<Output = Result<Value, AppError>>,
{
    let inputs = inputs(&sub)?;
    let call = call(&sub, &inputs);
    let outcome = state.idempotency.run(&call, op).await?;
    settle(state, &call, outcome).await
}

/// [`once`] for an operation whose whole effect is DynamoDB writes: they go in one
/// transaction with the form's key (the engine's one-request path).
pub async fn once_writes<F, Fut>(
    state: &AppState,
    sub: Submission<'_>,
    op: F,
) -> Result<SafeResponse, AppError>
where
    F: FnOnce(Attempt) -> Fut,
    Fut: Future<Output = Result<(Writes, Value), AppError>>,
{
    let inputs = inputs(&sub)?;
    let call = call(&sub, &inputs);
    let outcome = state
        .idempotency
        .run_writes(&call, op, |_| {
            AppError::Conflict("This changed meanwhile. Reload the page and try again.".into())
        })
        .await?;
    settle(state, &call, outcome).await
}

/// [`once_writes`] for an operation that answers in words: `op` gives the writes and the
/// words, and every submission of the same form gets the first one's words.
pub async fn once_words<F, Fut>(
    state: &AppState,
    sub: Submission<'_>,
    op: F,
) -> Result<String, AppError>
where
    F: FnOnce(Attempt) -> Fut,
    Fut: Future<Output = Result<(Writes, String), AppError>>,
{
    let answer = once_writes(state, sub, |attempt| async move {
        let (writes, words) = op(attempt).await?;
        Ok((writes, serde_json::json!({ "ok": true, "data": words })))
    })
    .await?;
    Ok(answer
        .data
        .and_then(|d| d.as_str().map(str::to_string))
        .unwrap_or_else(|| "Done.".into()))
}

/// The key's inputs: the form's key and who sent it; a stale or forged key is refused.
fn inputs(sub: &Submission<'_>) -> Result<KeyInputs, AppError> {
    let form_key = FormKey::parse(sub.form_key)?;
    Ok(KeyInputs::new()
        .id("form_key", &*form_key)
        .id("actor", sub.actor))
}

fn call<'a>(sub: &Submission<'a>, inputs: &'a KeyInputs) -> Call<'a> {
    Call {
        tenant: "console",
        scope: sub.scope,
        inputs,
        fingerprint: Some(sub.values.fingerprint()),
    }
}

/// The answer to a submission: its own, the first one's (a second submission waits up to
/// five seconds for it), or why there is none.
async fn settle(
    state: &AppState,
    call: &Call<'_>,
    outcome: Outcome<AppError>,
) -> Result<SafeResponse, AppError> {
    match outcome {
        Outcome::Fresh(r) | Outcome::Replayed(r) => Ok(r),
        Outcome::InProgress { retry_after } => {
            match state.idempotency.wait(call, Duration::from_secs(5)).await? {
                Some(stored) => Ok(SafeResponse::sanitize(
                    &serde_json::from_str(&stored.json).unwrap_or(Value::Null),
                )),
                None => Err(AppError::InProgress {
                    retry_after_secs: retry_after.as_secs().max(1),
                }),
            }
        }
        Outcome::Failed(e) => Err(e),
        Outcome::Mismatch => Err(AppError::Conflict(
            "This form was already submitted with other values. Reload the page and try again."
                .into(),
        )),
    }
}
