//! Credentials: password hashing (argon2id), session ids and API keys (random, stored only
//! as SHA-256), and the lockout rule.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

use crate::model::AppError;
use crate::server::ids::random_hex;

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

/// Password work (argon2id, expensive by design) runs on blocking threads, at most a
/// bounded number at once per console (half its cores), so a flood of sign-ins never
/// stalls the async workers that serve every other request. A sign-in that finds the bound
/// full is refused at once ([`PasswordWork::try_start`]); hashing a new password waits.
#[derive(Clone)]
pub struct PasswordWork {
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

/// The right to check one password now.
pub struct Permit(tokio::sync::OwnedSemaphorePermit);

impl PasswordWork {
    pub fn new(at_once: usize) -> PasswordWork {
        PasswordWork {
            permits: std::sync::Arc::new(tokio::sync::Semaphore::new(at_once.max(1))),
        }
    }

    /// Half this machine's cores (at least one): the other half keeps serving.
    pub fn for_this_machine() -> PasswordWork {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        PasswordWork::new(cores / 2)
    }

    /// A permit, if one is free now.
    pub fn try_start(&self) -> Option<Permit> {
        self.permits.clone().try_acquire_owned().ok().map(Permit)
    }

    /// The hash of a new password, computed off the async workers when a permit frees.
    pub async fn hash(&self, password: &str) -> Result<String, String> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let password = password.to_string();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            hash_password(&password)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

impl Permit {
    /// Whether `password` matches `phc` (none: no such user, checked against nothing in
    /// the same time), off the async workers.
    pub async fn verify(self, password: &str, phc: Option<String>) -> bool {
        let password = password.to_string();
        let permit = self.0;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            match phc {
                Some(phc) => verify_password(&password, &phc),
                None => {
                    verify_against_nothing(&password);
                    false
                }
            }
        })
        .await
        .unwrap_or(false)
    }
}

/// Spends the same time as a real verification, so an unknown user name answers no faster
/// than a wrong password.
pub fn verify_against_nothing(password: &str) {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let phc = DUMMY.get_or_init(|| hash_password("not a real password at all").unwrap_or_default());
    let _ = verify_password(password, phc);
}

pub use crate::server::crypto::sha256_hex;

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

    #[tokio::test]
    async fn password_work_is_bounded_and_refuses_at_once_past_the_bound() {
        let work = PasswordWork::new(1);
        let first = work.try_start().expect("a free permit");
        assert!(work.try_start().is_none(), "the bound is full");
        let h = hash_password("correct horse battery").unwrap();
        assert!(first.verify("correct horse battery", Some(h)).await);
        let again = work.try_start().expect("the permit came back");
        assert!(!again.verify("anything", None).await, "no user: never true");
    }

    #[test]
    fn ids_are_256_bit_and_distinct() {
        let a = new_session_id();
        assert_eq!(a.len(), 64);
        assert_ne!(a, new_session_id());
        assert!(new_api_key().starts_with(API_KEY_PREFIX));
    }
}
