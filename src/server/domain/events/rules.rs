//! The deterministic decision for one event: which rules match, where it is routed, the
//! order-status flow, escalation, and the side effects to perform, each with its key; then
//! the conversation state the decision leaves behind.

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use crate::server::config::{EventsSection, Rule};
use crate::server::domain::events::decision::{
    ActionType, Decision, Mode, PlannedAction, Switches,
};
use crate::server::domain::events::state::{ConversationState, LastAutoReply, PendingFlow};
use crate::server::domain::events::Incoming;
use crate::server::domain::redact;

pub const NEED_ORDER_NUMBER: &str = "need_order_number";
pub const ASK_ORDER_NUMBER: &str = "ask_order_number";
pub const ORDER_STATUS: &str = "order_status";

/// Deterministic: the same state, event, switches and rules give the same decision.
pub fn decide(
    state: &ConversationState,
    ev: &Incoming,
    switches: Switches,
    cfg: &EventsSection,
    now: DateTime<Utc>,
) -> Decision {
    let matched = match_rules(&cfg.rules, &ev.text);
    let order_number = redact::order_number(&ev.text);
    let awaiting_order = state
        .pending_flow
        .as_ref()
        .is_some_and(|f| f.flow_type == NEED_ORDER_NUMBER);
    let mut route = routing(
        matched.intent,
        state,
        awaiting_order && order_number.is_some(),
    );
    let mut flow = OrderFlow::resume(state, order_number.as_deref());
    if route.intent == ORDER_STATUS || awaiting_order {
        flow.advance(&mut route, awaiting_order, cfg.order_flow_max_attempts, now);
    }
    // A risk outranks a flow that stalled.
    let escalate = risk_escalation(&matched.risk_flags).or(flow.escalate);
    // Auto-replies only in automation mode, and each type once per conversation.
    let reply = route
        .reply
        .filter(|r| switches.automation_enabled && !state.auto_replies_sent.iter().any(|s| s == r));
    let plan = Plan {
        conversation_id: &ev.conversation_id,
        message_ref: &ev.message_ref(cfg.hash_bucket_seconds),
        team: &route.team,
        tags: &matched.tags,
        assign: route.assign.as_deref(),
        reply: reply.as_deref(),
        escalate: escalate.is_some(),
    };
    let actions = plan.actions();
    Decision {
        mode: Mode::of(switches.automation_enabled),
        intent: route.intent,
        team: route.team,
        confidence: route.confidence,
        tags: matched.tags,
        risk_flags: matched.risk_flags,
        matched_rules: matched.names,
        auto_reply: reply,
        escalate,
        pending_flow: flow.pending_flow,
        order_ref_last4: flow.order_ref_last4,
        actions,
    }
}

/// What the configured rules say about a text.
struct Matched<'a> {
    /// The first matching rule that names an intent.
    intent: Option<&'a Rule>,
    /// Tags and risk flags of every matching rule, each once, in rule order.
    tags: Vec<String>,
    risk_flags: Vec<String>,
    names: Vec<String>,
}

/// Every rule with a keyword in the text (case-insensitive), in the configured order.
fn match_rules<'a>(rules: &'a [Rule], text: &str) -> Matched<'a> {
    let lowered = text.to_lowercase();
    let mut m = Matched {
        intent: None,
        tags: Vec::new(),
        risk_flags: Vec::new(),
        names: Vec::new(),
    };
    for rule in rules {
        let hit = rule
            .keywords
            .iter()
            .any(|k| lowered.contains(&k.trim().to_lowercase()));
        if !hit {
            continue;
        }
        m.names.push(rule.name.clone());
        push_unique(&mut m.tags, &rule.tags);
        push_unique(&mut m.risk_flags, &rule.risk_flags);
        if m.intent.is_none() && !rule.intent.is_empty() {
            m.intent = Some(rule);
        }
    }
    m
}

fn push_unique(list: &mut Vec<String>, items: &[String]) {
    for i in items {
        if !list.contains(i) {
            list.push(i.clone());
        }
    }
}

/// Where the event goes, before the order flow and the switches have their say.
struct Route {
    intent: String,
    team: String,
    confidence: f64,
    reply: Option<String>,
    assign: Option<String>,
}

