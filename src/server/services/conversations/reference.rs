//! Links without personal data in the URL (where browser history, proxies and logs would
//! keep it): a conversation by its table key, and a user (of measurements, of an inbox) by
//! their id, each encrypted deterministically (SIV: the IV is an HMAC of the text, the
//! keystream HMAC-SHA256 in counter mode) and authenticated by that same IV, under keys
//! derived from the server secret, one key per kind.

use crate::server::crypto::Seal;
use crate::server::services::idempotency::Engine;

#[derive(Clone)]
pub struct Refs {
    seal: Seal,
    users: Seal,
}

impl Refs {
    pub fn new(engine: &Engine) -> Refs {
        Refs {
            seal: engine.seal("conversation-ref"),
            users: engine.seal("user-ref"),
        }
    }

    /// The reference of a user id (measurements', an inbox's); empty for none.
    pub fn user(&self, uid: &str) -> String {
        if uid.is_empty() {
            return String::new();
        }
        self.users.seal(uid.as_bytes())
    }

    /// The user id a page was given: a reference this server made (what every link
    /// carries), or an id a person typed.
    pub fn resolve_user(&self, given: &str) -> String {
        let given = given.trim();
        self.users
            .open(given)
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_else(|| given.to_string())
    }

    /// The reference of a conversation's table key.
    pub fn encode(&self, primary_channel: &str, conversation_id: &str) -> String {
        self.seal
            .seal(format!("{primary_channel}\n{conversation_id}").as_bytes())
    }

    /// A link reference for a conversation id alone (the middleware's conversations, and
    /// audit partitions): the same encryption, with no channel.
    pub fn of_id(&self, conversation_id: &str) -> String {
        self.encode("", conversation_id)
    }

    /// The conversation id a page was given: a reference this server made (what every link
    /// carries), or an id a person typed.
    pub fn resolve(&self, given: &str) -> String {
        match self.decode(given.trim()) {
            Some((_, id)) => id,
            None => given.trim().to_string(),
        }
    }

    /// The table key of a reference, if it is one this server made.
    pub fn decode(&self, reference: &str) -> Option<(String, String)> {
        let text = String::from_utf8(self.seal.open(reference)?).ok()?;
        let (pc, id) = text.split_once('\n')?;
        Some((pc.to_string(), id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(secret: &str) -> Refs {
        use crate::server::services::idempotency::hmac_sha256;
        Refs {
            seal: Seal::from_keys(
                hmac_sha256(secret.as_bytes(), b"iv"),
                hmac_sha256(secret.as_bytes(), b"enc"),
            ),
            users: Seal::derive(secret.as_bytes(), "user-ref"),
        }
    }

    #[test]
    fn a_user_reference_hides_the_id_and_a_typed_id_passes_through() {
        let r = refs("one");
        let token = r.user("jane.doe@example.com");
        assert!(!token.contains("jane"));
        assert_eq!(r.resolve_user(&token), "jane.doe@example.com");
        assert_eq!(r.resolve_user(" u-42 "), "u-42");
        assert_eq!(r.user(""), "");
        // A conversation's reference is not a user's.
        assert_ne!(r.resolve_user(&r.of_id("c-1")), "c-1");
    }

    #[test]
    fn round_trip_hides_the_key_and_refuses_tampering() {
        let r = refs("one");
        let token = r.encode("+447123456789", "ci-1#pi-1#req1#447123456789");
        assert!(!token.contains("447123456789"));
        assert_eq!(
            token,
            r.encode("+447123456789", "ci-1#pi-1#req1#447123456789")
        );
        assert_eq!(
            r.decode(&token),
            Some(("+447123456789".into(), "ci-1#pi-1#req1#447123456789".into()))
        );
        let mut tampered = token.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(r.decode(&String::from_utf8(tampered).unwrap()), None);
        assert_eq!(refs("two").decode(&token), None);
        assert_eq!(r.decode("zz"), None);
    }
}
