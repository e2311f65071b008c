//! What each role sees of a conversation. Viewers: no personal data (phones, emails,
//! names, message text). Operators: message text too. Admins: contact details as well,
//! once they gave a reason, which is audited. Masking happens here, on the server.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Map, Value};

use super::reference::Refs;
use super::Conversations;
use crate::model::conversations::{ConversationDetail, MessageView};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::domain::redact::{last4_of, redact};
use crate::server::ids::random_hex;
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::conversations::{self as store, Conversation};
use crate::server::store::events as records;
use crate::server::store::tx::Writes;

pub const PAGE_SIZE: usize = 25;
pub const REVEAL: &str = "reveal_contact";
/// How long a reveal lasts for the admin who gave the reason.
pub const REVEAL_MINUTES: i64 = 15;

fn mask_phone(p: &str) -> String {
    format!("***-***-{}", last4_of(p))
}

pub(super) fn mask_contact(c: &str) -> String {
    if c.contains('@') {
        "***@***".into()
    } else {
        mask_phone(c)
    }
}

fn initial(name: &Option<String>) -> Option<String> {
    name.as_ref()
        .and_then(|n| n.chars().next())
        .map(|c| format!("{c}."))
}

fn full_name(c: &Conversation) -> String {
    [&c.recipient_first_name, &c.recipient_last_name]
        .iter()
        .filter_map(|n| n.as_deref())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn masked_name(c: &Conversation) -> String {
    [
        initial(&c.recipient_first_name),
        initial(&c.recipient_last_name),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ")
}

/// Keys whose values are about a person, wherever they sit in a configuration map.
fn personal_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    [
        "name", "email", "phone", "tel", "mobile", "address", "contact",
    ]
    .iter()
    .any(|p| k.contains(p))
}

fn mask_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(a) => Value::Array(a.iter().map(mask_json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let masked = if personal_key(k) && !v.is_object() && !v.is_array() {
                        Value::String("***".into())
                    } else {
                        mask_json(v)
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn pretty(map: &Option<Map<String, Value>>, reveal: bool) -> Option<String> {
    map.as_ref().map(|m| {
        let v = Value::Object(m.clone());
        let shown = if reveal { v } else { mask_json(&v) };
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    })
}

/// The company as a person knows it: its name, else its id.
pub(super) fn company_of(c: &Conversation) -> String {
    c.company_name
        .clone()
        .unwrap_or_else(|| c.company_id.clone())
}

/// The project as a person knows it: its name, else its id.
pub(super) fn project_of(c: &Conversation) -> String {
    c.project_name
        .clone()
        .unwrap_or_else(|| c.project_id.clone())
}

/// What a reader may see of a conversation.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// Message text and the hand-off reason (operators and admins).
    pub text: bool,
    /// Contact details, names and configuration maps unmasked (an admin's reveal).
    pub revealed: bool,
    /// The reader is an admin, who may ask for a reveal.
    pub can_reveal: bool,
}

impl Seen {
    pub fn of(role: Role, revealed: bool) -> Seen {
        Seen {
            text: role.allows(Role::Operator),
            revealed,
            can_reveal: role.allows(Role::Admin),
        }
    }
}

/// A conversation's messages, their text hidden unless `show_text`.
fn messages(c: &Conversation, show_text: bool) -> Vec<MessageView> {
    c.messages
        .iter()
        .map(|m| MessageView {
            entry_id: m.entry_id.clone(),
            timestamp: m.message_timestamp.clone(),
            role: m.role.clone(),
            content: if show_text {
                m.content.clone()
            } else {
                String::new()
            },
            content_hidden: !show_text,
            chars: m.content.chars().count(),
            prompt_tokens: m.ai_prompt_tokens,
            completion_tokens: m.ai_completion_tokens,
            total_tokens: m.ai_total_tokens,
            processing_time_ms: m.processing_time_ms,
        })
        .collect()
}

/// The recipient's phone, email and name: as stored once revealed, else masked.
struct Contact {
    tel: Option<String>,
    email: Option<String>,
    name: String,
}

impl Contact {
    fn of(c: &Conversation, revealed: bool) -> Contact {
        if revealed {
            return Contact {
                tel: c.recipient_tel.clone(),
                email: c.recipient_email.clone(),
                name: full_name(c),
            };
        }
        Contact {
            tel: c.recipient_tel.as_deref().map(mask_phone),
            email: c.recipient_email.as_ref().map(|_| "***@***".to_string()),
            name: masked_name(c),
        }
    }
}

/// The detail page of conversation `c` (linked as `r`) as `seen` allows; `has_state`:
/// the helpdesk middleware keeps state for it.
pub fn detail(c: &Conversation, r: &str, seen: Seen, has_state: bool) -> ConversationDetail {
    let masked_id = crate::server::domain::redact::conversation_id(&c.conversation_id);
    let revealed = seen.revealed;
    let contact = Contact::of(c, revealed);
    ConversationDetail {
        r: r.trim().to_string(),
        conversation_id: if revealed {
            c.conversation_id.clone()
        } else {
            masked_id
        },
        company: company_of(c),
        project: project_of(c),
        channel: c.channel_method.clone(),
        status: c.conversation_status.as_str().to_string(),
        task_complete: c.task_complete == 1,
        comms_consent: c.comms_consent,
        function_call: c.function_call,
        function_call_type: c.function_call_type.clone(),
        hand_off: c.hand_off_to_human,
        hand_off_reason: c.hand_off_to_human_reason.as_deref().map(|r| {
            if seen.text {
                r.to_string()
            } else {
                redact(r)
            }
        }),
        thread_id: c.thread_id.clone(),
        created_at: c.created_at.clone(),
        updated_at: c.updated_at.clone(),
        processing_time_ms: c.processing_time_ms,
        recipient_tel: contact.tel,
        recipient_email: contact.email,
        recipient_name: contact.name,
        revealed,
        revealed_until: None,
        can_reveal: seen.can_reveal,
        messages: messages(c, seen.text),
        ai_config: pretty(&c.ai_config, revealed),
        channel_config: pretty(&c.channel_config, revealed),
        project_data: pretty(&c.project_data, revealed),
        company_rep: pretty(&c.company_rep, revealed),
        has_middleware_state: has_state,
        middleware_ref: None,
        form_key: random_hex(16),
    }
}

/// A reveal's reason: required, at most 500 characters.
pub fn check_reason(reason: &str) -> Result<&str, AppError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(AppError::invalid(
            "reason",
            "Say why you need the contact details.",
        ));
    }
    if reason.chars().count() > 500 {
        return Err(AppError::invalid(
            "reason",
            "The reason is at most 500 characters.",
        ));
    }
    Ok(reason)
}

pub struct Reveal<'a> {
    /// The conversation's link reference.
    pub r: &'a str,
    pub reason: &'a str,
    pub admin: &'a str,
    pub idempotency_key: &'a str,
}

