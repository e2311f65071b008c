use chrono::{Duration, TimeZone, Utc};

use super::*;
use crate::server::domain::kill_switches::{plan, validate, ChangeRequest};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 26, 14, 2, 0).unwrap()
}

fn timed(switch: Switch, enable: bool, version: u64, ends: Option<Ends>) -> ChangeRequest {
    ChangeRequest {
        switch,
        enable,
        expected_version: version,
        reason: "incident 42".into(),
        confirmed: true,
        ends,
        emergency: false,
    }
}

fn safe_mode_off_for(minutes: i64) -> KillSwitches {
    let req = timed(Switch::SafeMode, false, 0, Some(Ends::After(minutes)));
    validate(&req).unwrap();
    plan(&KillSwitches::safe_defaults(), &req, "r", "alice", now()).unwrap()
}

#[test]
fn a_timed_change_ends_when_asked_and_goes_back_by_the_system() {
    let s = safe_mode_off_for(120);
    assert_eq!(
        s.safe_mode.ends_at.as_deref(),
        Some("2026-11-26T16:02:00.000Z")
    );
    assert!(due(&s, now() + Duration::minutes(119)).is_empty());
    assert_eq!(
        due(&s, now() + Duration::minutes(120)),
        vec![Switch::SafeMode]
    );
    let back = revert(&s, Switch::SafeMode, now() + Duration::minutes(121));
    assert!(back.safe_mode.enabled, "back towards safety");
    assert_eq!(back.version, s.version + 1);
    assert_eq!(back.safe_mode.changed_by.as_deref(), Some(SYSTEM));
    assert_eq!(
        back.safe_mode.reason.as_deref(),
        Some("reverted: the change by alice at 2026-11-26 14:02 UTC ended")
    );
    assert_eq!(back.safe_mode.ends_at, None);
    assert!(due(&back, now() + Duration::days(9)).is_empty(), "once");
    assert_eq!(
        back.automation_enabled, s.automation_enabled,
        "the other untouched"
    );
}

#[test]
fn a_newer_change_of_the_switch_voids_the_timer_and_says_so() {
    let s = safe_mode_off_for(60);
    assert_eq!(
        voids(&s, Switch::SafeMode).as_deref(),
        Some("ends the timed change by alice, which was to end at 2026-11-26 15:02 UTC: it will not revert")
    );
    assert_eq!(voids(&s, Switch::AutomationEnabled), None);
    let on = plan(
        &s,
        &timed(Switch::SafeMode, true, 1, None),
        "r",
        "bob",
        now(),
    )
    .unwrap();
    assert!(
        due(&on, now() + Duration::days(1)).is_empty(),
        "no timer left"
    );
    // A change of the other switch leaves the timer running.
    let other = plan(
        &s,
        &timed(Switch::AutomationEnabled, true, 1, None),
        "r",
        "bob",
        now(),
    )
    .unwrap();
    assert_eq!(
        due(&other, now() + Duration::minutes(60)),
        vec![Switch::SafeMode]
    );
}

#[test]
fn only_the_risky_direction_is_timed_and_within_a_minute_and_a_week() {
    let towards_safety = timed(Switch::SafeMode, true, 0, Some(Ends::After(60)));
    assert_eq!(validate(&towards_safety).unwrap_err().field(), Some(FIELD));
    let base = KillSwitches::safe_defaults();
    for (ends, field) in [
        (Ends::After(0), FIELD),
        (Ends::After(MAX_MINUTES + 1), FIELD),
        (Ends::At(now()), FIELD_AT),
        (Ends::At(now() + Duration::days(8)), FIELD_AT),
    ] {
        let req = timed(Switch::SafeMode, false, 0, Some(ends));
        assert_eq!(
            plan(&base, &req, "r", "a", now()).unwrap_err().field(),
            Some(field),
            "{ends:?}"
        );
    }
    let at = now() + Duration::hours(4);
    let req = timed(Switch::AutomationEnabled, true, 0, Some(Ends::At(at)));
    let s = plan(&base, &req, "r", "a", now()).unwrap();
    assert_eq!(
        s.automation_enabled.ends_at,
        Some(crate::server::clock::iso(at))
    );
}

#[test]
fn the_form_and_the_api_say_how_long() {
    assert_eq!(Ends::from_form(None).unwrap(), None);
    assert_eq!(Ends::from_form(Some("")).unwrap(), None);
    assert_eq!(
        Ends::from_form(Some("120")).unwrap(),
        Some(Ends::After(120))
    );
    assert_eq!(
        Ends::from_form(Some("2h")).unwrap_err().field(),
        Some(FIELD)
    );
    assert_eq!(
        Ends::from_api(None, Some("2026-11-26T18:00:00+01:00")).unwrap(),
        Some(Ends::At(
            Utc.with_ymd_and_hms(2026, 11, 26, 17, 0, 0).unwrap()
        ))
    );
    assert_eq!(
        Ends::from_api(Some(5), Some("2026-11-26T18:00:00Z"))
            .unwrap_err()
            .field(),
        Some(FIELD_AT)
    );
    assert_eq!(
        Ends::from_api(None, Some("18:00")).unwrap_err().field(),
        Some(FIELD_AT)
    );
}

#[test]
fn the_time_left_reads_as_a_countdown() {
    let end = "2026-11-26T16:02:00Z";
    assert_eq!(left(end, now()), "2 h 0 min left");
    assert_eq!(left(end, now() + Duration::minutes(61)), "59 min left");
    assert_eq!(
        left(end, now() + Duration::minutes(120)),
        "under a minute left"
    );
}
