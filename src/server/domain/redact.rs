//! The one redaction every excerpt, audit payload and log line goes through
//! (docs/events.md, "What is kept and what is redacted"): emails → `***@***`, phones → `***-***-1234`,
//! order numbers → `***1234`, tracking numbers and links → `***`.

use std::sync::OnceLock;

use regex::{Captures, Regex};

struct Patterns {
    link: Regex,
    email: Regex,
    tracking_keyword: Regex,
    tracking_shape: Regex,
    order_keyword: Regex,
    hash_number: Regex,
    phone: Regex,
    date: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("redaction pattern compiles");
        Patterns {
            link: re(r"(?i)\b(?:https?://|www\.)[^\s<>]+"),
            email: re(r"(?i)[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,}"),
            // "tracking number: XYZ", "tracking # 9400...", "tracking id XYZ"
            tracking_keyword: re(
                r"(?i)\b(tracking|shipment)(\s*(?:number|no\.?|num|id|code|#)?\s*(?:is|:|#)?\s*)([A-Z0-9][A-Z0-9\- ]{6,34}[A-Z0-9])\b",
            ),
            // UPS 1Z…, and any run of 16+ digits (USPS, card-like numbers)
            tracking_shape: re(r"(?i)\b1Z[0-9A-Z]{16}\b|\b\d(?:[ -]?\d){15,}\b"),
            // "order 12345", "order #A-12345", "order number: 12345"
            order_keyword: re(
                r"(?i)\b(order|ord|invoice|receipt)(\s*(?:number|no\.?|num|id|#)?\s*(?:is|:|#)?\s*#?)([A-Z0-9][A-Z0-9\-]{2,30})\b",
            ),
            hash_number: re(r"#\s?(\d{4,})\b"),
            // 7 to 15 digits with the usual separators, optional country code and parentheses
            phone: re(r"(?:\+\d{1,3}[\s.\-]?)?(?:\(\d{1,4}\)[\s.\-]?)?\d[\d\s.\-]{5,18}\d"),
            // ISO dates look like phone numbers to the pattern above; they are not personal.
            date: re(r"^\d{4}[-.]\d{2}[-.]\d{2}$"),
        }
    })
}

fn last4(s: &str) -> String {
    let digits: Vec<char> = s.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    digits[digits.len().saturating_sub(4)..].iter().collect()
}

fn digit_count(s: &str) -> usize {
    s.chars().filter(char::is_ascii_digit).count()
}

/// Redacts personal data and identifiers from free text.
pub fn redact(text: &str) -> String {
    let p = patterns();
    let out = p.link.replace_all(text, "***");
    let out = p.email.replace_all(&out, "***@***");
    let out = p.tracking_keyword.replace_all(&out, |c: &Captures| {
        if digit_count(&c[3]) >= 4 {
            format!("{}{}***", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    let out = p.tracking_shape.replace_all(&out, "***");
    let out = p.order_keyword.replace_all(&out, |c: &Captures| {
        if digit_count(&c[3]) >= 3 {
            format!("{}{}***{}", &c[1], &c[2], last4(&c[3]))
        } else {
            c[0].to_string()
        }
    });
    let out = p
        .hash_number
        .replace_all(&out, |c: &Captures| format!("#***{}", last4(&c[1])));
    let out = p.phone.replace_all(&out, |c: &Captures| {
        let n = digit_count(&c[0]);
        if (7..=15).contains(&n) && !p.date.is_match(&c[0]) {
            format!("***-***-{}", last4(&c[0]))
        } else {
            c[0].to_string()
        }
    });
    out.into_owned()
}

/// The order number a message carries ("order 123456", "order #A-99812", "#123456"), if
/// any. Callers keep only its last 4 characters.
pub fn order_number(text: &str) -> Option<String> {
    let p = patterns();
    p.order_keyword
        .captures_iter(text)
        .map(|c| c[3].to_string())
        .chain(p.hash_number.captures_iter(text).map(|c| c[1].to_string()))
        .find(|candidate| digit_count(candidate) >= 3)
}

/// A conversation id as anyone but an admin who revealed it may see it. Ids of the
/// conversations table end with the recipient's handle (`company#project#request#handle`,
/// the handle a phone number, or an email with `@` written `.at.`): the handle is masked
/// like a phone or an email; the rest, and any other id, is redacted like free text.
pub fn conversation_id(id: &str) -> String {
    match id.rsplit_once('#') {
        Some((head, handle)) if head.matches('#').count() >= 2 => {
            let masked = if handle.contains('@') || handle.contains(".at.") {
                "***@***".to_string()
            } else if digit_count(handle) >= 7 {
                format!("***-***-{}", last4(handle))
            } else {
                redact(handle)
            };
            format!("{}#{masked}", redact(head))
        }
        _ => redact(id),
    }
}

/// Free text or an identifier as `role` may see it: viewers see no personal data, so
/// what could be a phone number or an email (a user id, a reason, a label) is redacted
/// for them; operators and admins work with it as it is.
pub fn for_role(role: crate::model::users::Role, text: &str) -> String {
    if role.allows(crate::model::users::Role::Operator) {
        text.to_string()
    } else {
        redact(text)
    }
}

/// A URL (the receiver's) as `role` may see it: admins whole; everyone else its scheme,
/// host and port, with every path segment and query value masked and no user info (a URL
/// can carry a token in any of them: `/hook/<token>`, `?token=`, `user:pass@`). Text that
/// is not a URL is redacted as free text.
pub fn url_for_role(role: crate::model::users::Role, url: &str) -> String {
    if role.allows(crate::model::users::Role::Admin) || url.is_empty() {
        return url.to_string();
    }
    let Ok(uri) = url.trim().parse::<hyper::Uri>() else {
        return redact(url);
    };
    let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
        return redact(url);
    };
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    let query = uri
        .query()
        .map(|q| {
            let masked: Vec<String> = q
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None => "***".to_string(),
                })
                .collect();
            format!("?{}", masked.join("&"))
        })
        .unwrap_or_default();
    let path: String = uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|_| "/***")
        .collect();
    format!("{scheme}://{host}{port}{path}{query}")
}

