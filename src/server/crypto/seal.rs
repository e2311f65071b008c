//! Deterministic authenticated encryption (SIV) under keys derived from the server secret:
//! the IV is an HMAC of the plain text, the keystream HMAC-SHA256 in counter mode, and the
//! IV authenticates the text. Used where a value must leave or rest outside the server
//! without being readable: conversation references in links, the receiver's signing
//! secrets in DynamoDB, page cursors. Equal plain texts seal equally (links stay stable);
//! nothing else about a plain text shows but its length.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::{hmac_sha256, same};
use crate::server::ids::hex;

const IV_LEN: usize = 16;
/// Sealed texts longer than this are refused unread.
const MAX_HEX: usize = 4096;

#[derive(Clone)]
pub struct Seal {
    iv_key: [u8; 32],
    enc_key: [u8; 32],
}

impl Seal {
    /// The seal of one purpose (`conversation-ref`, `receiver-secret`, `page-cursor`) under
    /// the server secret: keys of different purposes are unrelated.
    pub fn derive(secret: &[u8], purpose: &str) -> Seal {
        Seal {
            iv_key: hmac_sha256(secret, format!("{purpose}/iv").as_bytes()),
            enc_key: hmac_sha256(secret, format!("{purpose}/enc").as_bytes()),
        }
    }

    /// A seal under keys of this process alone (what nothing else needs to open).
    pub fn ephemeral() -> Seal {
        let mut keys = [0u8; 64];
        // Without an entropy source there is no safe way on.
        getrandom::fill(&mut keys).expect("the operating system's random generator is available");
        let (iv, enc) = keys.split_at(32);
        Seal::from_keys(
            iv.try_into().unwrap_or([0; 32]),
            enc.try_into().unwrap_or([0; 32]),
        )
    }

    /// From raw keys (tests).
    pub fn from_keys(iv_key: [u8; 32], enc_key: [u8; 32]) -> Seal {
        Seal { iv_key, enc_key }
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

    fn seal_bytes(&self, plain: &[u8]) -> Vec<u8> {
        let iv = &hmac_sha256(&self.iv_key, plain)[..IV_LEN];
        let mut all = iv.to_vec();
        all.extend(
            plain
                .iter()
                .zip(self.keystream(iv, plain.len()))
                .map(|(p, k)| p ^ k),
        );
        all
    }

    fn open_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.len() < IV_LEN {
            return None;
        }
        let (iv, cipher) = bytes.split_at(IV_LEN);
        let plain: Vec<u8> = cipher
            .iter()
            .zip(self.keystream(iv, cipher.len()))
            .map(|(c, k)| c ^ k)
            .collect();
        // Constant time: no early exit on the first differing byte.
        same(&hmac_sha256(&self.iv_key, &plain)[..IV_LEN], iv).then_some(plain)
    }

    /// `plain`, sealed, as hex.
    pub fn seal(&self, plain: &[u8]) -> String {
        hex(&self.seal_bytes(plain))
    }

    /// The plain text of a sealed value this seal made; `None` for anything else.
    pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        if !sealed.len().is_multiple_of(2) || sealed.len() < 2 * IV_LEN || sealed.len() > MAX_HEX {
            return None;
        }
        let bytes: Vec<u8> = (0..sealed.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(sealed.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        self.open_bytes(&bytes)
    }

    /// `plain`, sealed, as URL-safe base64 (shorter than hex: for values that travel in
    /// URLs, such as page cursors).
    pub fn seal_text(&self, plain: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.seal_bytes(plain))
    }

    /// The plain text of a value [`Seal::seal_text`] made; `None` for anything else.
    pub fn open_text(&self, sealed: &str) -> Option<Vec<u8>> {
        if sealed.len() > MAX_HEX {
            return None;
        }
        self.open_bytes(&URL_SAFE_NO_PAD.decode(sealed).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_unchanged_and_under_their_keys() {
        let seal = Seal::from_keys([1; 32], [2; 32]);
        let sealed = seal.seal(b"whsec_secret");
        assert!(!sealed.contains("secret"));
        assert_eq!(seal.seal(b"whsec_secret"), sealed, "deterministic");
        assert_eq!(seal.open(&sealed).as_deref(), Some(&b"whsec_secret"[..]));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(seal.open(&String::from_utf8(tampered).unwrap()), None);
        assert_eq!(
            Seal::from_keys([1; 32], [3; 32]).open(&sealed).map(|_| ()),
            None
        );
        assert_eq!(seal.open("zz"), None);
    }

    #[test]
    fn text_seals_open_only_unchanged_and_under_their_purpose() {
        let a = Seal::derive(b"server secret", "page-cursor");
        let sealed = a.seal_text(b"{\"k\":1}");
        assert!(sealed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(a.open_text(&sealed).as_deref(), Some(&b"{\"k\":1}"[..]));
        assert_eq!(
            Seal::derive(b"server secret", "conversation-ref").open_text(&sealed),
            None
        );
        assert_eq!(
            Seal::derive(b"other secret", "page-cursor").open_text(&sealed),
            None
        );
        let mut tampered = sealed.into_bytes();
        tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
        assert_eq!(a.open_text(&String::from_utf8(tampered).unwrap()), None);
        assert_eq!(a.open_text("!!"), None);
        assert_eq!(a.open_text(""), None);
    }
}
