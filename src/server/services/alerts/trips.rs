//! A firing alert's trips (docs/switches.md, "Trips"): before its message goes out, the
//! switches its rule trips go to their safe position, once per firing, and the message says
//! what they did.

use super::{Alerts, Judged};
use crate::server::domain::redact;
use crate::server::store::alerts::AlertItem;

impl Alerts {
    /// `j` with what its trips did added to its summary; `None` when they could not act
    /// (DynamoDB failed): the message then waits for the next try.
    pub(super) async fn with_trips(&self, j: &Judged, item: &AlertItem) -> Option<Judged> {
        let mut j = j.clone();
        if item.state != "firing" {
            return Some(j);
        }
        let why = format!("{} (window {})", j.summary, j.window);
        match self.switches.trip(&j.id, item.episode, &why).await {
            Ok(moved) => {
                for s in moved {
                    let to = if s.safe() { "on" } else { "off" };
                    j.summary.push_str(&format!(
                        "; its trip turned {} {to}",
                        s.label().to_lowercase()
                    ));
                }
                Some(j)
            }
            Err(e) => {
                tracing::warn!(alert = %j.id, error = %redact::redact(&e.to_string()), "a trip could not act; the alert's message waits for the next try");
                None
            }
        }
    }
}