/// A JSON text (a stored answer) as `role` may see it: for viewers, every string in it is
/// redacted as [`for_role`] redacts text (a measurement's answer names its user); text
/// that is not JSON is redacted whole. Operators and admins get it as it is.
pub fn json_for_role(role: crate::model::users::Role, json: &str) -> String {
    if role.allows(crate::model::users::Role::Operator) {
        return json.to_string();
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(v) => serde_json::to_string(&redact_strings(v)).unwrap_or_default(),
        Err(_) => redact(json),
    }
}

fn redact_strings(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(redact(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(redact_strings).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, redact_strings(v))).collect())
        }
        other => other,
    }
}

/// The last 4 letters or digits of an identifier.
pub fn last4_of(id: &str) -> String {
    last4(id)
}

/// Redacts, then keeps at most `max_chars` characters (excerpts of about 80, docs/events.md).
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let redacted = redact(text);
    let collapsed = redacted.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        collapsed
    } else {
        let cut: String = collapsed
            .chars()
            .take(max_chars.saturating_sub(1))
            .collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod json_for_role_tests {
    use super::json_for_role;
    use crate::model::users::Role;

    #[test]
    fn viewers_see_the_strings_of_a_stored_answer_redacted() {
        let answer = r#"{"measurement_id":"m-1","user_id":"jane.doe@example.com","seq":3,"tags":["+1 555 123 4567"]}"#;
        let seen: serde_json::Value =
            serde_json::from_str(&json_for_role(Role::Viewer, answer)).unwrap();
        assert_eq!(
            seen,
            serde_json::json!({"measurement_id": "m-1", "user_id": "***@***", "seq": 3,
                               "tags": ["***-***-4567"]})
        );
        for role in [Role::Operator, Role::Admin] {
            assert_eq!(json_for_role(role, answer), answer);
        }
        assert_eq!(
            json_for_role(Role::Viewer, "call 555-123-4567"),
            "call ***-***-4567"
        );
    }
}

#[cfg(test)]
mod url_for_role_tests {
    use super::url_for_role;
    use crate::model::users::Role;

    #[test]
    fn below_admin_a_url_keeps_no_user_info_no_path_segment_and_no_query_value() {
        let url = "https://bot:s3cret@hooks.example.com:8443/in/abc?token=t0k3n&v=2";
        assert_eq!(url_for_role(Role::Admin, url), url);
        for role in [Role::Viewer, Role::Operator] {
            let seen = url_for_role(role, url);
            assert_eq!(
                seen,
                "https://hooks.example.com:8443/***/***?token=***&v=***"
            );
        }
        // A token in the path (Slack-style hooks) is not shown either.
        let slack = "https://hooks.slack.com/services/T000/B000/XXXXSECRET";
        assert_eq!(
            url_for_role(Role::Operator, slack),
            "https://hooks.slack.com/***/***/***/***"
        );
        assert_eq!(url_for_role(Role::Viewer, ""), "");
    }
}

#[cfg(test)]
mod conversation_id_tests {
    use super::conversation_id;

    #[test]
    fn the_recipient_handle_of_a_conversation_id_is_masked() {
        assert_eq!(
            conversation_id("ci-acme-001#p1#req7x000001#15551234567"),
            "ci-acme-001#p1#req7x000001#***-***-4567"
        );
        assert_eq!(
            conversation_id("ci-acme-001#p1#req7#jane.doe.at.example.com"),
            "ci-acme-001#p1#req7#***@***"
        );
        assert_eq!(conversation_id("helpdesk-conv-42"), "helpdesk-conv-42");
        assert_eq!(
            conversation_id("wa:+1 555 123 4567"),
            "wa:***-***-4567",
            "other ids are redacted like text"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_table() {
        let cases: &[(&str, &str)] = &[
            // emails
            (
                "write to jane.doe@example.com please",
                "write to ***@*** please",
            ),
            ("JOHN+orders@Mail.Example.co.uk", "***@***"),
            ("a@b.io and c.d@e-f.org", "***@*** and ***@***"),
            (
                "my email is support_team@shop.store.",
                "my email is ***@***.",
            ),
            (
                "no email here: user at example dot com",
                "no email here: user at example dot com",
            ),
            // phones
            ("call me on +1 (555) 123-4567", "call me on ***-***-4567"),
            ("555-123-4567", "***-***-4567"),
            ("+44 7700 900123 after 5pm", "***-***-0123 after 5pm"),
            ("07700900123", "***-***-0123"),
            ("my number: 555.867.5309", "my number: ***-***-5309"),
            ("+33 6 12 34 56 78", "***-***-5678"),
            ("(020) 7946 0958", "***-***-0958"),
            ("text 4155550199 thx", "text ***-***-0199 thx"),
            // order numbers
            ("where is order 123456?", "where is order ***3456?"),
            (
                "Order #A-99812 hasn't arrived",
                "Order #***9812 hasn't arrived",
            ),
            ("order number: 7781234", "order number: ***1234"),
            ("my order no. 55512 is late", "my order no. ***5512 is late"),
            ("invoice INV-20231187", "invoice ***1187"),
            ("it's #48213 on the receipt", "it's #***8213 on the receipt"),
            ("ORDER 1009", "ORDER ***1009"),
            // tracking numbers and links
            ("tracking number 1Z999AA10123456784", "tracking number ***"),
            (
                "UPS says 1Z999AA10123456784 is delayed",
                "UPS says *** is delayed",
            ),
            ("USPS 9400111899223100012345", "USPS ***"),
            ("tracking: 7489 2213 0098", "tracking: ***"),
            (
                "see https://track.example.com/abc?id=123 now",
                "see *** now",
            ),
            ("go to www.example.com/orders/55", "go to ***"),
            ("link http://x.y/z#frag", "link ***"),
            (
                "card 4111 1111 1111 1111 charged twice",
                "card *** charged twice",
            ),
            // mixtures
            (
                "Hi, I'm jane@x.com, order #123456, call +1 415 555 0100",
                "Hi, I'm ***@***, order #***3456, call ***-***-0100",
            ),
            ("refund 2 items, total 45.99", "refund 2 items, total 45.99"),
            ("I want a chargeback!!", "I want a chargeback!!"),
            (
                "delivered on 2024-03-05 at 10:30",
                "delivered on 2024-03-05 at 10:30",
            ),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(&redact(input), want, "input: {input:?}");
        }
        assert!(cases.len() >= 30);
    }

    #[test]
    fn excerpts_are_redacted_and_short() {
        let long = format!("email me at a@b.com {}", "x ".repeat(200));
        let e = excerpt(&long, 80);
        assert!(e.chars().count() <= 80);
        assert!(e.starts_with("email me at ***@***"));
    }
}
