//! Inbound helpdesk events (design doc 1): validation and normalization, the canonical
//! event key, and the deterministic decision. Pure functions; `ingest` does the I/O.

pub mod ingest;
pub mod views;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::model::AppError;
use crate::server::config::{EventsSection, Rule};
use crate::server::contract::events::Event;
use crate::server::contract::Id;
use crate::server::domain::accounts::passwords::sha256_hex;
use crate::server::domain::redact;
use crate::server::store::events::{ConversationState, LastAutoReply, PendingFlow};

pub const CHANNELS: &[&str] = &["email", "chat", "sms", "whatsapp", "social", "voice", "web"];
pub const MAX_TEXT_BYTES: usize = 100_000;
pub const NEED_ORDER_NUMBER: &str = "need_order_number";
pub const ASK_ORDER_NUMBER: &str = "ask_order_number";
pub const ORDER_STATUS: &str = "order_status";

/// An event after validation. `text` lives only in memory while the event is decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Incoming {
    pub conversation_id: String,
    pub message_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub channel: String,
    /// Trimmed, whitespace collapsed.
    pub text: String,
    pub customer_email: Option<String>,
    pub customer_phone: Option<String>,
    pub customer_id: Option<String>,
}

/// An identifier that goes into keys: no `:` (the key separator), no spaces.
fn parse_id(raw: Id, field: &str) -> Result<String, AppError> {
    let raw = raw.into_string().trim().to_string();
    let ok = !raw.is_empty()
        && raw.len() <= 128
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '+' | '/'));
    if !ok {
        return Err(AppError::invalid(
            field,
            format!(
                "{field} is 1 to 128 characters: letters, digits, '_', '-', '.', '@', '+' or '/'."
            ),
        ));
    }
    Ok(raw)
}

/// An optional customer detail: trimmed, empty as absent, at most 256 characters.
fn detail(v: Option<String>, path: &str) -> Result<Option<String>, AppError> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) if s.len() <= 256 => Ok(Some(s.to_string())),
        Some(_) => Err(AppError::invalid(
            path,
            format!("{path} is at most 256 characters."),
        )),
    }
}

pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn customer_email(raw: Option<String>) -> Result<Option<String>, AppError> {
    let Some(e) = detail(raw, "customer.email")? else {
        return Ok(None);
    };
    let e = e.to_ascii_lowercase();
    let valid = e.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !e.contains(char::is_whitespace)
    });
    if !valid {
        return Err(AppError::invalid(
            "customer.email",
            "customer.email is not an email address.",
        ));
    }
    Ok(Some(e))
}

fn customer_phone(raw: Option<String>) -> Result<Option<String>, AppError> {
    let Some(p) = detail(raw, "customer.phone")? else {
        return Ok(None);
    };
    let digits: String = p.chars().filter(char::is_ascii_digit).collect();
    let shape_ok = p
        .chars()
        .all(|ch| ch.is_ascii_digit() || " +-().".contains(ch));
    if !shape_ok || !(7..=15).contains(&digits.len()) {
        return Err(AppError::invalid(
            "customer.phone",
            "customer.phone must have 7 to 15 digits.",
        ));
    }
    Ok(Some(format!("+{digits}")))
}

/// A webhook body, read and validated.
pub fn parse(body: &[u8]) -> Result<Incoming, AppError> {
    Incoming::try_from(crate::server::contract::from_json::<Event>(body)?)
}

/// The webhook's body, validated and normalized.
impl TryFrom<Event> for Incoming {
    type Error = AppError;

    fn try_from(e: Event) -> Result<Incoming, AppError> {
        let created_at = DateTime::parse_from_rfc3339(e.created_at.trim())
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                AppError::invalid(
                    "created_at",
                    "created_at must be an RFC 3339 time with an offset, like 2026-11-22T10:00:00Z.",
                )
            })?;
        let channel = e.channel.trim().to_ascii_lowercase();
        if !CHANNELS.contains(&channel.as_str()) {
            return Err(AppError::invalid(
                "channel",
                format!("channel is one of {}.", CHANNELS.join(", ")),
            ));
        }
        if e.text.len() > MAX_TEXT_BYTES {
            return Err(AppError::invalid(
                "text",
                format!("text is at most {MAX_TEXT_BYTES} bytes."),
            ));
        }
        let customer = e.customer.unwrap_or_default();
        Ok(Incoming {
            conversation_id: parse_id(e.conversation_id, "conversation_id")?,
            message_id: e
                .message_id
                .map(|m| parse_id(m, "message_id"))
                .transpose()?,
            created_at,
            channel,
            text: collapse(&e.text),
            customer_email: customer_email(customer.email)?,
            customer_phone: customer_phone(customer.phone)?,
            customer_id: detail(customer.id, "customer.id")?,
        })
    }
}

