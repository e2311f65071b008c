//! Links between pages: query values encoded, and conversations by their encrypted
//! reference (a conversation id can carry a phone number or an email; a URL must not).

pub use crate::model::pages::query_value as enc;

/// A conversation's detail page (the conversations table), by its reference.
pub fn conversation_href(r: &str) -> String {
    format!("/conversations/view?r={}", enc(r))
}

/// A conversation's state and audit timeline (the middleware's), by its reference.
pub fn state_href(reference: &str) -> String {
    format!("/events/conversation?id={}", enc(reference))
}

/// Whether a filter value is a link reference the server made (lower-case hex of at least
/// a 16-byte tag and one byte), in which case the form shows it empty rather than as a
/// string of hex.
pub fn is_reference(value: &str) -> bool {
    value.len() >= 34 && value.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A filter value as its form shows it: `(reference, typed)`, one of them empty. A reference
/// goes back in the hidden `…_ref` field, so the filter stays until another value is typed;
/// what a person typed goes back in the visible field.
pub fn split_reference(value: String) -> (String, String) {
    if is_reference(&value) {
        (value, String::new())
    } else {
        (String::new(), value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_goes_to_the_hidden_field_and_typed_text_to_the_visible_one() {
        let reference = "0123456789abcdef0123456789abcdef01234567".to_string();
        assert_eq!(
            split_reference(reference.clone()),
            (reference, String::new())
        );
        assert_eq!(
            split_reference("+447700900123".into()),
            (String::new(), "+447700900123".to_string())
        );
        assert_eq!(
            split_reference(String::new()),
            (String::new(), String::new())
        );
    }
}
