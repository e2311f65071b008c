//! Links between pages: query values encoded, and conversations by their encrypted
//! reference (a conversation id can carry a phone number or an email; a URL must not).

/// A query value, percent-encoded.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A conversation's detail page (the conversations table), by its reference.
pub fn conversation_href(r: &str) -> String {
    format!("/conversations/view?r={}", enc(r))
}

/// A conversation's state and audit timeline (the middleware's), by its reference.
pub fn state_href(reference: &str) -> String {
    format!("/events/conversation?id={}", enc(reference))
}

/// Whether a filter value is a link reference the server made (long lower-case hex), in
/// which case the form shows it empty rather than as a string of hex.
pub fn is_reference(value: &str) -> bool {
    value.len() >= 38 && value.bytes().all(|b| b.is_ascii_hexdigit())
}
