//! Links to a conversation without its phone number or email in the URL (where browser
//! history, proxies and logs would keep it): the table key, encrypted deterministically
//! (SIV: the IV is an HMAC of the key, the keystream HMAC-SHA256 in counter mode) and
//! authenticated by that same IV, under keys derived from the server secret.

use crate::server::crypto::Seal;
use crate::server::domain::idempotency::Engine;

#[derive(Clone)]
pub struct Refs {
    seal: Seal,
}

impl Refs {
    pub fn new(engine: &Engine) -> Refs {
        Refs {
            seal: engine.seal("conversation-ref"),
        }
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
        use crate::server::domain::idempotency::hmac_sha256;
        Refs {
            seal: Seal::from_keys(
                hmac_sha256(secret.as_bytes(), b"iv"),
                hmac_sha256(secret.as_bytes(), b"enc"),
            ),
        }
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
