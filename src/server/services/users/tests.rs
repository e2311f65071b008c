use super::*;

fn user(name: &str, role: Role, disabled: bool) -> UserItem {
    let now = Utc::now();
    UserItem {
        name: name.into(),
        role,
        password_hash: String::new(),
        disabled,
        disabled_reason: None,
        created_at: now,
        last_login_at: None,
        password_changed_at: now,
        expires_at: (now + Duration::days(1)).timestamp(),
        admin_since: None,
    }
}

#[test]
fn the_last_active_admin_cannot_be_removed() {
    let now = Utc::now();
    let users = vec![
        user("a", Role::Admin, false),
        user("b", Role::Admin, true),
        user("c", Role::Viewer, false),
    ];
    assert!(
        removes_last_admin(&users, "a", false, now),
        "b is disabled, so a is the last"
    );
    assert!(!removes_last_admin(&users, "a", true, now));
    assert!(
        !removes_last_admin(&users, "c", false, now),
        "c is no admin"
    );
    let two = vec![user("a", Role::Admin, false), user("b", Role::Admin, false)];
    assert!(!removes_last_admin(&two, "a", false, now));
}

#[test]
fn demoting_or_disabling_an_admin_leaves_them_no_admin() {
    let now = Utc::now();
    let admin = user("a", Role::Admin, false);
    let still = |c: Change| plan_change(&admin, &c, "r", None, now).still_admin;
    assert!(!still(Change::SetRole(Role::Viewer)));
    assert!(!still(Change::Disable));
    assert!(still(Change::SetRole(Role::Admin)));
    assert!(still(Change::Enable));
    assert!(still(Change::ResetPassword("x".into())));
}

/// The audit payloads read exactly as they did when they were written as JSON maps.
#[test]
fn user_records_keep_their_stored_form() {
    let now = Utc::now();
    let target = user("ann", Role::Operator, false);
    let text = |c: Change| {
        serde_json::to_string(&plan_change(&target, &c, "why", Some("h"), now).record).unwrap()
    };
    let old = |v: serde_json::Value| v.to_string();
    assert_eq!(
        serde_json::to_string(&UserRecord::added("ann", Role::Admin)).unwrap(),
        old(serde_json::json!({"user": "ann", "change": "add", "role": Role::Admin}))
    );
    assert_eq!(
        text(Change::SetRole(Role::Admin)),
        old(
            serde_json::json!({"user": "ann", "change": "set_role", "from": Role::Operator, "to": Role::Admin, "reason": "why"})
        )
    );
    for (change, name) in [
        (Change::Disable, "disable"),
        (Change::Enable, "enable"),
        (Change::ResetPassword("p".into()), "reset_password"),
    ] {
        assert_eq!(
            text(change),
            old(serde_json::json!({"user": "ann", "change": name, "reason": "why"}))
        );
    }
}
