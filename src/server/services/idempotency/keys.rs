//! Idempotency keys: the server secret, and a key as an HMAC of its inputs under it, so
//! nobody can guess another caller's key. Free text enters a key only as its hash.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::server::config::{Config, Environment};
use crate::server::ids::{hex, random_hex};

/// The HMAC key. Never printed.
#[derive(Clone)]
pub struct Secret(pub(super) Arc<Vec<u8>>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Secret {
        Secret(Arc::new(bytes.into()))
    }

    /// A key for another purpose, derived from the secret (HMAC of `label`).
    pub fn subkey(&self, label: &str) -> [u8; 32] {
        hmac_sha256(&self.0, label.as_bytes())
    }

    /// The seal of one purpose under this secret (link references, page cursors, signing
    /// secrets at rest).
    pub fn seal(&self, purpose: &str) -> crate::server::crypto::Seal {
        crate::server::crypto::Seal::derive(&self.0, purpose)
    }

    /// The configured secret; in dev without one, the one generated on first start and
    /// kept in `<data_dir>/idempotency-secret` (created with mode 0600).
    pub fn resolve(config: &Config) -> Result<Secret, String> {
        if !config.idempotency.secret.is_empty() {
            return Ok(Secret::new(
                config.idempotency.secret.expose().as_bytes().to_vec(),
            ));
        }
        if config.env != Environment::Dev {
            return Err("IDEMPOTENCY_SECRET is required outside dev".into());
        }
        load_or_create(&config.data_dir.join("idempotency-secret"))
    }
}

fn load_or_create(path: &Path) -> Result<Secret, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(existing) = std::fs::read_to_string(path) {
        let existing = existing.trim();
        if existing.len() >= 32 {
            return Ok(Secret::new(existing.as_bytes().to_vec()));
        }
        return Err(format!("{} is shorter than 32 bytes", path.display()));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let secret = random_hex(32);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(secret.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Secret::new(secret.into_bytes()))
}

pub use crate::server::crypto::{hmac_sha256, sha256_hex};

/// Free text enters a key only as this: SHA-256 of the trimmed, whitespace-collapsed text.
pub fn hash_text(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    sha256_hex(collapsed.as_bytes())
}

/// A correlation id as the REST API takes it (`X-Correlation-Id`): 1 to 64 visible ASCII
/// characters.
pub fn is_correlation_id(c: &str) -> bool {
    (1..=64).contains(&c.len()) && c.chars().all(|c| c.is_ascii_graphic())
}

/// The inputs a key is derived from. Values are identifiers and numbers; free text goes
/// in through [`KeyInputs::text`], which stores only its hash. A correlation id rides
/// along, kept with the key but never part of it.
#[derive(Clone, Debug, Default)]
pub struct KeyInputs(BTreeMap<String, Value>, Option<String>);

impl KeyInputs {
    pub fn new() -> Self {
        KeyInputs::default()
    }

    pub fn id(mut self, name: &str, value: impl Into<String>) -> Self {
        self.0.insert(name.into(), Value::String(value.into()));
        self
    }

    /// The id the client logged the request under (REST `X-Correlation-Id`): stored with
    /// the key so it can be found by it; not hashed, so a retry under another correlation
    /// id is still the same key.
    pub fn correlated(mut self, correlation_id: Option<&str>) -> Self {
        self.1 = correlation_id.map(str::to_string);
        self
    }

    pub fn correlation_id(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// An input given with [`KeyInputs::id`].
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    pub fn num(mut self, name: &str, value: i64) -> Self {
        self.0.insert(name.into(), Value::from(value));
        self
    }

    pub fn flag(mut self, name: &str, value: bool) -> Self {
        self.0.insert(name.into(), Value::Bool(value));
        self
    }

    pub fn text(mut self, name: &str, raw: &str) -> Self {
        self.0
            .insert(format!("{name}_sha256"), Value::String(hash_text(raw)));
        self
    }

    /// Deterministic: sorted keys, no whitespace, tenant and scope bound in.
    pub fn canonical(&self, tenant: &str, scope: &str) -> String {
        let mut top = Map::new();
        top.insert(
            "inputs".into(),
            Value::Object(self.0.clone().into_iter().collect()),
        );
        top.insert("scope".into(), Value::String(scope.into()));
        top.insert("tenant".into(), Value::String(tenant.into()));
        // serde_json's Map is a BTreeMap here (no preserve_order): keys come out sorted.
        Value::Object(top).to_string()
    }

    /// A fingerprint of a request, for "same key, different request" checks.
    pub fn fingerprint(&self) -> String {
        sha256_hex(self.canonical("", "").as_bytes())
    }
}

pub fn key_hash(secret: &Secret, tenant: &str, scope: &str, inputs: &KeyInputs) -> String {
    hex(&hmac_sha256(
        &secret.0,
        inputs.canonical(tenant, scope).as_bytes(),
    ))
}

#[cfg(test)]
mod tests;
