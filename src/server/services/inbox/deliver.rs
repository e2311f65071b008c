//! Delivering a publish's copies: in batches, each copy in the same transaction as its
//! counters, a copy already there dropping out of its batch.

use chrono::{DateTime, Duration, Utc};

use super::Inbox;
use crate::model::AppError;
use crate::server::store::inbox::{self as store, MessageItem, Written, KEEP_DAYS};

impl Inbox {
    /// Delivers the copies in batches that stay within DynamoDB's 100 actions a
    /// transaction (each copy is a put and its counters); how many batches it wrote.
    pub(super) async fn deliver_all(
        &self,
        copies: &[MessageItem],
        categorized: bool,
        now: DateTime<Utc>,
    ) -> Result<usize, AppError> {
        let keep = (now + Duration::days(KEEP_DAYS)).timestamp();
        let per_copy = if categorized { 3 } else { 2 };
        let mut batches = 0;
        for chunk in copies.chunks(100 / per_copy) {
            self.deliver_batch(chunk, keep).await?;
            batches += 1;
            if self.crash_points.after_publish_batch(batches) {
                return Err(AppError::Internal {
                    reference: "simulated-crash".into(),
                });
            }
        }
        Ok(batches)
    }

    /// Writes one batch of copies with their counters in one transaction. Copies that are
    /// there already (an earlier, interrupted publish wrote them) leave the batch.
    async fn deliver_batch(&self, chunk: &[MessageItem], keep: i64) -> Result<(), AppError> {
        let mut pending: Vec<&MessageItem> = chunk.iter().collect();
        for _ in 0..chunk.len() + 1 {
            if pending.is_empty() {
                return Ok(());
            }
            let mut actions = Vec::new();
            let mut starts = Vec::new();
            for m in &pending {
                starts.push(actions.len());
                actions.extend(store::deliver(&self.store, m, keep)?);
            }
            match store::transact(&self.store, actions).await? {
                Written::Done => return Ok(()),
                Written::Refused(idx) => {
                    pending = pending
                        .into_iter()
                        .zip(&starts)
                        .filter(|(_, s)| !idx.contains(s))
                        .map(|(m, _)| m)
                        .collect();
                }
            }
        }
        Err(AppError::InProgress {
            retry_after_secs: 1,
        })
    }
}
