//! Links to a conversation without its phone number or email in the URL (where browser
//! history, proxies and logs would keep it): the table key, encrypted deterministically
//! (SIV: the IV is an HMAC of the key, the keystream HMAC-SHA256 in counter mode) and
//! authenticated by that same IV, under keys derived from the server secret.

use crate::server::domain::idempotency::{hmac_sha256, Engine};
use crate::server::ids::hex;

const IV_LEN: usize = 16;

#[derive(Clone)]
pub struct Refs {
    iv_key: [u8; 32],
    enc_key: [u8; 32],
}

impl Refs {
    pub fn new(engine: &Engine) -> Refs {
        Refs {
            iv_key: engine.subkey("conversation-ref/iv"),
            enc_key: engine.subkey("conversation-ref/enc"),
        }
    }

    fn keystream(&self, iv: &[u8], len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 32);
        let mut counter = 0u32;
        while out.len() < len {
            let mut block = iv.to_vec();
            block.extend_from_slice(&counter.to_be_bytes());
            out.extend_from_slice(&hmac_sha256(&self.enc_key, &block));
            counter += 1;
        }
        out.truncate(len);
        out
    }

    /// The reference of a conversation's table key.
    pub fn encode(&self, primary_channel: &str, conversation_id: &str) -> String {
        let plain = format!("{primary_channel}\n{conversation_id}");
        let iv = &hmac_sha256(&self.iv_key, plain.as_bytes())[..IV_LEN];
        let cipher: Vec<u8> = plain
            .bytes()
            .zip(self.keystream(iv, plain.len()))
            .map(|(p, k)| p ^ k)
            .collect();
        let mut all = iv.to_vec();
        all.extend(cipher);
        hex(&all)
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
        if !reference.len().is_multiple_of(2)
            || reference.len() < 2 * (IV_LEN + 3)
            || reference.len() > 4096
        {
            return None;
        }
        let bytes: Vec<u8> = (0..reference.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(reference.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        let (iv, cipher) = bytes.split_at(IV_LEN);
        let plain: Vec<u8> = cipher
            .iter()
            .zip(self.keystream(iv, cipher.len()))
            .map(|(c, k)| c ^ k)
            .collect();
        let expected = &hmac_sha256(&self.iv_key, &plain)[..IV_LEN];
        // Constant time: no early exit on the first differing byte.
        let diff = expected
            .iter()
            .zip(iv)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return None;
        }
        let text = String::from_utf8(plain).ok()?;
        let (pc, id) = text.split_once('\n')?;
        Some((pc.to_string(), id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(secret: &str) -> Refs {
        Refs {
            iv_key: hmac_sha256(secret.as_bytes(), b"iv"),
            enc_key: hmac_sha256(secret.as_bytes(), b"enc"),
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
