//! The helpdesk's ids in an event, checked once where they enter (the webhook's body):
//! they go into the event's key (`evt:rp:{conversation}:
//! {message}`) and the conversation state's, so `:` (the key separator), `#`, spaces and
//! anything outside a narrow alphabet are refused. They are the helpdesk's, not the
//! Channel Router's conversation ids (`domain::conversations::ids`), which follow a wider
//! rule.

use crate::model::AppError;

const MAX_CHARS: usize = 128;

fn check(raw: &str, field: &str) -> Result<String, AppError> {
    let raw = raw.trim();
    let ok = !raw.is_empty()
        && raw.len() <= MAX_CHARS
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '+' | '/'));
    if ok {
        Ok(raw.to_string())
    } else {
        Err(AppError::invalid(
            field,
            format!(
                "{field} is 1 to {MAX_CHARS} characters: letters, digits, '_', '-', '.', '@', '+' or '/'."
            ),
        ))
    }
}

/// The helpdesk's id of a conversation.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HelpdeskConversationId(String);

impl HelpdeskConversationId {
    pub fn parse(raw: &str) -> Result<HelpdeskConversationId, AppError> {
        check(raw, "conversation_id").map(HelpdeskConversationId)
    }
}

text_type!(HelpdeskConversationId);

/// The helpdesk's id of a message: what makes a redelivery the same event.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HelpdeskMessageId(String);

impl HelpdeskMessageId {
    pub fn parse(raw: &str) -> Result<HelpdeskMessageId, AppError> {
        check(raw, "message_id").map(HelpdeskMessageId)
    }
}

text_type!(HelpdeskMessageId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpdesk_ids_keep_to_the_key_alphabet() {
        assert_eq!(
            &*HelpdeskConversationId::parse(" c-1/a@b+c.d_e ").unwrap(),
            "c-1/a@b+c.d_e"
        );
        assert!(HelpdeskMessageId::parse(&"m".repeat(128)).is_ok());
        for bad in ["", " ", "a:b", "a#b", "a b", "é", &"m".repeat(129)] {
            assert_eq!(
                HelpdeskConversationId::parse(bad).unwrap_err().field(),
                Some("conversation_id"),
                "{bad:?}"
            );
            assert_eq!(
                HelpdeskMessageId::parse(bad).unwrap_err().field(),
                Some("message_id")
            );
        }
    }
}
