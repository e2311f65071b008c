//! The audit trail as the Audit page reads it (docs/events.md): records by conversation,
//! by action type, or by day and time range in the reader's zone ([`window`]), newest
//! first, each with its sentence ([`sentences`]); records about staff and API keys for
//! admins only. The [`Audit`] service (`state.audit`) reads; every area writes its own
//! records with the change they record (`store::audit`).

pub mod sentences;

use chrono::SecondsFormat;

use crate::model::audit::{AuditRow, AuditRows, ACTION_TYPES};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::clock::Clock;
use crate::server::domain::audit::partition;
use crate::server::domain::audit::window::{self, Typed};
use crate::server::domain::redact;
use crate::server::services::conversations::reference::Refs;
use crate::server::services::events::pages::masked_in;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::Store;

const PAGE: usize = 50;

/// The audit partitions of the console's staff and API keys: admins only.
const ADMIN_PARTITIONS: [&str; 2] = [
    crate::server::services::users::AUDIT_PARTITION,
    crate::server::services::api_keys::AUDIT_PARTITION,
];
/// The action types recorded only in those partitions.
const ADMIN_ACTION_TYPES: [&str; 4] = [
    "user_change",
    "many_lookups",
    "api_key_created",
    "api_key_revoked",
];

/// The audit trail's reads (`state.audit`). Cheap to clone.
#[derive(Clone)]
pub struct Audit {
    store: Store,
    clock: Clock,
}

impl Audit {
    pub fn new(store: Store, clock: Clock) -> Audit {
        Audit { store, clock }
    }

    /// Audit records by conversation, by action type, or by day (and time range), newest
    /// first, cursor-paged. Records about staff and API keys are for admins only.
    pub async fn rows(
        &self,
        refs: &Refs,
        f: &AuditFilter<'_>,
        role: Role,
        cursor: Option<&str>,
    ) -> Result<AuditRows, AppError> {
        let conversation = refs.given(f.conversation).into_id();
        partition::check(&conversation)?;
        check_action_type(f.action_type)?;
        let admin = role.allows(Role::Admin);
        let staff_records = ADMIN_PARTITIONS.contains(&conversation.as_str())
            || ADMIN_ACTION_TYPES.contains(&f.action_type);
        if staff_records && !admin {
            return Err(AppError::Refused(
                "Only admins may read the records of users and API keys.".into(),
            ));
        }
        // Nothing else narrows the records: a day's, through the by-day index.
        let by_day = conversation.is_empty() && f.action_type.is_empty();
        let w = window::window(&f.window, by_day, self.clock.now())?;
        let q = audit::AuditQuery {
            partition: (!conversation.is_empty()).then_some(conversation.as_str()),
            action_type: (!f.action_type.is_empty()).then_some(f.action_type),
            day: None,
            between: w.between.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
            hidden: if admin { &[] } else { &ADMIN_PARTITIONS },
        };
        let (items, next_cursor) = if by_day {
            audit::list_days(&self.store, &q, &w.days, cursor, PAGE).await?
        } else {
            audit::list(&self.store, &q, cursor, PAGE).await?
        };
        Ok(AuditRows {
            window: w.said,
            rows: items.into_iter().map(|a| audit_row(a, refs)).collect(),
            next_cursor,
            conversation: (!conversation.is_empty())
                .then(|| redact::conversation_id(&conversation)),
            conversation_ref: if conversation.is_empty() {
                String::new()
            } else {
                refs.of_id(&conversation)
            },
        })
    }
}

pub struct AuditFilter<'a> {
    pub conversation: &'a str,
    pub action_type: &'a str,
    /// The day and time range, in the reader's zone.
    pub window: Typed<'a>,
}

fn audit_row(a: AuditItem, refs: &Refs) -> AuditRow {
    let system = a.conversation_id.starts_with("system#");
    let raw_id = if system {
        String::new()
    } else {
        a.conversation_id.clone()
    };
    let payload = masked_in(&a.action_payload_redacted, &raw_id);
    AuditRow {
        conversation_ref: (!system).then(|| refs.of_id(&a.conversation_id)),
        at: a
            .at()
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
            .unwrap_or_default(),
        conversation_id: if system {
            a.conversation_id
        } else {
            redact::conversation_id(&a.conversation_id)
        },
        summary: sentences::describe(&a.action_type, &payload, &a.result),
        action_type: a.action_type,
        payload,
        idempotency_key: masked_in(&a.idempotency_key, &raw_id),
        result: a.result,
        actor: a.actor,
    }
}

fn check_action_type(action_type: &str) -> Result<(), AppError> {
    if action_type.is_empty() || ACTION_TYPES.iter().any(|(t, _)| *t == action_type) {
        return Ok(());
    }
    let known: Vec<&str> = ACTION_TYPES.iter().map(|(t, _)| *t).collect();
    Err(AppError::invalid(
        "action_type",
        format!(
            "There is no action type \"{}\". Known types: {}.",
            action_type.chars().take(64).collect::<String>(),
            known.join(", ")
        ),
    ))
}
