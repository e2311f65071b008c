//! Links without personal data in the URL (where browser history, proxies and logs would
//! keep it): a conversation by its table key, and a user (of measurements, of an inbox) by
//! their id, each sealed under a key derived from the server secret, one key per kind.
//!
//! A reference is sealed under a random nonce ([`Seal::seal_fresh`]): two references of
//! one conversation are not alike, so a viewer who has `/find` seal a guessed phone number
//! learns nothing by comparing it with a page's reference of a masked one. Within one
//! answer ([`Refs::for_answer`]) each value is sealed once, so a page names one conversation
//! by one reference (and compresses as well as before). A side effect's reference
//! ([`Refs::action`]) stays deterministic: an event id is no personal data, and the Outbox
//! finds the row an address names by it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::server::crypto::Seal;
use crate::server::services::idempotency::Engine;

#[derive(Clone)]
pub struct Refs {
    seal: Seal,
    users: Seal,
    actions: Seal,
    /// Companies typed into the search that the directory does not know (they may be a
    /// mistyped phone number): never a conversation's reference.
    companies: Seal,
    /// The references made for one answer (none: a new one at every call).
    made: Option<Arc<Mutex<Made>>>,
}

/// References made for one answer, by kind and plain text.
type Made = HashMap<(Kind, String), String>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Conversation,
    User,
}

/// What a page or a form was given for a conversation or a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Given {
    /// Nothing.
    Nothing,
    /// A reference this server made, opened.
    Reference(String),
    /// A value a person typed (or put in an address): a lookup by what it names, counted
    /// against the person ([`crate::server::services::users::Users::count_lookup`]).
    Typed(String),
}

impl Given {
    /// The id it stands for (empty for nothing).
    pub fn id(&self) -> &str {
        match self {
            Given::Nothing => "",
            Given::Reference(id) | Given::Typed(id) => id,
        }
    }

    pub fn into_id(self) -> String {
        match self {
            Given::Nothing => String::new(),
            Given::Reference(id) | Given::Typed(id) => id,
        }
    }

    pub fn typed(&self) -> bool {
        matches!(self, Given::Typed(_))
    }
}

impl Refs {
    pub fn new(engine: &Engine) -> Refs {
        Refs {
            seal: engine.seal("conversation-ref"),
            users: engine.seal("user-ref"),
            actions: engine.seal("action-ref"),
            companies: engine.seal("company-ref"),
            made: None,
        }
    }

    /// These references for one answer: each conversation or user it names is sealed once.
    pub fn for_answer(&self) -> Refs {
        Refs {
            made: Some(Arc::default()),
            ..self.clone()
        }
    }

    fn sealed(&self, kind: Kind, plain: String) -> String {
        let seal = match kind {
            Kind::Conversation => &self.seal,
            Kind::User => &self.users,
        };
        let Some(made) = &self.made else {
            return seal.seal_fresh(plain.as_bytes());
        };
        // A poisoned map only held references: start again with none.
        let mut made = made.lock().unwrap_or_else(|e| e.into_inner());
        made.entry((kind, plain))
            .or_insert_with_key(|(_, plain)| seal.seal_fresh(plain.as_bytes()))
            .clone()
    }

    /// The reference of a user id (measurements', an inbox's); empty for none.
    pub fn user(&self, uid: &str) -> String {
        if uid.is_empty() {
            return String::new();
        }
        self.sealed(Kind::User, uid.to_string())
    }

    /// The user id a page was given: a reference this server made (what every link
    /// carries), or an id a person typed.
    pub fn given_user(&self, given: &str) -> Given {
        let given = given.trim();
        if given.is_empty() {
            return Given::Nothing;
        }
        // A reference of the release before (sealed the same at every call) still opens:
        // the server no longer makes such a reference, so it is no oracle.
        match self
            .users
            .open_fresh(given)
            .or_else(|| self.users.open(given))
            .and_then(|b| String::from_utf8(b).ok())
        {
            Some(uid) => Given::Reference(uid),
            None => Given::Typed(given.to_string()),
        }
    }

    /// The reference of a conversation's table key.
    pub fn encode(&self, primary_channel: &str, conversation_id: &str) -> String {
        self.sealed(
            Kind::Conversation,
            format!("{primary_channel}\n{conversation_id}"),
        )
    }

    /// A link reference for a conversation id alone (the middleware's conversations, and
    /// audit partitions): the same encryption, with no channel.
    pub fn of_id(&self, conversation_id: &str) -> String {
        self.encode("", conversation_id)
    }

    /// The conversation id a page was given: a reference this server made (what every link
    /// carries), or an id a person typed.
    pub fn given(&self, given: &str) -> Given {
        let given = given.trim();
        if given.is_empty() {
            return Given::Nothing;
        }
        match self.decode(given) {
            Some((_, id)) => Given::Reference(id),
            None => Given::Typed(given.to_string()),
        }
    }

    /// The table key of a reference, if it is one this server made.
    pub fn decode(&self, reference: &str) -> Option<(String, String)> {
        // A reference of the release before still opens (see `given_user`).
        let plain = self
            .seal
            .open_fresh(reference)
            .or_else(|| self.seal.open(reference))?;
        let text = String::from_utf8(plain).ok()?;
        let (pc, id) = text.split_once('\n')?;
        Some((pc.to_string(), id.to_string()))
    }

