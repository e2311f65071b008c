use leptos::prelude::*;

use crate::model::audit::AuditRows;
use crate::model::AppError;

/// Audit records by conversation, by action type, or by day (and time range, in the
/// reader's zone: `tz` minutes east of UTC), newest first, cursor-paged. Its address is
/// pinned: Leptos derives a default one from the module path, and it moved here from
/// `api/events.rs`; pinned, a later move keeps the address pages call.
#[server(endpoint = "list_audit")]
pub async fn list_audit(
    conversation: String,
    action_type: String,
    day: String,
    from: String,
    to: String,
    // Absent from a page of an older release (a rolling deployment): UTC.
    #[server(default)] tz: String,
    cursor: Option<String>,
) -> Result<AuditRows, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::domain::audit::window::Typed;
    use crate::server::services::audit::AuditFilter;
    let user = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let refs = state.answer_refs(&user.name, &[&conversation], &[]).await?;
    let cursor = cursor.filter(|c| !c.is_empty());
    let filter = AuditFilter {
        conversation: conversation.trim(),
        action_type: action_type.trim(),
        window: Typed {
            day: day.trim(),
            from: from.trim(),
            to: to.trim(),
            tz: tz.trim(),
        },
    };
    state
        .audit
        .rows(&refs, &filter, user.role, cursor.as_deref())
        .await
}
