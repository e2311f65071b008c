//! The conversation field of the Audit, Events, Conversation state and Outbox pages (once
//! its reference is opened). It names a record partition: a helpdesk conversation, a
//! Channel Router conversation (whose ids hold `#`; the audit records a contact reveal under
//! one, and links it to the Conversation state page) or one of the system's
//! (`system#kill_switches`). An id no event has finds nothing on the events' pages; it is
//! not an error.

use crate::model::AppError;

/// Up to 512 letters, digits, `_ - . @ + / # :`, or empty (none given).
pub fn check(id: &str) -> Result<(), AppError> {
    let ok = id.len() <= 512
        && id.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '+' | '/' | '#' | ':')
        });
    if ok {
        Ok(())
    } else {
        Err(AppError::invalid(
            "conversation",
            "A conversation id is up to 512 letters, digits, '_', '-', '.', '@', '+', '/', '#' or ':'.",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_is_any_conversation_or_a_system_one() {
        for ok in ["", "c-1", "acme#p1#r1#h1", "system#kill_switches", "a:b"] {
            assert!(check(ok).is_ok(), "{ok:?}");
        }
        for bad in ["a b", "<script>", &"x".repeat(513)] {
            assert_eq!(
                check(bad).unwrap_err().field(),
                Some("conversation"),
                "{bad:?}"
            );
        }
    }
}
