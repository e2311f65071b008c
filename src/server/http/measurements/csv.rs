//! The console's CSV export of the measurement attempt audit (docs/measurements.md, "The
//! CSV export"): up to 10,000 records of one user or one outcome, redacted for the
//! reader's role.

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::model::users::{CurrentUser, Role};
use crate::model::AppError;
use crate::server::domain::redact;
use crate::server::http::problem::Problem;
use crate::server::services::measurements::pages::parse_outcome;
use crate::server::state::AppState;
use crate::server::store::measurements::{self as store, Action, AuditItem};
use crate::server::store::query::Start;
use crate::server::store::Store;

const HEADER: &str =
    "at,user_id,measurement_id,action,reason,weight_kg,timestamp,unit,source,correlation_id";

/// Rows after which no further page is read (the last page read is kept whole).
const MAX_ROWS: usize = 10_000;

#[derive(Deserialize)]
pub(super) struct CsvQuery {
    user: Option<String>,
    outcome: Option<String>,
}

/// Whose audit records an export reads.
#[derive(Clone, Copy)]
enum Scope<'a> {
    /// One user's, of every outcome (rows of another outcome than the one asked are left
    /// out).
    User(&'a str),
    /// One outcome's, across users.
    Outcome(Action),
}

/// Up to 10,000 audit records of one user or one outcome as CSV.
pub(super) async fn audit_csv(
    State(state): State<AppState>,
    Query(q): Query<CsvQuery>,
    req: Request,
) -> Result<Response, Problem> {
    let Some(me) = req
        .extensions()
        .get::<CurrentUser>()
        .filter(|u| u.role.allows(Role::Viewer))
    else {
        return Err(Problem::from(AppError::Unauthenticated));
    };
    let role = me.role;
    // An id typed into the address is counted as the person's lookup.
    let given = q.user.unwrap_or_default();
    let user = state
        .answer_refs(&me.name, &[], &[&given])
        .await?
        .given_user(&given)
        .into_id();
    if user.chars().count() > 128 {
        return Err(Problem::invalid(
            "user",
            "A user id is at most 128 characters.",
        ));
    }
    let outcome = parse_outcome(&q.outcome.unwrap_or_default())?;
    // The file is named after the outcome, or just "user": never after the user's id.
    let (scope, name) = match outcome {
        _ if !user.is_empty() => (Scope::User(&user), "user".to_string()),
        Some(o) => (Scope::Outcome(o), o.as_str().to_string()),
        None => return Err(Problem::invalid("user", "Give a user or an outcome.")),
    };
    let rows = rows(&state.store, scope, outcome, role).await?;
    Ok(attachment(rows, &name))
}

/// The header and the rows of the records `scope` names (of `outcome` only, when given),
/// as `role` may see them.
async fn rows(
    store: &Store,
    scope: Scope<'_>,
    outcome: Option<Action>,
    role: Role,
) -> Result<Vec<String>, Problem> {
    let mut rows = vec![HEADER.to_string()];
    let mut cursor: Option<String> = None;
    while rows.len() <= MAX_ROWS {
        let (items, next) = match scope {
            Scope::User(user) => {
                let start = cursor.as_deref().map_or(Start::First, Start::After);
                let (items, next, _) = store::audits_of_user(store, user, None, start, 500).await?;
                (items, next)
            }
            Scope::Outcome(o) => store::audits_by_outcome(store, o, cursor.as_deref(), 500).await?,
        };
        rows.extend(
            items
                .iter()
                .filter(|a| outcome.is_none_or(|o| a.action == o))
                .map(|a| row(a, role)),
        );
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    Ok(rows)
}

/// One audit record as a CSV line, user id and reason as `role` may see them.
fn row(a: &AuditItem, role: Role) -> String {
    let p = a.payload.clone().unwrap_or_default();
    let (user_id, reason) = (
        redact::for_role(role, &a.user_id),
        redact::for_role(role, &a.reason),
    );
    [
        &a.at,
        &user_id,
        &a.measurement_id,
        a.action.as_str(),
        &reason,
        &p.weight_kg,
        &p.timestamp,
        &p.unit,
        &p.source,
        &a.correlation_id,
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

/// What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): `=`, `+`,
/// `-`, `@`, a tab and a carriage return.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

fn csv_field(s: &str) -> String {
    // Quote everything; neutralize spreadsheet formulas.
    let s = if s.starts_with(FORMULA_STARTS) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The rows as a CSV download named after the user or outcome.
fn attachment(rows: Vec<String>, name: &str) -> Response {
    let disposition = format!(
        "attachment; filename=\"measurement-audit-{}.csv\"",
        name.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect::<String>()
    );
    let mut res = (StatusCode::OK, rows.join("\n") + "\n").into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        res.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn every_formula_start_owasp_lists_is_neutralized() {
        for lead in ["=", "+", "-", "@", "\t", "\r"] {
            let field = csv_field(&format!("{lead}HYPERLINK(\"http://x\")"));
            assert!(field.starts_with("\"'"), "{lead:?}: {field}");
        }
        assert_eq!(csv_field("kg"), "\"kg\"");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
    }
}
