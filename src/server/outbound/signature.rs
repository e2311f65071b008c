//! Standard Webhooks signatures (<https://www.standardwebhooks.com/>): every delivery
//! carries `webhook-id` (the action key: the same on every retry, so a receiver dedupes by
//! it), `webhook-timestamp` (Unix seconds) and `webhook-signature`: `v1,<base64>` of
//! HMAC-SHA256 over `<id>.<timestamp>.<body>`, keyed with the secret's bytes. Several
//! secrets sign at once during a rotation (space-separated signatures), so a receiver that
//! knows either one accepts the message.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

const PREFIX: &str = "whsec_";
/// How far a timestamp may be from the receiver's clock (the specification's default).
pub const TOLERANCE_SECONDS: i64 = 5 * 60;

/// A signing secret, `whsec_<base64 of 24 to 64 random bytes>`. Its text never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret {
    key: Vec<u8>,
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(…)")
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("a signing secret starts with whsec_ followed by base64")]
    Format,
    #[error("a signing secret holds 24 to 64 bytes")]
    Length,
}

impl SigningSecret {
    /// A new random secret.
    pub fn generate() -> SigningSecret {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).unwrap_or_else(|_| {
            // The OS has no randomness: nothing can be signed safely; this never happens
            // on the platforms we run on.
            panic!("no operating-system randomness for a signing secret")
        });
        SigningSecret { key }
    }

    pub fn parse(text: &str) -> Result<SigningSecret, SecretError> {
        let b64 = text
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(SecretError::Format)?;
        let key = STANDARD.decode(b64).map_err(|_| SecretError::Format)?;
        if !(24..=64).contains(&key.len()) {
            return Err(SecretError::Length);
        }
        Ok(SigningSecret { key })
    }

    /// The secret as a receiver configures it (shown once, when it is made).
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.key))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// `v1,<base64>` for one message.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }

    fn accepts(&self, id: &str, timestamp: i64, body: &[u8], signature: &str) -> bool {
        let Some(b64) = signature.strip_prefix("v1,") else {
            return false;
        };
        let Ok(tag) = STANDARD.decode(b64) else {
            return false;
        };
        // Constant time: a mismatch does not say how much matched.
        self.mac(id, timestamp, body).verify_slice(&tag).is_ok()
    }
}

/// The `webhook-signature` header: one signature per secret, space-separated.
pub fn header(secrets: &[SigningSecret], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|s| s.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("webhook-timestamp is not a number")]
    Timestamp,
    #[error("webhook-timestamp is more than five minutes from now")]
    Stale,
    #[error("no signature matches")]
    Mismatch,
}

/// What a receiver does with a delivery: accept it when one of the signatures in
/// `signature_header` was made by one of `secrets` over this id, timestamp and body, and
/// the timestamp is within [`TOLERANCE_SECONDS`] of `now`.
pub fn verify(
    secrets: &[SigningSecret],
    id: &str,
    timestamp: &str,
    body: &[u8],
    signature_header: &str,
    now: i64,
) -> Result<(), VerifyError> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| VerifyError::Timestamp)?;
    if (now - ts).abs() > TOLERANCE_SECONDS {
        return Err(VerifyError::Stale);
    }
    let ok = signature_header.split(' ').any(|sig| {
        secrets
            .iter()
            .any(|secret| secret.accepts(id, ts, body, sig))
    });
    if ok {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specifications_example_verifies() {
        // The example of the Standard Webhooks specification and its reference libraries.
        let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let ts = 1614265330;
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            secret.sign(id, ts, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(
            verify(
                std::slice::from_ref(&secret),
                id,
                "1614265330",
                body,
                &secret.sign(id, ts, body),
                ts
            ),
            Ok(())
        );
    }

    #[test]
    fn tampering_staleness_and_rotation() {
        let (old, new) = (SigningSecret::generate(), SigningSecret::generate());
        let body = b"{\"a\":1}";
        let both = header(&[old.clone(), new.clone()], "k1", 1000, body);
        assert_eq!(
            verify(std::slice::from_ref(&new), "k1", "1000", body, &both, 1000),
            Ok(())
        );
        assert_eq!(
            verify(std::slice::from_ref(&old), "k1", "1000", body, &both, 1000),
            Ok(())
        );
        assert_eq!(
            verify(
                std::slice::from_ref(&new),
                "k1",
                "1000",
                b"{\"a\":2}",
                &both,
                1000
            ),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(std::slice::from_ref(&new), "k2", "1000", body, &both, 1000),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(&[new], "k1", "1000", body, &both, 1000 + 301),
            Err(VerifyError::Stale)
        );
        assert_eq!(SigningSecret::parse(&old.expose()), Ok(old));
        assert_eq!(SigningSecret::parse("whsec_YWJj"), Err(SecretError::Length));
        assert_eq!(SigningSecret::parse("abc"), Err(SecretError::Format));
    }
}
