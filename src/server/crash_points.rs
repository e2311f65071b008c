//! Points between two writes of a workflow where a console can die. The product never
//! stops at one ([`Never`]); a test implements [`CrashPoints`] to stop a console there, as a
//! crash would, and proves what the next console (or the next attempt) makes of it.
//! Failures of DynamoDB itself are the `dynamodb-faults` proxy's, not these.

/// Where a workflow asks whether this console dies now. Each answer is asked once, at
/// its point; `true` ends the workflow there, leaving what it wrote so far.
pub trait CrashPoints: Send + Sync {
    /// This console claimed a delivery and is about to send it.
    fn after_delivery_claim(&self) -> bool {
        false
    }

    /// A publish wrote `batches` batches of its copies and is about to write the next.
    fn after_publish_batch(&self, batches: usize) -> bool {
        let _ = batches;
        false
    }
}

/// The product's answer everywhere: carry on.
pub struct Never;

impl CrashPoints for Never {}
