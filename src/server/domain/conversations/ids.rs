//! A conversation's table key, checked once where it enters (a Context Object, a REST
//! path): its primary channel (the partition key: the recipient's E.164 number or e-mail
//! address, as the Context Object's channel picks it) and the Channel Router's
//! conversation id (the sort key). Neither is the helpdesk webhook's conversation id
//! (`domain::events::ids`): that one comes from another system, under a narrower rule.

use crate::model::AppError;
use crate::server::domain::{fields, limits};

/// The Channel Router's id of a conversation: any printable text of 1 to 512 characters
/// and at most [`limits::CONVERSATION_ID_BYTES`] bytes (it is the table's sort key; it may
/// hold `#` separators), trimmed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ConversationId(String);

impl ConversationId {
    pub fn parse(raw: impl Into<String>) -> Result<ConversationId, AppError> {
        let id = fields::required("conversation_id", raw.into(), 512)?;
        limits::key_part("conversation_id", &id, limits::CONVERSATION_ID_BYTES)?;
        Ok(ConversationId(id))
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

text_type!(ConversationId);

impl utoipa::PartialSchema for ConversationId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        text_schema(
            "The Channel Router's conversation id: 1 to 512 printable characters, at most 1,000 bytes in UTF-8.",
            512,
        )
    }
}

impl utoipa::ToSchema for ConversationId {}

/// A conversation's partition: the recipient's number or address it was created under,
/// printable text of at most [`limits::PRIMARY_CHANNEL_BYTES`] bytes, trimmed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PrimaryChannel(String);

impl PrimaryChannel {
    pub fn parse(raw: impl Into<String>) -> Result<PrimaryChannel, AppError> {
        let pc = fields::required("primary_channel", raw.into(), limits::PRIMARY_CHANNEL_BYTES)?;
        limits::key_part("primary_channel", &pc, limits::PRIMARY_CHANNEL_BYTES)?;
        Ok(PrimaryChannel(pc))
    }
}

text_type!(PrimaryChannel);

impl utoipa::PartialSchema for PrimaryChannel {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        text_schema(
            "The recipient's E.164 number or e-mail address the conversation was created under: 1 to 320 printable characters, at most 320 bytes in UTF-8.",
            limits::PRIMARY_CHANNEL_BYTES,
        )
    }
}

impl utoipa::ToSchema for PrimaryChannel {}

fn text_schema(
    what: &str,
    max_chars: usize,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(what))
        .min_length(Some(1))
        .max_length(Some(max_chars))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_key_is_printable_and_within_the_key_limits() {
        assert_eq!(&*ConversationId::parse(" c#1 ").unwrap(), "c#1");
        assert!(ConversationId::parse("x".repeat(512)).is_ok());
        // 250 four-byte characters are 1,000 bytes: the most a sort key part may hold.
        assert!(ConversationId::parse("😀".repeat(250)).is_ok());
        for bad in [
            String::new(),
            "  ".into(),
            "a\u{7}b".into(),
            "x".repeat(513),
            "😀".repeat(251),
        ] {
            assert_eq!(
                ConversationId::parse(bad.clone()).unwrap_err().field(),
                Some("conversation_id"),
                "{bad:?}"
            );
        }
        assert_eq!(&*PrimaryChannel::parse("+15550100").unwrap(), "+15550100");
        for bad in [String::new(), "a\nb".into(), "x".repeat(321)] {
            assert_eq!(
                PrimaryChannel::parse(bad.clone()).unwrap_err().field(),
                Some("primary_channel"),
                "{bad:?}"
            );
        }
    }
}