/// The console's reads of conversations. Links are made and read with the caller's
/// `refs` (see [`Conversations`]).
impl Conversations {
    /// The conversation a link reference names.
    async fn find(&self, refs: &Refs, r: &str) -> Result<Conversation, AppError> {
        let (pc, id) = refs
            .decode(r.trim())
            .ok_or_else(|| AppError::invalid("r", "This conversation link is not valid."))?;
        store::get(&self.store, &pc, &id)
            .await?
            .ok_or(AppError::NotFound)
    }

    /// A conversation as `name` with `role` may see it at `now`: contact details only for
    /// an admin who revealed them in the last [`REVEAL_MINUTES`].
    pub async fn detail(
        &self,
        refs: &Refs,
        r: &str,
        name: &str,
        role: Role,
        now: DateTime<Utc>,
    ) -> Result<ConversationDetail, AppError> {
        let c = self.find(refs, r).await?;
        let since = now - Duration::minutes(REVEAL_MINUTES);
        let revealed_at = if role.allows(Role::Admin) {
            audit::last_since(&self.store, &c.conversation_id, REVEAL, name, since).await?
        } else {
            None
        };
        let state = records::get_state(&self.store, &c.conversation_id).await?;
        let mut d = detail(
            &c,
            r,
            Seen::of(role, revealed_at.is_some()),
            state.version > 0,
        );
        // The middleware's state is linked by its reference, never by the id (which can
        // hold a phone number or an email), for everyone who may open this page.
        d.middleware_ref = d
            .has_middleware_state
            .then(|| refs.of_id(&c.conversation_id));
        d.revealed_until = revealed_at.map(|at| {
            (at + Duration::minutes(REVEAL_MINUTES)).to_rfc3339_opts(SecondsFormat::Secs, true)
        });
        Ok(d)
    }

    /// The audit record saying an admin reveals a conversation's contact details, and why,
    /// as writes (the form's key is committed with it). The detail view shows them to that
    /// admin for the next few minutes.
    pub async fn reveal(
        &self,
        refs: &Refs,
        req: &Reveal<'_>,
        now: DateTime<Utc>,
    ) -> Result<Writes, AppError> {
        let Reveal {
            r,
            reason,
            admin,
            idempotency_key,
        } = *req;
        let reason = check_reason(reason)?;
        let c = self.find(refs, r).await?;
        let mut a = AuditItem::new(
            &c.conversation_id,
            REVEAL,
            now,
            &random_hex(8),
            self.audit_days,
        );
        a.actor = admin.to_string();
        a.idempotency_key = idempotency_key.to_string();
        a.action_payload_redacted = serde_json::json!({
            "reason": redact(reason),
            "fields": ["recipient_tel", "recipient_email", "recipient_name", "conversation_id"],
        })
        .to_string();
        Ok(audit::writes(&self.store, &a)?)
    }
}