impl Incoming {
    /// The normalized payload, as canonical JSON (sorted keys). Hashed, never stored.
    pub fn canonical(&self) -> String {
        json!({
            "channel": self.channel,
            "conversation_id": self.conversation_id,
            "created_at": self.created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            "customer": {
                "email": self.customer_email,
                "id": self.customer_id,
                "phone": self.customer_phone,
            },
            "message_id": self.message_id,
            "text": self.text,
        })
        .to_string()
    }

    /// The message id, or (without one) the hash of the text and the time bucket.
    pub fn message_ref(&self, bucket_seconds: i64) -> String {
        match &self.message_id {
            Some(id) => id.clone(),
            None => {
                let bucket =
                    self.created_at.timestamp().div_euclid(bucket_seconds) * bucket_seconds;
                sha256_hex(format!("{}{}", self.text.to_lowercase(), bucket).as_bytes())
            }
        }
    }

    /// `evt:rp:{conversation_id}:{message_id or hash}` (design doc 1, A.1).
    pub fn event_key(&self, bucket_seconds: i64) -> String {
        format!(
            "evt:rp:{}:{}",
            self.conversation_id,
            self.message_ref(bucket_seconds)
        )
    }
}

/// One side effect the decision asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedAction {
    /// `route`, `tag`, `assign`, `auto_reply`, `escalate`.
    pub action_type: String,
    pub target: String,
    /// Its idempotency key (design doc 1, A.1).
    pub key: String,
}

/// What the rules decided for one event. Holds no text: safe to store and show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub mode: String,
    pub intent: String,
    pub team: String,
    pub confidence: f64,
    pub tags: Vec<String>,
    pub risk_flags: Vec<String>,
    pub matched_rules: Vec<String>,
    #[serde(default)]
    pub auto_reply: Option<String>,
    #[serde(default)]
    pub escalate: Option<String>,
    /// The order flow after this event: `None` = no flow pending.
    #[serde(default)]
    pub pending_flow: Option<PendingFlow>,
    #[serde(default)]
    pub order_ref_last4: Option<String>,
    pub actions: Vec<PlannedAction>,
}

fn matches(rule: &Rule, lowered: &str) -> bool {
    rule.keywords
        .iter()
        .any(|k| lowered.contains(&k.trim().to_lowercase()))
}

fn push_unique(list: &mut Vec<String>, items: &[String]) {
    for i in items {
        if !list.contains(i) {
            list.push(i.clone());
        }
    }
}

/// Switch positions the decision depends on.
#[derive(Clone, Copy, Debug)]
pub struct Switches {
    pub safe_mode: bool,
    pub automation_enabled: bool,
}

