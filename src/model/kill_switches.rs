//! Kill switches: the two settings that stop the middleware from acting on its own.

use serde::{Deserialize, Serialize};

use super::AppError;

/// Longest reason we keep; a reason is a sentence, not a document.
pub const MAX_REASON_CHARS: usize = 500;

/// An alert rule a trip can be attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TripRuleChoice {
    /// The rule's name: an alert's id, or the part before `:` of a rule judged per scope.
    pub rule: &'static str,
    /// In words.
    pub words: &'static str,
    /// Judged per idempotency scope: a trip may name one scope (`<rule>:<scope>`).
    pub per_scope: bool,
    /// Who makes the rule fire: a trip on it hands them the switch.
    pub driven_by: &'static str,
}

/// The alert rules a trip can be attached to.
pub const TRIP_RULES: &[TripRuleChoice] = &[
    TripRuleChoice {
        rule: "idempotency.failure",
        words: "Idempotency failure rate",
        per_scope: true,
        driven_by: "every client of the scope",
    },
    TripRuleChoice {
        rule: "idempotency.stale_takeover",
        words: "Idempotency stale-takeover rate",
        per_scope: true,
        driven_by: "every client of the scope",
    },
    TripRuleChoice {
        rule: "outbox.dead_letters",
        words: "Dead letters in the outbox",
        per_scope: false,
        driven_by: "the receiver's answers",
    },
    TripRuleChoice {
        rule: "outbox.receiver_failing",
        words: "The receiver failing deliveries",
        per_scope: false,
        driven_by: "the receiver's answers",
    },
    TripRuleChoice {
        rule: "measurements.duplicates",
        words: "Measurement duplicates",
        per_scope: false,
        driven_by: "every device key (measurements:write)",
    },
    TripRuleChoice {
        rule: "measurements.out_of_order_spike",
        words: "Measurements out of order",
        per_scope: false,
        driven_by: "every device key (measurements:write)",
    },
];

/// Longest idempotency scope a trip may name.
pub const MAX_TRIP_SCOPE_CHARS: usize = 200;

/// The rule a trip names, checked: one of [`TRIP_RULES`], or `<rule>:<scope>` for a rule
/// judged per scope (`scope` as the Idempotency page names it; blank: every scope).
pub fn trip_rule(rule: &str, scope: &str) -> Result<(TripRuleChoice, String), AppError> {
    let Some(known) = TRIP_RULES.iter().find(|r| r.rule == rule.trim()) else {
        return Err(AppError::invalid(
            "rule",
            "Choose one of the alert rules listed.",
        ));
    };
    let scope = scope.trim();
    if scope.is_empty() {
        return Ok((*known, known.rule.to_string()));
    }
    if !known.per_scope {
        return Err(AppError::invalid(
            "scope",
            "This rule is not judged per scope; leave the scope empty.",
        ));
    }
    if scope.chars().count() > MAX_TRIP_SCOPE_CHARS || scope.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "scope",
            "Name a scope as the Idempotency page shows it (at most 200 characters).",
        ));
    }
    Ok((*known, format!("{}:{scope}", known.rule)))
}

/// A trip's rule in words: its rule's, and the scope it is limited to.
pub fn trip_rule_words(rule: &str) -> String {
    let (name, scope) = rule.split_once(':').unwrap_or((rule, ""));
    match TRIP_RULES.iter().find(|r| r.rule == name) {
        Some(r) if r.per_scope && scope.is_empty() => format!("{} (any scope)", r.words),
        Some(r) if r.per_scope => format!("{} of {scope}", r.words),
        Some(r) => r.words.to_string(),
        None => rule.to_string(),
    }
}

/// Whether an alert (by its id, `idempotency.failure:inbox.publish`) is judged by `rule`
/// (`idempotency.failure`: every scope; `idempotency.failure:inbox.publish`: that one
/// exactly, though scopes have `:` in them).
pub fn rule_covers(rule: &str, alert_id: &str) -> bool {
    alert_id == rule
        || !rule.contains(':')
            && alert_id
                .strip_prefix(rule)
                .is_some_and(|rest| rest.starts_with(':'))
}

