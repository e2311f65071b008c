//! Alerts the consoles announced and that still hold (docs/operations.md, "Alerts").

use serde::{Deserialize, Serialize};

/// One firing alert.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FiringAlert {
    /// `idempotency.failure:<scope>`, `measurements.duplicates`, `outbox.dead_letters`.
    pub id: String,
    pub summary: String,
    /// When it began to fire (RFC 3339).
    pub since: String,
    /// The page that shows it, with the console's public address (empty when none is set).
    pub link: String,
}
