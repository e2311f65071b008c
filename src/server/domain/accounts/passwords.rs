//! Credentials: password hashing (argon2id), session ids and API keys (random, stored only
//! as SHA-256), and the lockout rule.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::model::AppError;
use crate::server::ids::{hex, random_hex};

pub const MIN_PASSWORD_CHARS: usize = 12;
pub const API_KEY_PREFIX: &str = "opsk_";

/// Checks a new password's shape before hashing it.
pub fn check_new_password(password: &str) -> Result<(), AppError> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(AppError::invalid(
            "password",
            format!("Use at least {MIN_PASSWORD_CHARS} characters."),
        ));
    }
    if n > 256 {
        return Err(AppError::invalid("password", "Use at most 256 characters."));
    }
    Ok(())
}

/// An argon2id hash in PHC string form (salt and parameters included).
pub fn hash_password(password: &str) -> Result<String, String> {
    let mut salt_bytes = [0u8; 16];
    getrandom::fill(&mut salt_bytes).map_err(|e| e.to_string())?;
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

pub fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// Spends the same time as a real verification, so an unknown user name answers no faster
/// than a wrong password.
pub fn verify_against_nothing(password: &str) {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let phc = DUMMY.get_or_init(|| hash_password("not a real password at all").unwrap_or_default());
    let _ = verify_password(password, phc);
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// A 256-bit session id (hex); only its hash is stored.
pub fn new_session_id() -> String {
    random_hex(32)
}

pub fn new_api_key() -> String {
    format!("{API_KEY_PREFIX}{}", random_hex(32))
}

/// A password for the first admin (printed once).
pub fn new_password() -> String {
    random_hex(12)
}

/// Failed sign-ins for one name: locked once `limit` fall within `window`; the lock lasts
/// `window` from the failure that reached the limit.
pub struct Lockout {
    pub limit: usize,
    pub window: Duration,
}

impl Lockout {
    /// `failures` are the recorded failure times (any order). Returns the lock's end if the
    /// name is locked at `now`.
    pub fn locked_until(
        &self,
        failures: &[DateTime<Utc>],
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let mut sorted: Vec<DateTime<Utc>> = failures.to_vec();
        sorted.sort();
        // The latest failure that completed a run of `limit` within the window.
        let mut until = None;
        for end in (self.limit.max(1) - 1)..sorted.len() {
            let start = sorted[end + 1 - self.limit.max(1)];
            if sorted[end] - start <= self.window {
                until = Some(sorted[end] + self.window);
            }
        }
        until.filter(|u| *u > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_hash_verifies_only_the_right_password() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("correct horse batterY", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn lockout_after_five_failures_in_fifteen_minutes() {
        let rule = Lockout {
            limit: 5,
            window: Duration::minutes(15),
        };
        let t0 = Utc::now();
        let f = |mins: &[i64]| {
            mins.iter()
                .map(|m| t0 + Duration::minutes(*m))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rule.locked_until(&f(&[0, 1, 2, 3]), t0 + Duration::minutes(4)),
            None
        );
        let five = f(&[0, 1, 2, 3, 4]);
        assert_eq!(
            rule.locked_until(&five, t0 + Duration::minutes(5)),
            Some(t0 + Duration::minutes(19))
        );
        assert_eq!(
            rule.locked_until(&five, t0 + Duration::minutes(20)),
            None,
            "the lock ends"
        );
        // five failures spread over more than the window do not lock
        assert_eq!(
            rule.locked_until(&f(&[0, 4, 8, 12, 16]), t0 + Duration::minutes(16)),
            None
        );
    }

    #[test]
    fn ids_are_256_bit_and_distinct() {
        let a = new_session_id();
        assert_eq!(a.len(), 64);
        assert_ne!(a, new_session_id());
        assert!(new_api_key().starts_with(API_KEY_PREFIX));
    }
}
