//! Deterministic authenticated encryption (SIV) under keys derived from the server secret:
//! the IV is an HMAC of the plain text, the keystream HMAC-SHA256 in counter mode, and the
//! IV authenticates the text. Used where a value must leave or rest outside the server
//! without being readable: conversation references in links, the receiver's signing
//! secrets in DynamoDB, page cursors. Equal plain texts seal equally (cursors stay stable);
//! nothing else about a plain text shows but its length.
//!
//! [`Seal::seal_fresh`] seals the same way with a random nonce taken into the IV, so equal
//! plain texts seal differently each time: for link references, where a viewer who could
//! seal a guess and compare it with a page's reference would learn what the page masks
//! (docs/security.md, "Nothing personal in a URL").

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::{hmac_sha256, same};
use crate::server::ids::hex;

const IV_LEN: usize = 16;
/// The random nonce of a fresh seal: with the IV it names the keystream, so even a repeated
/// nonce only shows that two plain texts are equal (after about 2^32 seals of each).
const NONCE_LEN: usize = 8;
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

    /// `bytes` enciphered (or deciphered) under the keystream of `iv`.
    fn xor(&self, iv: &[u8], bytes: &[u8]) -> Vec<u8> {
        bytes
            .iter()
            .zip(self.keystream(iv, bytes.len()))
            .map(|(b, k)| b ^ k)
            .collect()
    }

    fn seal_bytes(&self, plain: &[u8]) -> Vec<u8> {
        let iv = &hmac_sha256(&self.iv_key, plain)[..IV_LEN];
        let mut all = iv.to_vec();
        all.extend(self.xor(iv, plain));
        all
    }

    fn open_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.len() < IV_LEN {
            return None;
        }
        let (iv, cipher) = bytes.split_at(IV_LEN);
        let plain = self.xor(iv, cipher);
        // Constant time: no early exit on the first differing byte.
        same(&hmac_sha256(&self.iv_key, &plain)[..IV_LEN], iv).then_some(plain)
    }

    /// `plain` sealed under a random nonce: `nonce | IV | cipher`, the IV an HMAC of the
    /// nonce and the plain text, so no two seals of one text are alike.
    fn seal_fresh_bytes(&self, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        // Without an entropy source there is no safe way on.
        getrandom::fill(&mut nonce).expect("the operating system's random generator is available");
        let mut authenticated = nonce.to_vec();
        authenticated.extend_from_slice(plain);
        // The IV authenticates nonce and text; the text is enciphered under it.
        let iv = &hmac_sha256(&self.iv_key, &authenticated)[..IV_LEN];
        let mut all = nonce.to_vec();
        all.extend_from_slice(iv);
        all.extend(self.xor(iv, plain));
        all
    }

    fn open_fresh_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.len() < NONCE_LEN + IV_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let (iv, cipher) = rest.split_at(IV_LEN);
        let mut authenticated = nonce.to_vec();
        authenticated.extend(self.xor(iv, cipher));
        same(&hmac_sha256(&self.iv_key, &authenticated)[..IV_LEN], iv)
            .then(|| authenticated.split_off(NONCE_LEN))
    }

    /// `plain`, sealed under a random nonce, as hex: a new text at every call.
    pub fn seal_fresh(&self, plain: &[u8]) -> String {
        hex(&self.seal_fresh_bytes(plain))
    }

    /// The plain text of a value [`Seal::seal_fresh`] made; `None` for anything else.
    pub fn open_fresh(&self, sealed: &str) -> Option<Vec<u8>> {
        self.open_fresh_bytes(&unhex(sealed)?)
    }

    /// `plain`, sealed, as hex.
    pub fn seal(&self, plain: &[u8]) -> String {
        hex(&self.seal_bytes(plain))
    }

    /// The plain text of a sealed value this seal made; `None` for anything else.
    pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        self.open_bytes(&unhex(sealed)?)
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

/// The bytes of a sealed value in hex; `None` for odd, short, long or non-hex text.
fn unhex(sealed: &str) -> Option<Vec<u8>> {
    if !sealed.len().is_multiple_of(2) || sealed.len() < 2 * IV_LEN || sealed.len() > MAX_HEX {
        return None;
    }
    (0..sealed.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sealed.get(i..i + 2)?, 16).ok())
        .collect()
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
    fn fresh_seals_differ_every_time_and_open_only_unchanged() {
        let seal = Seal::derive(b"server secret", "conversation-ref");
        let a = seal.seal_fresh(b"+447700900123");
        let b = seal.seal_fresh(b"+447700900123");
        assert_ne!(a, b, "a seal of a guess is never a page's");
        assert_eq!(a.len(), 2 * (NONCE_LEN + IV_LEN + 13));
        assert_eq!(seal.open_fresh(&a).as_deref(), Some(&b"+447700900123"[..]));
        assert_eq!(seal.open_fresh(&b).as_deref(), Some(&b"+447700900123"[..]));
        // Neither kind opens as the other, nor under another purpose.
        assert_eq!(seal.open(&a), None);
        assert_eq!(seal.open_fresh(&seal.seal(b"+447700900123")), None);
        assert_eq!(
            Seal::derive(b"server secret", "user-ref").open_fresh(&a),
            None
        );
        for i in 0..a.len() {
            let mut tampered = a.clone().into_bytes();
            tampered[i] = if tampered[i] == b'0' { b'1' } else { b'0' };
            assert_eq!(seal.open_fresh(&String::from_utf8(tampered).unwrap()), None);
        }
        assert_eq!(seal.open_fresh(""), None);
        assert_eq!(
            seal.open_fresh(&seal.seal_fresh(b"")).as_deref(),
            Some(&b""[..])
        );
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
