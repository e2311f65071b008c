use super::*;

fn req(switch: Switch, enable: bool, version: u64) -> ChangeRequest {
    ChangeRequest {
        switch,
        enable,
        expected_version: version,
        reason: "incident 42".into(),
        confirmed: true,
        ends: None,
        emergency: false,
    }
}

#[test]
fn a_change_bumps_the_version_and_names_the_actor() {
    let now = Utc::now();
    let next = plan(
        &KillSwitches::safe_defaults(),
        &req(Switch::SafeMode, false, 0),
        "r",
        "alice",
        now,
    )
    .unwrap();
    assert_eq!(next.version, 1);
    assert!(!next.safe_mode.enabled);
    assert_eq!(next.safe_mode.changed_by.as_deref(), Some("alice"));
    assert!(
        !next.automation_enabled.enabled,
        "the other switch is untouched"
    );
}

#[test]
fn stale_and_no_op_changes_are_conflicts() {
    let now = Utc::now();
    let current = KillSwitches::safe_defaults();
    let err = plan(&current, &req(Switch::SafeMode, false, 3), "r", "a", now).unwrap_err();
    assert!(
        matches!(&err, AppError::Conflict(m) if m.contains("someone else")),
        "{err:?}"
    );
    let err = plan(&current, &req(Switch::SafeMode, true, 0), "r", "a", now).unwrap_err();
    assert!(matches!(err, AppError::Conflict(_)));
}

#[test]
fn risky_directions_need_confirmation_and_every_change_a_reason() {
    let mut r = req(Switch::AutomationEnabled, true, 0);
    r.confirmed = false;
    assert_eq!(validate(&r).unwrap_err().field(), Some("confirm"));
    let mut r = req(Switch::SafeMode, true, 0);
    r.confirmed = false;
    r.reason = "  ".into();
    assert_eq!(validate(&r).unwrap_err().field(), Some("reason"));
    r.reason = "drill".into();
    assert!(
        validate(&r).is_ok(),
        "turning safe mode on needs no confirmation"
    );
}

#[test]
fn a_switch_put_safe_by_a_trip_or_a_trigger_says_so_until_a_person_changes_it() {
    let state = |enabled: bool, by: &str, reason: &str| SwitchState {
        enabled,
        changed_by: Some(by.into()),
        changed_at: None,
        reason: Some(reason.into()),
        ends_at: None,
    };
    let trip = format!("{TRIP_REASON}outbox.dead_letters fired: 3 dead letters");
    assert_eq!(
        tripped_by(Switch::SafeMode, &state(true, timers::SYSTEM, &trip)),
        Some("a trip")
    );
    assert_eq!(
        tripped_by(
            Switch::AutomationEnabled,
            &state(false, triggers::ACTOR, "trigger URL: a monitor firing")
        ),
        Some("a trigger URL")
    );
    // A revert is the system's too, and no trip; a person's change is none either.
    let revert = state(true, timers::SYSTEM, "reverted: the change by alice ended");
    assert_eq!(tripped_by(Switch::SafeMode, &revert), None);
    assert_eq!(
        tripped_by(Switch::SafeMode, &state(true, "alice", &trip)),
        None
    );
    // Out of its safe position, it is no trip's any more.
    assert_eq!(
        tripped_by(Switch::SafeMode, &state(false, timers::SYSTEM, &trip)),
        None
    );
}
