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
/// stalls the async workers that serve every other request. Sign-ins in flight (counting
/// the attempt in DynamoDB, waiting for their turn, checking) are bounded too, at
/// [`IN_FLIGHT_PER_CHECK`] per check: one that finds them full is refused at once, before
/// any I/O ([`PasswordWork::try_start`]); one admitted waits its turn for a check in order.
/// A check holds its slot only while argon2 runs, not while DynamoDB answers.
#[derive(Clone)]
pub struct PasswordWork {
    admitted: std::sync::Arc<tokio::sync::Semaphore>,
    checks: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Sign-ins admitted at once per password check that can run at once.
pub const IN_FLIGHT_PER_CHECK: usize = 8;

/// A sign-in admitted: the right to wait for one password check.
pub struct Permit {
    _admitted: tokio::sync::OwnedSemaphorePermit,
    checks: std::sync::Arc<tokio::sync::Semaphore>,
}

impl PasswordWork {
    pub fn new(at_once: usize) -> PasswordWork {
        let at_once = at_once.max(1);
        PasswordWork {
            admitted: std::sync::Arc::new(tokio::sync::Semaphore::new(
                at_once * IN_FLIGHT_PER_CHECK,
            )),
            checks: std::sync::Arc::new(tokio::sync::Semaphore::new(at_once)),
        }
    }

    /// Half this machine's cores (at least one): the other half keeps serving.
    pub fn for_this_machine() -> PasswordWork {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        PasswordWork::new(cores / 2)
    }

    /// Admission of one sign-in, if the bound has room now.
    pub fn try_start(&self) -> Option<Permit> {
        let admitted = self.admitted.clone().try_acquire_owned().ok()?;
        Some(Permit {
            _admitted: admitted,
            checks: self.checks.clone(),
        })
    }

    /// The hash of a new password, computed off the async workers when a check's slot frees.
    pub async fn hash(&self, password: &str) -> Result<String, String> {
        let slot = self
            .checks
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let password = password.to_string();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            hash_password(&password)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

impl Permit {
    /// Whether `password` matches `phc` (none: no such user, checked against nothing in
    /// the same time), off the async workers, when a check's slot frees (in turn).
    pub async fn verify(self, password: &str, phc: Option<String>) -> bool {
        let Ok(slot) = self.checks.clone().acquire_owned().await else {
            return false;
        };
        let password = password.to_string();
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
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
        let admitted: Vec<Permit> = (0..IN_FLIGHT_PER_CHECK)
            .map(|_| work.try_start().expect("room for a sign-in"))
            .collect();
        assert!(work.try_start().is_none(), "the bound is full");
        let h = hash_password("correct horse battery").unwrap();
        // They all wait their turn for the one check that can run; none is refused.
        let results = futures_util::future::join_all(
            admitted
                .into_iter()
                .map(|p| p.verify("correct horse battery", Some(h.clone()))),
        )
        .await;
        assert!(results.iter().all(|ok| *ok));
        let again = work.try_start().expect("the permits came back");
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
