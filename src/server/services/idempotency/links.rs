//! Where a key leads: the API key that sent it, and the page of what its operation made or
//! changed, as far as its scope and its stored answer say.

use crate::model::idempotency::KeyLink;
use crate::model::users::Role;
use crate::server::store::idempotency::KeyItem;

/// The name of the API key that sent `item`, from the API keys as `(hash, name)`.
pub fn api_key_name(item: &KeyItem, api_keys: &[(String, String)]) -> Option<String> {
    let sender = item.api_key_hash.as_deref()?;
    api_keys
        .iter()
        .find(|(hash, _)| hash == sender)
        .map(|(_, name)| name.clone())
}

/// The page of what an operation of `scope` made or changed. `answer` is the stored answer
/// before redaction: a measurement's user is put in the link (as the reference
/// `user_ref` makes of it) only for roles that see user ids. A conversation's key links to the conversations' search, not to the conversation:
/// its id is in the request, never in the stored answer, and the key keeps no copy of it
/// (a conversation id can hold a phone number).
pub fn resource(
    scope: &str,
    answer: Option<&str>,
    role: Role,
    user_ref: &dyn Fn(&str) -> String,
) -> Option<KeyLink> {
    let path = scope
        .strip_prefix("http:")
        .and_then(|r| r.split_once(' '))
        .map(|(_, path)| path);
    let link = |label: String, href: String| Some(KeyLink { label, href });
    let page = |label: &str, href: &str| link(label.into(), href.into());
    match (scope, path) {
        ("kill_switches.change", _) | (_, Some("/api/v1/kill-switches")) => {
            page("Kill switches (the change history)", "/kill-switches")
        }
        ("inbox.publish", _) => page("Inbox (what was published)", "/inbox"),
        (_, Some(p)) if p.starts_with("/api/v1/inbox/") => page("Inbox", "/inbox"),
        // The users and keys are an admin's page: others get no link to it.
        (s, _) if s.starts_with("accounts.") => role.allows(Role::Admin).then(|| KeyLink {
            label: "Users and API keys".into(),
            href: "/users".into(),
        }),
        (s, _) if s.starts_with("conversations.") => page("Conversations", "/conversations"),
        (_, Some(p)) if p.starts_with("/api/v1/conversations") => {
            page("Conversations", "/conversations")
        }
        (_, Some("/api/v1/measurements")) => {
            let user = answer
                .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                .and_then(|v| v.get("user_id")?.as_str().map(str::to_string))
                .filter(|_| role.allows(Role::Operator));
            match user {
                Some(u) => link(
                    format!("Measurements of user {u}"),
                    format!(
                        "/measurements?user={}",
                        crate::model::pages::query_value(&user_ref(&u))
                    ),
                ),
                None => page("Measurements", "/measurements"),
            }
        }
        (_, Some(p)) if p.starts_with("/api/v1/measurements") => {
            page("Measurements", "/measurements")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_leads_to_its_page() {
        let sealed = |u: &str| format!("ref-of-{}", u.len());
        let href = |scope: &str, answer: Option<&str>, role| {
            resource(scope, answer, role, &sealed).map(|l| l.href)
        };
        assert_eq!(
            href("http:POST /api/v1/kill-switches", None, Role::Viewer).as_deref(),
            Some("/kill-switches")
        );
        assert_eq!(
            href("kill_switches.change", None, Role::Viewer).as_deref(),
            Some("/kill-switches")
        );
        assert_eq!(
            href("inbox.publish", None, Role::Viewer).as_deref(),
            Some("/inbox")
        );
        assert_eq!(
            href("accounts.create_api_key", None, Role::Admin).as_deref(),
            Some("/users")
        );
        assert_eq!(href("accounts.create_api_key", None, Role::Operator), None);
        let answer = Some(r#"{"user_id":"user 7","measurement_id":"m1"}"#);
        assert_eq!(
            href("http:POST /api/v1/measurements", answer, Role::Operator).as_deref(),
            Some("/measurements?user=ref-of-6"),
            "the user by a reference, never by id"
        );
        // A viewer does not see user ids: the link does not carry one.
        assert_eq!(
            href("http:POST /api/v1/measurements", answer, Role::Viewer).as_deref(),
            Some("/measurements")
        );
        assert_eq!(href("something.else", None, Role::Admin), None);
    }

    #[test]
    fn the_api_key_is_named_by_its_hash_only() {
        let mut item: KeyItem = serde_json::from_value(serde_json::json!({
            "id": "api#s#h", "tenant": "api", "scope": "s", "key_hash": "h",
            "fingerprint": "f", "status": "succeeded", "claim_nonce": "n",
            "created_at": 0, "updated_at": 0, "started_at": 0, "expires_at": 0,
            "attempt_count": 1, "stale_at": 0
        }))
        .expect("a key item");
        let keys = [("abc".to_string(), "bot-x".to_string())];
        assert_eq!(api_key_name(&item, &keys), None);
        item.api_key_hash = Some("abc".into());
        assert_eq!(api_key_name(&item, &keys).as_deref(), Some("bot-x"));
        item.api_key_hash = Some("other".into());
        assert_eq!(api_key_name(&item, &keys), None);
    }
}