    /// A typed company's reference (one the directory does not know): new at every call.
    pub fn company(&self, typed: &str) -> String {
        self.companies.seal_fresh(typed.as_bytes())
    }

    /// The company a search was given: a company reference opened, or an id as a link
    /// carries it.
    pub fn given_company(&self, given: &str) -> String {
        let given = given.trim();
        self.companies
            .open_fresh(given)
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_else(|| given.to_string())
    }

    /// A side effect's reference (by its event id): the same at every call, so the Outbox
    /// finds the row an address names.
    pub fn action(&self, event_id: &str) -> String {
        self.actions.seal(event_id.as_bytes())
    }

    /// The event id of a side effect's reference, if it is one this server made.
    pub fn action_id(&self, reference: &str) -> Option<String> {
        let reference = reference.trim();
        if let Some(id) = self.actions.open(reference) {
            return String::from_utf8(id).ok();
        }
        // A page of the release before named it under the conversations' key.
        let (kind, id) = self.decode(reference)?;
        (kind == "action").then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(secret: &str) -> Refs {
        Refs {
            seal: Seal::derive(secret.as_bytes(), "conversation-ref"),
            users: Seal::derive(secret.as_bytes(), "user-ref"),
            actions: Seal::derive(secret.as_bytes(), "action-ref"),
            companies: Seal::derive(secret.as_bytes(), "company-ref"),
            made: None,
        }
    }

    #[test]
    fn a_user_reference_hides_the_id_and_a_typed_id_is_a_lookup() {
        let r = refs("one");
        let token = r.user("jane.doe@example.com");
        assert!(!token.contains("jane"));
        assert_eq!(
            r.given_user(&token),
            Given::Reference("jane.doe@example.com".into())
        );
        assert_eq!(r.given_user(" u-42 "), Given::Typed("u-42".into()));
        assert!(r.given_user(" u-42 ").typed());
        assert_eq!(r.given_user("  "), Given::Nothing);
        assert_eq!(r.user(""), "");
        // A conversation's reference is not a user's.
        assert!(r.given_user(&r.of_id("c-1")).typed());
    }

    #[test]
    fn no_two_references_of_one_conversation_are_alike_but_within_one_answer() {
        let r = refs("one");
        let token = r.encode("+447123456789", "ci-1#pi-1#req1#447123456789");
        assert!(!token.contains("447123456789"));
        // A guess sealed by `/find` is never equal to a page's reference of the same id.
        assert_ne!(
            token,
            r.encode("+447123456789", "ci-1#pi-1#req1#447123456789")
        );
        assert_ne!(r.user("u-1"), r.user("u-1"));
        let answer = r.for_answer();
        assert_eq!(answer.of_id("c-1"), answer.of_id("c-1"));
        assert_eq!(answer.user("u-1"), answer.user("u-1"));
        assert_ne!(answer.of_id("c-1"), r.for_answer().of_id("c-1"));
        assert_eq!(
            r.decode(&token),
            Some(("+447123456789".into(), "ci-1#pi-1#req1#447123456789".into()))
        );
        assert_eq!(
            r.given(&answer.of_id("c-1")),
            Given::Reference("c-1".into())
        );
        let mut tampered = token.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(r.decode(&String::from_utf8(tampered).unwrap()), None);
        assert_eq!(refs("two").decode(&token), None);
        assert_eq!(r.decode("zz"), None);
        assert_eq!(r.given("zz"), Given::Typed("zz".into()));
    }

    #[test]
    fn a_side_effects_reference_is_stable_and_only_its_own() {
        let r = refs("one");
        assert_eq!(r.action("e-1"), r.action("e-1"));
        assert_eq!(r.action_id(&r.action("e-1")).as_deref(), Some("e-1"));
        assert_eq!(r.action_id(&r.of_id("e-1")), None);
        assert_eq!(refs("two").action_id(&r.action("e-1")), None);
    }

    #[test]
    fn a_reference_of_the_release_before_still_opens() {
        let r = refs("one");
        let old = r.seal.seal(b"+447700900123\nc-1");
        assert_eq!(r.decode(&old), Some(("+447700900123".into(), "c-1".into())));
        let old_user = r.users.seal(b"u-1");
        assert_eq!(r.given_user(&old_user), Given::Reference("u-1".into()));
        let old_action = r.seal.seal(b"action\ne-1");
        assert_eq!(r.action_id(&old_action).as_deref(), Some("e-1"));
    }

    #[test]
    fn a_typed_companys_reference_opens_only_as_a_company() {
        let r = refs("one");
        let c = r.company("+44 7700 9OO321");
        assert_eq!(r.given_company(&c), "+44 7700 9OO321");
        assert_eq!(r.given_company(" ci-1 "), "ci-1");
        // Never a conversation's (a page would take it as a link and count no lookup).
        assert_eq!(r.decode(&c), None);
        assert!(r.given(&c).typed());
    }
}