/// Deterministic: the same state, event, switches and rules give the same decision.
pub fn decide(
    state: &ConversationState,
    ev: &Incoming,
    switches: Switches,
    cfg: &EventsSection,
    now: DateTime<Utc>,
) -> Decision {
    let lowered = ev.text.to_lowercase();
    let mut intent = None::<&Rule>;
    let mut tags = Vec::new();
    let mut risk_flags = Vec::new();
    let mut matched_rules = Vec::new();
    for rule in &cfg.rules {
        if !matches(rule, &lowered) {
            continue;
        }
        matched_rules.push(rule.name.clone());
        push_unique(&mut tags, &rule.tags);
        push_unique(&mut risk_flags, &rule.risk_flags);
        if intent.is_none() && !rule.intent.is_empty() {
            intent = Some(rule);
        }
    }
    let order_number = redact::order_number(&ev.text);
    let awaiting_order = state
        .pending_flow
        .as_ref()
        .is_some_and(|f| f.flow_type == NEED_ORDER_NUMBER);
    let (mut intent_name, team, confidence, mut reply, assign) = match intent {
        Some(r) => (
            r.intent.clone(),
            r.team.clone(),
            r.confidence,
            (!r.auto_reply.is_empty()).then(|| r.auto_reply.clone()),
            (!r.assign.is_empty()).then(|| r.assign.clone()),
        ),
        // The customer answers the question we asked: the flow goes on.
        None if awaiting_order && order_number.is_some() => (
            ORDER_STATUS.to_string(),
            state
                .last_routed_team
                .clone()
                .unwrap_or_else(|| "fulfillment".into()),
            0.9,
            Some(ORDER_STATUS.to_string()),
            None,
        ),
        None => ("general".into(), "support".into(), 0.3, None, None),
    };
    // The order-status flow: ask for the number once, answer once it is there.
    let mut pending_flow = state.pending_flow.clone();
    let mut order_ref_last4 = state.order_ref_last4.clone();
    let mut escalate = None;
    if let Some(number) = &order_number {
        order_ref_last4 = Some(redact::last4_of(number));
    }
    if intent_name == ORDER_STATUS || awaiting_order {
        if order_ref_last4.is_some() {
            pending_flow = None;
            if awaiting_order {
                intent_name = ORDER_STATUS.to_string();
                reply = Some(ORDER_STATUS.to_string());
            }
        } else {
            let attempts = pending_flow.as_ref().map_or(0, |f| f.attempts) + 1;
            if attempts == 1 {
                reply = Some(ASK_ORDER_NUMBER.to_string());
            } else {
                reply = None;
            }
            if attempts == cfg.order_flow_max_attempts {
                escalate = Some(format!("no order number after {attempts} messages"));
            }
            pending_flow = Some(PendingFlow {
                flow_type: NEED_ORDER_NUMBER.into(),
                requested_at: pending_flow
                    .as_ref()
                    .map(|f| f.requested_at.clone())
                    .unwrap_or_else(|| now.to_rfc3339_opts(SecondsFormat::Secs, true)),
                attempts,
            });
        }
    }
    if let Some(flag) = risk_flags
        .iter()
        .find(|f| matches!(f.as_str(), "chargeback" | "fraud_suspected"))
    {
        escalate = Some(format!("risk: {flag}"));
    }
    let mode = if switches.automation_enabled {
        "automation_candidate"
    } else {
        "route_only"
    };
    // Auto-replies only in automation mode, and each type once per conversation.
    let reply = reply
        .filter(|r| switches.automation_enabled && !state.auto_replies_sent.iter().any(|s| s == r));
    let cid = &ev.conversation_id;
    let mref = ev.message_ref(cfg.hash_bucket_seconds);
    let mut actions = vec![PlannedAction {
        action_type: "route".into(),
        target: team.clone(),
        key: format!("act:rp_route:{cid}:{mref}"),
    }];
    for tag in &tags {
        actions.push(PlannedAction {
            action_type: "tag".into(),
            target: tag.clone(),
            key: format!("act:rp_tag:{cid}:{tag}:{mref}"),
        });
    }
    if let Some(a) = &assign {
        actions.push(PlannedAction {
            action_type: "assign".into(),
            target: a.clone(),
            key: format!("act:rp_assign:{cid}:{a}:{mref}"),
        });
    }
    if let Some(r) = &reply {
        actions.push(PlannedAction {
            action_type: "auto_reply".into(),
            target: r.clone(),
            key: format!("act:rp_reply:{cid}:{mref}"),
        });
    }
    if escalate.is_some() {
        actions.push(PlannedAction {
            action_type: "escalate".into(),
            target: "human".into(),
            key: format!("act:rp_escalate:{cid}:{mref}"),
        });
    }
    Decision {
        mode: mode.into(),
        intent: intent_name,
        team,
        confidence,
        tags,
        risk_flags,
        matched_rules,
        auto_reply: reply,
        escalate,
        pending_flow,
        order_ref_last4,
        actions,
    }
}