/// The ends the change form offers a change in a risky direction: minutes, and in words.
/// The API takes any number of minutes up to a week, or an end time.
pub const TIMED_CHOICES: &[(u32, &str)] = &[
    (15, "for 15 minutes"),
    (30, "for 30 minutes"),
    (60, "for 1 hour"),
    (120, "for 2 hours"),
    (240, "for 4 hours"),
    (480, "for 8 hours"),
    (1440, "for 24 hours"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch {
    SafeMode,
    AutomationEnabled,
}

impl Switch {
    pub const ALL: [Switch; 2] = [Switch::SafeMode, Switch::AutomationEnabled];

    pub fn key(self) -> &'static str {
        match self {
            Switch::SafeMode => "safe_mode",
            Switch::AutomationEnabled => "automation_enabled",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Switch::SafeMode => "Safe mode",
            Switch::AutomationEnabled => "Automation",
        }
    }

    /// What a trip or a trigger does to the switch, in words: "safe mode turns on". Written
    /// out rather than lowercased from [`Switch::label`]: `str::to_lowercase` brings
    /// Unicode's case tables (12 KB) into the shell every page loads (docs/page-weight.md).
    pub fn trip_effect(self) -> &'static str {
        match self {
            Switch::SafeMode => "safe mode turns on",
            Switch::AutomationEnabled => "automation turns off",
        }
    }

    pub fn parse(s: &str) -> Result<Switch, AppError> {
        match s {
            "safe_mode" => Ok(Switch::SafeMode),
            "automation_enabled" => Ok(Switch::AutomationEnabled),
            _ => Err(AppError::invalid(
                "switch",
                "Unknown switch: expected safe_mode or automation_enabled.",
            )),
        }
    }

    /// Moving the switch to `enabled` lets the middleware do more on its own,
    /// so the change has to be confirmed explicitly.
    pub fn needs_confirmation(self, enabled: bool) -> bool {
        match self {
            Switch::SafeMode => !enabled,
            Switch::AutomationEnabled => enabled,
        }
    }

    /// The switch's safe position: safe mode on, automation off. A trip or a trigger URL
    /// only ever moves a switch here.
    pub fn safe(self) -> bool {
        match self {
            Switch::SafeMode => true,
            Switch::AutomationEnabled => false,
        }
    }

    /// What the middleware does when the switch is in the given position.
    pub fn describe(self, enabled: bool) -> &'static str {
        match (self, enabled) {
            (Switch::SafeMode, true) => "No side effects: decisions are recorded, nothing is sent.",
            (Switch::SafeMode, false) => "Side effects (replies, tags, assignments) are delivered.",
            (Switch::AutomationEnabled, true) => "Automatic replies may be sent.",
            (Switch::AutomationEnabled, false) => "Route only: no automatic replies.",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchState {
    pub enabled: bool,
    pub changed_by: Option<String>,
    /// RFC 3339, UTC (text on the wire and in the page: no date parsing in the browser).
    pub changed_at: Option<String>,
    pub reason: Option<String>,
    /// A timed change: when it ends and the switch goes back (RFC 3339, UTC). Absent from a
    /// page of an older release (a rolling deployment): no end.
    #[serde(default)]
    pub ends_at: Option<String>,
}

impl SwitchState {
    fn default_position(enabled: bool) -> Self {
        SwitchState {
            enabled,
            changed_by: None,
            changed_at: None,
            reason: None,
            ends_at: None,
        }
    }
}

/// Both switches as one versioned value: every change bumps `version`, and a change is
/// only accepted against the version its author saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillSwitches {
    pub safe_mode: SwitchState,
    pub automation_enabled: SwitchState,
    pub version: u64,
}

impl KillSwitches {
    /// Never set (or expired): the safe position. Nothing is sent until a person says so.
    pub fn safe_defaults() -> Self {
        KillSwitches {
            safe_mode: SwitchState::default_position(true),
            automation_enabled: SwitchState::default_position(false),
            version: 0,
        }
    }

    pub fn get(&self, switch: Switch) -> &SwitchState {
        match switch {
            Switch::SafeMode => &self.safe_mode,
            Switch::AutomationEnabled => &self.automation_enabled,
        }
    }

    pub fn get_mut(&mut self, switch: Switch) -> &mut SwitchState {
        match switch {
            Switch::SafeMode => &mut self.safe_mode,
            Switch::AutomationEnabled => &mut self.automation_enabled,
        }
    }

    pub fn summary(&self) -> String {
        let on_off = |b: bool| if b { "on" } else { "off" };
        format!(
            "safe mode is {}, automation is {}",
            on_off(self.safe_mode.enabled),
            on_off(self.automation_enabled.enabled)
        )
    }
}

/// A reason given for a change: required, trimmed, bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason(String);

impl Reason {
    pub fn parse(raw: &str) -> Result<Reason, AppError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(AppError::invalid("reason", "A reason is required."));
        }
        if trimmed.chars().count() > MAX_REASON_CHARS {
            return Err(AppError::invalid(
                "reason",
                format!("Keep the reason under {MAX_REASON_CHARS} characters."),
            ));
        }
        Ok(Reason(trimmed.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One entry of the change history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchChangeRecord {
    /// RFC 3339, UTC.
    pub at: String,
    pub actor: String,
    pub switch: Switch,
    /// The switch's move, from and to; none for a change of what moves it without a person
    /// (a trip or a trigger URL), told in `reason`.
    pub moved: Option<(bool, bool)>,
    pub reason: String,
    /// The switches' version after a move (0 for a change of what moves them).
    pub version: u64,
    /// A timed change: when it was to end (RFC 3339, UTC).
    #[serde(default)]
    pub ends_at: Option<String>,
    /// What else the change did, in words: "ends the timed change by alice (to end at …)".
    #[serde(default)]
    pub note: Option<String>,
}

/// A change in a risky direction waiting for a second admin (docs/switches.md,
/// "Approvals"). It cannot be edited: its requester asking again replaces it, under a new
/// id, so an approval always names the content its approver read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub switch: Switch,
    pub enable: bool,
    /// Redacted, as every reason.
    pub reason: String,
    /// A timed change: this many minutes from its approval.
    #[serde(default)]
    pub for_minutes: Option<i64>,
    /// A timed change: its end (RFC 3339, UTC).
    #[serde(default)]
    pub ends_at: Option<String>,
    /// The switches' version it was asked against: any change of the switches since makes
    /// it stale.
    pub version: u64,
    pub requested_by: String,
    /// The person behind a requester that is an API key (the key's maker): they cannot
    /// approve it either.
    #[serde(default)]
    pub on_behalf_of: Option<String>,
    /// RFC 3339, UTC.
    pub requested_at: String,
    /// Past this (RFC 3339, UTC) it can no longer be approved.
    pub expires_at: String,
}

/// A change set for a later time (docs/switches.md, "Scheduled changes"): run once, by
/// whichever console is up, unless its switch was changed after it was set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scheduled {
    pub id: String,
    pub switch: Switch,
    pub enable: bool,
    /// Redacted, as every reason.
    pub reason: String,
    /// A timed change: this many minutes from when it runs.
    #[serde(default)]
    pub for_minutes: Option<i64>,
    /// A timed change: its end (RFC 3339, UTC).
    #[serde(default)]
    pub ends_at: Option<String>,
    /// When it runs (RFC 3339, UTC).
    pub at: String,
    pub scheduled_by: String,
    pub scheduled_at: String,
    /// The switch's last change when it was set: another since voids it.
    #[serde(default)]
    pub seen_change: Option<String>,
}

/// What a change form's submission did: the switches as stored, and, when the change waits
/// for a second admin, what was asked, in words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeAnswer {
    pub switches: KillSwitches,
    pub requested: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPage {
    pub entries: Vec<SwitchChangeRecord>,
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_is_required_and_trimmed() {
        assert_eq!(Reason::parse("  \n ").unwrap_err().field(), Some("reason"));
        assert_eq!(
            Reason::parse("  incident 42 ").unwrap().as_str(),
            "incident 42"
        );
        let long = "x".repeat(MAX_REASON_CHARS + 1);
        assert!(Reason::parse(&long).is_err());
    }

    #[test]
    fn only_the_risky_directions_need_confirmation() {
        assert!(Switch::SafeMode.needs_confirmation(false));
        assert!(!Switch::SafeMode.needs_confirmation(true));
        assert!(Switch::AutomationEnabled.needs_confirmation(true));
        assert!(!Switch::AutomationEnabled.needs_confirmation(false));
    }

    #[test]
    fn defaults_are_safe() {
        let d = KillSwitches::safe_defaults();
        assert!(d.safe_mode.enabled);
        assert!(!d.automation_enabled.enabled);
        assert_eq!(d.version, 0);
    }

    #[test]
    fn a_trip_limited_to_one_scope_covers_that_scope_alone() {
        let (_, any) = trip_rule("idempotency.failure", " ").unwrap();
        let (_, one) = trip_rule("idempotency.failure", "http:POST /api/v1/inbox").unwrap();
        assert_eq!(one, "idempotency.failure:http:POST /api/v1/inbox");
        let device = "idempotency.failure:http:POST /api/v1/measurements";
        assert!(rule_covers(&any, device));
        assert!(!rule_covers(&one, device));
        assert!(rule_covers(
            &one,
            "idempotency.failure:http:POST /api/v1/inbox"
        ));
        // A scope is exact: not a prefix of others, even at one of their colons.
        let (_, http) = trip_rule("idempotency.failure", "http").unwrap();
        assert!(!rule_covers(&http, device));
        assert_eq!(
            trip_rule("measurements.duplicates", "x")
                .unwrap_err()
                .field(),
            Some("scope")
        );
        assert!(trip_rule("idempotency.failure", "a\nb").is_err());
        assert!(trip_rule("nothing", "").is_err());
        assert_eq!(
            trip_rule_words(&one),
            "Idempotency failure rate of http:POST /api/v1/inbox"
        );
        assert_eq!(
            trip_rule_words(&any),
            "Idempotency failure rate (any scope)"
        );
    }
}
