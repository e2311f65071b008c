//! Lookups by what a person typed: a phone number, an email, a conversation id or a user
//! id given to a search or filter (through `/find`, or in a page's address) rather than a
//! reference a page made. A page's answer tells whether what was typed exists (a search
//! with results or none), so a viewer could confirm a masked number by guessing its hidden
//! digits. Each person's lookups are counted in DynamoDB (every console counts into the
//! same counter, `login_attempts-<env>`): past `auth.lookups_audit_after` in a window the
//! person is named in an audit record (once per window), and past `auth.lookups_limit`
//! every further lookup is refused until the window ends (docs/security.md, "Nothing
//! personal in a URL").

use chrono::Duration;
use serde::Serialize;

use super::{Users, AUDIT_PARTITION};
use crate::model::AppError;
use crate::server::ids::random_hex;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::users::login_attempts::{self, Reserved, Rule};

/// The audit record's action type: a person looked up many typed values in one window.
pub const MANY_LOOKUPS: &str = "many_lookups";

#[derive(Serialize)]
struct ManyLookups<'a> {
    user: &'a str,
    lookups: u32,
    window_minutes: i64,
    limit: u32,
}

impl Users {
    /// Counts one lookup by a typed value for `person`; refuses it past the limit.
    pub async fn count_lookup(&self, person: &str) -> Result<(), AppError> {
        let now = self.clock.now();
        let rule = Rule {
            limit: self.auth.lookups_limit,
            window: Duration::minutes(self.auth.lookups_minutes),
        };
        let key = format!("lookups:{person}");
        match login_attempts::reserve(&self.store, &key, rule, now).await? {
            Reserved::Counted { n, .. } => {
                crate::server::metrics::lookup("counted");
                if n == self.auth.lookups_audit_after {
                    crate::server::metrics::lookup("audited");
                    tracing::warn!(user = %person, lookups = n, "many lookups by typed values");
                    let mut item = AuditItem::new(
                        AUDIT_PARTITION,
                        MANY_LOOKUPS,
                        now,
                        &random_hex(8),
                        self.ttls.audit_days,
                    );
                    item.actor = person.to_string();
                    item.action_payload_redacted = serde_json::to_string(&ManyLookups {
                        user: person,
                        lookups: n,
                        window_minutes: self.auth.lookups_minutes,
                        limit: rule.limit,
                    })
                    .unwrap_or_default();
                    audit::put(&self.store, &item).await?;
                }
                Ok(())
            }
            Reserved::Locked { until } => {
                crate::server::metrics::lookup("refused");
                let wait = (until - now).num_seconds().max(1);
                Err(AppError::Limited {
                    message: format!(
                        "You have searched by a typed phone number, email or id {} times in \
                         {} minutes, the most one person may. Links on the console's pages \
                         still work; searching by what you type works again in {} minutes.",
                        rule.limit,
                        self.auth.lookups_minutes,
                        (wait + 59) / 60
                    ),
                    retry_after_secs: u64::try_from(wait).unwrap_or(1),
                })
            }
        }
    }
}