/// The conversation state after this event. `replies_sent`: the auto-reply really goes out
/// (not suppressed by safe mode).
pub fn apply(
    state: &ConversationState,
    ev: &Incoming,
    decision: &Decision,
    replies_sent: bool,
    cfg: &EventsSection,
    state_ttl_days: i64,
    now: DateTime<Utc>,
) -> ConversationState {
    let now_iso = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    let created = ev.created_at.to_rfc3339_opts(SecondsFormat::Millis, true);
    let mut next = state.clone();
    next.version = state.version + 1;
    next.updated_at = now_iso.clone();
    next.expires_at = (now + Duration::days(state_ttl_days)).timestamp();
    next.last_processed_at = Some(now_iso.clone());
    next.events_seen = state.events_seen + 1;
    // A late, older event does not overwrite what a newer one decided.
    if state
        .last_event_at
        .as_deref()
        .is_none_or(|last| created.as_str() >= last)
    {
        next.last_event_at = Some(created);
        next.last_processed_message_id = Some(ev.message_ref(cfg.hash_bucket_seconds));
        next.last_intent = Some(decision.intent.clone());
        next.last_routed_team = Some(decision.team.clone());
        next.last_routing_confidence = Some(decision.confidence);
    }
    for flag in &decision.risk_flags {
        if !next.risk_flags.contains(flag) {
            next.risk_flags.push(flag.clone());
        }
    }
    next.risk_flags.sort();
    next.pending_flow = decision.pending_flow.clone();
    next.order_ref_last4 = decision.order_ref_last4.clone();
    if let (Some(reply), true) = (&decision.auto_reply, replies_sent) {
        if !next.auto_replies_sent.contains(reply) {
            next.auto_replies_sent.push(reply.clone());
            next.auto_replies_sent.sort();
        }
        next.last_auto_reply = Some(LastAutoReply {
            reply_type: reply.clone(),
            sent_at: now_iso,
            source_message_id: ev.message_ref(cfg.hash_bucket_seconds),
        });
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> EventsSection {
        crate::server::config::Config::for_tests("http://127.0.0.1:1", "t").events
    }

    fn body(text: &str, message_id: Option<&str>) -> Vec<u8> {
        let mut v = json!({
            "conversation_id": "c-1",
            "created_at": "2026-11-22T10:01:30Z",
            "channel": "email",
            "text": text,
        });
        if let Some(m) = message_id {
            v["message_id"] = json!(m);
        }
        v.to_string().into_bytes()
    }

    const ON: Switches = Switches {
        safe_mode: false,
        automation_enabled: true,
    };

    #[test]
    fn each_bad_field_is_named() {
        let cases: &[(serde_json::Value, &str)] = &[
            (json!([1]), "body"),
            (
                json!({"created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
                "conversation_id",
            ),
            (
                json!({"conversation_id": "a:b", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
                "conversation_id",
            ),
            (
                json!({"conversation_id": "c", "message_id": "", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x"}),
                "message_id",
            ),
            (
                json!({"conversation_id": "c", "created_at": "yesterday", "channel": "email", "text": "x"}),
                "created_at",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00", "channel": "email", "text": "x"}),
                "created_at",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "pigeon", "text": "x"}),
                "channel",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email"}),
                "text",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": 5}),
                "text",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": {"email": "nope"}}),
                "customer.email",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": {"phone": "12"}}),
                "customer.phone",
            ),
            (
                json!({"conversation_id": "c", "created_at": "2026-11-22T10:00:00Z", "channel": "email", "text": "x", "customer": "jane"}),
                "customer",
            ),
        ];
        for (v, field) in cases {
            match parse(v.to_string().as_bytes()) {
                Err(AppError::Invalid { field: f, .. }) => assert_eq!(&f, field, "{v}"),
                other => panic!("{v}: expected invalid {field}, got {other:?}"),
            }
        }
        assert!(matches!(parse(b"{not json"), Err(AppError::Invalid { .. })));
    }

    #[test]
    fn keys_use_the_message_id_or_the_text_and_time_bucket() {
        let c = cfg();
        let with_id = parse(&body("hello", Some("m-9"))).unwrap();
        assert_eq!(with_id.event_key(c.hash_bucket_seconds), "evt:rp:c-1:m-9");
        let a = parse(&body("Where is  my order?", None)).unwrap();
        let mut b = parse(&body("  where is my ORDER? ", None)).unwrap();
        assert_eq!(a.event_key(300), b.event_key(300), "same text, same bucket");
        b.created_at += Duration::seconds(60);
        assert_eq!(
            a.event_key(300),
            b.event_key(300),
            "10:02:30 is still in the 10:00 bucket"
        );
        b.created_at += Duration::seconds(240);
        assert_ne!(
            a.event_key(300),
            b.event_key(300),
            "10:06:30 is the next bucket"
        );
        let other = parse(&body("Where is my parcel?", None)).unwrap();
        assert_ne!(a.event_key(300), other.event_key(300));
    }

    #[test]
    fn the_canonical_payload_is_deterministic_and_ignores_extra_fields() {
        let a = parse(br#"{"text":"hi  there","channel":"EMAIL","created_at":"2026-11-22T11:00:00+01:00","conversation_id":"c","extra":1}"#).unwrap();
        let b = parse(br#"{"conversation_id":"c","created_at":"2026-11-22T10:00:00Z","channel":"email","text":" hi there"}"#).unwrap();
        assert_eq!(a.canonical(), b.canonical());
    }

    #[test]
    fn the_order_flow_asks_once_then_completes() {
        let c = cfg();
        let now = Utc::now();
        let empty = ConversationState::default();
        let first = parse(&body("Where is my order? It hasn't arrived", Some("m1"))).unwrap();
        let d1 = decide(&empty, &first, ON, &c, now);
        assert_eq!(d1.intent, "order_status");
        assert_eq!(d1.auto_reply.as_deref(), Some(ASK_ORDER_NUMBER));
        assert_eq!(d1.pending_flow.as_ref().unwrap().attempts, 1);
        let s1 = apply(&empty, &first, &d1, true, &c, 90, now);

        let again = parse(&body(
            "hello?? still waiting, where is my order",
            Some("m2"),
        ))
        .unwrap();
        let d2 = decide(&s1, &again, ON, &c, now);
        assert_eq!(d2.auto_reply, None, "asked once only");
        assert_eq!(d2.pending_flow.as_ref().unwrap().attempts, 2);
        let s2 = apply(&s1, &again, &d2, true, &c, 90, now);

        let answer = parse(&body("it is order #A-99812", Some("m3"))).unwrap();
        let d3 = decide(&s2, &answer, ON, &c, now);
        assert_eq!(d3.intent, "order_status");
        assert_eq!(d3.auto_reply.as_deref(), Some(ORDER_STATUS));
        assert_eq!(d3.pending_flow, None);
        assert_eq!(d3.order_ref_last4.as_deref(), Some("9812"));
        let s3 = apply(&s2, &answer, &d3, true, &c, 90, now);
        assert_eq!(
            s3.auto_replies_sent,
            vec![ASK_ORDER_NUMBER.to_string(), ORDER_STATUS.to_string()]
        );

        let later = parse(&body("where is my order 555123 now", Some("m4"))).unwrap();
        let d4 = decide(&s3, &later, ON, &c, now);
        assert_eq!(
            d4.auto_reply, None,
            "the order_status reply is never sent twice"
        );
    }

    #[test]
    fn risk_escalates_and_automation_off_sends_no_reply() {
        let c = cfg();
        let now = Utc::now();
        let ev = parse(&body("I will file a chargeback, this is fraud", Some("m1"))).unwrap();
        let d = decide(&ConversationState::default(), &ev, ON, &c, now);
        assert_eq!(d.intent, "chargeback");
        assert_eq!(
            d.risk_flags,
            vec!["chargeback".to_string(), "fraud_suspected".to_string()]
        );
        assert!(d.actions.iter().any(|a| a.action_type == "escalate"));
        assert!(d.actions.iter().any(|a| a.key == "act:rp_tag:c-1:fraud:m1"));
        assert!(d
            .actions
            .iter()
            .any(|a| a.key == "act:rp_assign:c-1:payments-escalations:m1"));

        let off = Switches {
            safe_mode: false,
            automation_enabled: false,
        };
        let ev = parse(&body("where is my order", Some("m2"))).unwrap();
        let d = decide(&ConversationState::default(), &ev, off, &c, now);
        assert_eq!(d.mode, "route_only");
        assert_eq!(d.auto_reply, None);
        assert!(d.actions.iter().all(|a| a.action_type != "auto_reply"));
    }

    #[test]
    fn nothing_matched_goes_to_support() {
        let c = cfg();
        let ev = parse(&body("Hi, quick question about sizes", None)).unwrap();
        let d = decide(&ConversationState::default(), &ev, ON, &c, Utc::now());
        assert_eq!((d.intent.as_str(), d.team.as_str()), ("general", "support"));
        assert_eq!(d.actions.len(), 1);
        assert_eq!(d.actions[0].action_type, "route");
    }
}
