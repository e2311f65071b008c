//! Who is signed in and what their role lets them do.

use serde::{Deserialize, Serialize};

use super::AppError;

/// Roles are ordered: each one can do everything the one before it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads everything that is not personal data.
    Viewer,
    /// Viewer, plus day-to-day writes (publishing inbox messages, ...).
    Operator,
    /// Operator, plus kill switches, users, revealing personal data, expiring keys.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Result<Role, AppError> {
        match s.trim() {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            _ => Err(AppError::invalid(
                "role",
                "Unknown role: expected viewer, operator or admin.",
            )),
        }
    }

    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The signed-in user as the UI sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub name: String,
    pub role: Role,
}

/// A row of the Users page. Never carries a password hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserSummary {
    pub name: String,
    pub role: Role,
    pub disabled: bool,
    /// RFC 3339, UTC, to the second (as every time the pages show: the browser reads it
    /// without a date library).
    pub last_login_at: Option<String>,
    pub created_at: String,
}

/// The Users page's data: users, keys, the scopes a key may carry, and a fresh key for the
/// page's forms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsersView {
    pub users: Vec<UserSummary>,
    pub form_key: String,
}

/// The answer to a form that makes a secret (a password, an API key): the secret only on
/// the answer to the submission that made it; a repeat of that submission says so instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneTime {
    pub message: String,
    pub secret: Option<String>,
}

/// A user name: 2 to 64 characters of lower-case letters, digits, `.`, `_` or `-`.
pub fn parse_user_name(raw: &str) -> Result<String, AppError> {
    let name = raw.trim().to_ascii_lowercase();
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if !(2..=64).contains(&name.len()) || !ok_chars {
        return Err(AppError::invalid(
            "name",
            "A user name is 2 to 64 characters: letters, digits, '.', '_' or '-'.",
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Admin.allows(Role::Operator));
        assert!(Role::Operator.allows(Role::Viewer));
        assert!(!Role::Viewer.allows(Role::Operator));
        assert!(!Role::Operator.allows(Role::Admin));
    }

    #[test]
    fn user_names_are_normalized_and_bounded() {
        assert_eq!(parse_user_name(" Alice ").unwrap(), "alice");
        assert!(parse_user_name("a").is_err());
        assert!(parse_user_name("bob smith").is_err());
        assert!(parse_user_name("x#y").is_err());
    }
}
