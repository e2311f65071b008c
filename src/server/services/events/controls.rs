//! The receiver's controls for machine clients (`/api/v1/receiver`, docs/events.md): the
//! same pause and breaker as the Receiver page's forms, with the same rules (a reason; a
//! resume names the pause, a close the opening), each committed with its audit record at
//! once. The REST idempotency layer answers a retry with the first answer.

use super::breaker::BreakerId;
use super::ingest::Events;
use super::pause::PauseId;
use crate::model::outbox::ReceiverName;
use crate::model::AppError;

/// A change of the receiver's deliveries.
pub enum Control {
    Pause,
    Resume(PauseId),
    OpenBreaker,
    CloseBreaker(BreakerId),
}

impl Events {
    /// Makes `control` by `actor` with `reason`; answers what it did, in words.
    pub async fn control(
        &self,
        name: &ReceiverName,
        control: &Control,
        reason: &str,
        actor: &str,
    ) -> Result<String, AppError> {
        let now = self.clock.now();
        let (words, writes) = match control {
            Control::Pause => self.prepare_pause(name, reason, actor, now).await?,
            Control::Resume(id) => self.prepare_resume(name, id, reason, actor, now).await?,
            Control::OpenBreaker => {
                self.prepare_breaker_open_by(name, reason, actor, now)
                    .await?
            }
            Control::CloseBreaker(id) => {
                self.prepare_breaker_close(name, id, reason, actor, now)
                    .await?
            }
        };
        if !writes.commit(&self.store).await?.is_done() {
            return Err(AppError::Conflict(
                "The receiver's state changed meanwhile; read it again.".into(),
            ));
        }
        Ok(words)
    }
}