/// The matched rule's intent; without one, the answer to the order number we asked for
/// (the flow goes on, with the team that had it), or general support.
fn routing(intent: Option<&Rule>, state: &ConversationState, answers_our_question: bool) -> Route {
    match intent {
        Some(r) => Route {
            intent: r.intent.clone(),
            team: r.team.clone(),
            confidence: r.confidence,
            reply: (!r.auto_reply.is_empty()).then(|| r.auto_reply.clone()),
            assign: (!r.assign.is_empty()).then(|| r.assign.clone()),
        },
        None if answers_our_question => Route {
            intent: ORDER_STATUS.to_string(),
            team: state
                .last_routed_team
                .clone()
                .unwrap_or_else(|| "fulfillment".into()),
            confidence: 0.9,
            reply: Some(ORDER_STATUS.to_string()),
            assign: None,
        },
        None => Route {
            intent: "general".into(),
            team: "support".into(),
            confidence: 0.3,
            reply: None,
            assign: None,
        },
    }
}

/// The order-status flow's state through one event.
struct OrderFlow {
    pending_flow: Option<PendingFlow>,
    /// The last 4 characters of the order number, from this event or an earlier one.
    order_ref_last4: Option<String>,
    /// Set when the customer never gave the number.
    escalate: Option<String>,
}

impl OrderFlow {
    /// The flow as the conversation left it, with the order number this event gives.
    fn resume(state: &ConversationState, order_number: Option<&str>) -> OrderFlow {
        OrderFlow {
            pending_flow: state.pending_flow.clone(),
            order_ref_last4: order_number
                .map(redact::last4_of)
                .or_else(|| state.order_ref_last4.clone()),
            escalate: None,
        }
    }

    /// Ask for the number once, answer once it is there, escalate when it does not come
    /// after `max_attempts` messages.
    fn advance(
        &mut self,
        route: &mut Route,
        awaiting_order: bool,
        max_attempts: i64,
        now: DateTime<Utc>,
    ) {
        if self.order_ref_last4.is_some() {
            self.pending_flow = None;
            if awaiting_order {
                route.intent = ORDER_STATUS.to_string();
                route.reply = Some(ORDER_STATUS.to_string());
            }
            return;
        }
        let attempts = self.pending_flow.as_ref().map_or(0, |f| f.attempts) + 1;
        route.reply = (attempts == 1).then(|| ASK_ORDER_NUMBER.to_string());
        if attempts == max_attempts {
            self.escalate = Some(format!("no order number after {attempts} messages"));
        }
        let requested_at = self
            .pending_flow
            .as_ref()
            .map(|f| f.requested_at.clone())
            .unwrap_or_else(|| now.to_rfc3339_opts(SecondsFormat::Secs, true));
        self.pending_flow = Some(PendingFlow {
            flow_type: NEED_ORDER_NUMBER.into(),
            requested_at,
            attempts,
        });
    }
}

/// A chargeback or suspected fraud goes to a human.
fn risk_escalation(risk_flags: &[String]) -> Option<String> {
    risk_flags
        .iter()
        .find(|f| matches!(f.as_str(), "chargeback" | "fraud_suspected"))
        .map(|flag| format!("risk: {flag}"))
}

/// The side effects of a decision, before they get their keys.
struct Plan<'a> {
    conversation_id: &'a str,
    /// The message id, or the hash standing in for it.
    message_ref: &'a str,
    team: &'a str,
    tags: &'a [String],
    assign: Option<&'a str>,
    reply: Option<&'a str>,
    escalate: bool,
}

impl Plan<'_> {
    /// A route always; then tags, the assignment, the auto-reply and the escalation when
    /// decided. Each key is stable across re-runs of the event (docs/events.md,
    /// "Side effects").
    fn actions(&self) -> Vec<PlannedAction> {
        let (cid, mref) = (self.conversation_id, self.message_ref);
        let action = |action_type, target: &str, key| PlannedAction {
            action_type,
            target: target.to_string(),
            key,
        };
        let mut actions = vec![action(
            ActionType::Route,
            self.team,
            format!("act:rp_route:{cid}:{mref}"),
        )];
        for tag in self.tags {
            let key = format!("act:rp_tag:{cid}:{tag}:{mref}");
            actions.push(action(ActionType::Tag, tag, key));
        }
        if let Some(a) = self.assign {
            let key = format!("act:rp_assign:{cid}:{a}:{mref}");
            actions.push(action(ActionType::Assign, a, key));
        }
        if let Some(r) = self.reply {
            let key = format!("act:rp_reply:{cid}:{mref}");
            actions.push(action(ActionType::AutoReply, r, key));
        }
        if self.escalate {
            let key = format!("act:rp_escalate:{cid}:{mref}");
            actions.push(action(ActionType::Escalate, "human", key));
        }
        actions
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
    let now_iso = crate::server::clock::iso(now);
    let created = crate::server::clock::iso(ev.created_at);
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
