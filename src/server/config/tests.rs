//! The settings: defaults, file, environment, and the errors that name the setting.

use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_are_valid_dev_with_embedded_dynamodb() {
    let c = Config::from_parts(None, &env(&[]), "t".into()).unwrap();
    assert_eq!(c.env, Environment::Dev);
    assert!(c.wants_embedded_dynamodb());
    assert_eq!(c.ttl.audit_days, 60);
}

#[test]
fn environment_overrides_file() {
    let file = "[app]\nenvironment = \"staging\"\n[ttl]\naudit_days = 10\n[idempotency]\nsecret = \"0123456789abcdef0123456789abcdef\"\n[auth]\ntrusted_proxies = \"10.0.0.0/16\"\n";
    let c = Config::from_parts(
        Some(file),
        &env(&[("OPS_TTL_AUDIT_DAYS", "20")]),
        "t".into(),
    )
    .unwrap();
    assert_eq!(c.env, Environment::Staging);
    assert_eq!(c.ttl.audit_days, 20);
    assert!(!c.wants_embedded_dynamodb());
    let c = Config::from_parts(
        Some(file),
        &env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", &"s".repeat(32))]),
        "t".into(),
    )
    .unwrap();
    assert_eq!(c.env, Environment::Prod);
}

#[test]
fn outside_dev_the_trusted_proxies_must_be_said() {
    // Behind a load balancer, unset, every client would share its address: one guesser
    // would lock every sign-in. So staging and prod refuse to start without them.
    let secret = "s".repeat(32);
    let err = Config::from_parts(
        None,
        &env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", &secret)]),
        "t".into(),
    )
    .unwrap_err();
    assert_eq!(err.key, "auth.trusted_proxies");
    for said in ["none", "10.0.0.0/16, 10.1.0.0/16"] {
        let c = Config::from_parts(
            None,
            &env(&[
                ("OPS_ENV", "prod"),
                ("IDEMPOTENCY_SECRET", &secret),
                ("OPS_AUTH_TRUSTED_PROXIES", said),
            ]),
            "t".into(),
        )
        .unwrap();
        assert_eq!(c.auth.proxies(), if said == "none" { "" } else { said });
    }
    // In dev, unset means no proxy.
    let c = Config::from_parts(None, &env(&[]), "t".into()).unwrap();
    assert_eq!(c.auth.proxies(), "");
}

#[test]
fn bad_settings_are_named() {
    let err = Config::from_parts(None, &env(&[("OPS_ENV", "production")]), "t".into()).unwrap_err();
    assert_eq!(err.key, "app.environment");
    assert!(err.to_string().contains("production"), "{err}");

    let err =
        Config::from_parts(Some("[ttl]\naudit_days = 0\n"), &env(&[]), "t".into()).unwrap_err();
    assert_eq!(err.key, "ttl.audit_days");

    let err = Config::from_parts(Some("[dynamodb]\nendpont = \"x\"\n"), &env(&[]), "t".into())
        .unwrap_err();
    assert_eq!(err.key, "dynamodb.endpont");
    assert!(err.to_string().contains("unknown setting"));

    let err =
        Config::from_parts(None, &env(&[("OPS_TTL_AUDIT_DAYS", "ten")]), "t".into()).unwrap_err();
    assert_eq!(err.key, "ttl.audit_days");

    let err = Config::from_parts(
        None,
        &env(&[("DYNAMODB_ENDPOINT", "localhost:8000")]),
        "t".into(),
    )
    .unwrap_err();
    assert_eq!(err.key, "dynamodb.endpoint");

    let err =
        Config::from_parts(Some("[app]\nsite_addr = 3000\n"), &env(&[]), "t".into()).unwrap_err();
    assert_eq!(err.key, "app.site_addr");

    // A burst too small for the rate would put more than 750 sends a second on an item.
    let burst = |b: &str| {
        let pairs = [
            ("OPS_EVENTS_RECEIVER_RATE", "6000"),
            ("OPS_EVENTS_RECEIVER_BURST", b),
        ];
        Config::from_parts(None, &env(&pairs), "t".into())
    };
    let err = burst("7").unwrap_err();
    assert_eq!(err.key, "events.receiver_burst");
    assert!(err.to_string().contains("at least 8"), "{err}");
    assert!(burst("8").is_ok() && burst("0").is_ok());
}

#[test]
fn idempotency_secret_is_required_outside_dev_and_never_short() {
    let err = Config::from_parts(None, &env(&[("OPS_ENV", "staging")]), "t".into()).unwrap_err();
    assert_eq!(err.key, "idempotency.secret");
    assert!(err.to_string().contains("IDEMPOTENCY_SECRET"), "{err}");

    let short = env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", "too-short")]);
    let err = Config::from_parts(None, &short, "t".into()).unwrap_err();
    assert!(err.to_string().contains("at least 32"), "{err}");

    let long = "k".repeat(32);
    let ok = env(&[
        ("OPS_ENV", "prod"),
        ("IDEMPOTENCY_SECRET", &long),
        ("OPS_AUTH_TRUSTED_PROXIES", "none"),
    ]);
    assert_eq!(
        Config::from_parts(None, &ok, "t".into())
            .unwrap()
            .idempotency
            .secret,
        Secret::new(long)
    );
    // dev may leave it empty: one is generated and kept under the data directory.
    assert!(Config::from_parts(None, &env(&[]), "t".into()).is_ok());
}

#[test]
fn scopes_override_the_defaults() {
    let file = "[idempotency]\nstale_seconds = 60\n\n[idempotency.scopes.\"events.ingest\"]\nstale_seconds = 30\nalert_failure_max_pct = 2.5\n";
    let c = Config::from_parts(Some(file), &env(&[]), "t".into()).unwrap();
    let p = c.idempotency.policy("events.ingest");
    assert_eq!(
        (p.stale_seconds, p.alert_failure_max_pct, p.ttl_hours),
        (30, 2.5, 24)
    );
    assert_eq!(c.idempotency.policy("other").stale_seconds, 60);

    let bad = "[idempotency.scopes.x]\nstale_secs = 3\n";
    assert!(Config::from_parts(Some(bad), &env(&[]), "t".into()).is_err());
    let bad = "[idempotency.scopes.x]\nstale_seconds = 0\n";
    let err = Config::from_parts(Some(bad), &env(&[]), "t".into()).unwrap_err();
    assert_eq!(err.key, "idempotency.scopes.x.stale_seconds");
    // In staging and prod a started key goes stale only after the request deadline, by
    // default and per scope; dev allows it (the chaos run's 3 s makes takeovers happen).
    let staging = "[app]\nenvironment = \"staging\"\n[auth]\ntrusted_proxies = \"10.0.0.0/16\"\n[idempotency]\nsecret = \"0123456789abcdef0123456789abcdef\"\n";
    let with = |more: &str| format!("{staging}{more}");
    let short = with("stale_seconds = 20\n");
    let err = Config::from_parts(Some(&short), &env(&[]), "t".into()).unwrap_err();
    assert_eq!(err.key, "idempotency.stale_seconds");
    assert!(err.to_string().contains("request_deadline_ms"), "{err}");
    let short = with(
        "[operations]\nrequest_deadline_ms = 5000\n[idempotency.scopes.x]\nstale_seconds = 5\n",
    );
    let err = Config::from_parts(Some(&short), &env(&[]), "t".into()).unwrap_err();
    assert_eq!(err.key, "idempotency.scopes.x.stale_seconds");
    let fits = with(
        "[operations]\nrequest_deadline_ms = 5000\n[idempotency.scopes.x]\nstale_seconds = 6\n",
    );
    Config::from_parts(Some(&fits), &env(&[]), "t".into()).unwrap();
    let dev = "[idempotency]\nstale_seconds = 3\n";
    Config::from_parts(Some(dev), &env(&[]), "t".into()).unwrap();
}

#[test]
fn the_settings_file_shows_the_defaults_the_code_has() {
    // Every `# key = value` line of Leptos.toml shows a default: it must be the code's.
    let file = include_str!("../../../Leptos.toml");
    let defaults = toml::Table::try_from(Settings::default()).unwrap();
    let mut section = String::new();
    let mut checked = 0;
    for line in file.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        let Some(commented) = line.strip_prefix("# ") else {
            continue;
        };
        // An example section (`# [idempotency.scopes."…"]`): its lines are not defaults.
        if commented.starts_with('[') {
            section.clear();
            continue;
        }
        let Ok(parsed) = toml::from_str::<toml::Table>(commented) else {
            continue;
        };
        let Some((key, shown)) = parsed.into_iter().next() else {
            continue;
        };
        let Some(toml::Value::Table(sec)) = defaults.get(&section) else {
            continue;
        };
        if let Some(code) = sec.get(&key) {
            assert_eq!(
                &shown, code,
                "Leptos.toml shows {section}.{key} = {shown}, the code's default is {code}"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 30,
        "only {checked} defaults found in Leptos.toml"
    );
}

#[test]
fn a_moved_setting_is_refused_with_its_new_name() {
    let file = "[operations]\nalert_webhook_url = \"https://hooks.example/x\"\n";
    let err = Config::from_parts(Some(file), &BTreeMap::new(), "t".into()).unwrap_err();
    assert_eq!(err.key, "operations.alert_webhook_url");
    assert!(
        err.message.contains("alerts.webhook_url"),
        "{}",
        err.message
    );
    let env = BTreeMap::from([(
        "OPS_OPERATIONS_ALERT_CHECK_SECONDS".to_string(),
        "5".to_string(),
    )]);
    let err = Config::from_parts(None, &env, "t".into()).unwrap_err();
    assert!(
        err.message.contains("OPS_ALERTS_CHECK_SECONDS"),
        "{}",
        err.message
    );
    let env = BTreeMap::from([("OPS_ALERTS_CHECK_SECONDS".to_string(), "5".to_string())]);
    assert_eq!(
        Config::from_parts(None, &env, "t".into())
            .unwrap()
            .alerts
            .check_seconds,
        5
    );
}

#[test]
fn approvals_follow_the_environment_unless_set_and_name_real_users() {
    let dev = Config::from_parts(None, &env(&[]), "t".into()).unwrap();
    assert_eq!(dev.switches.require_approval, Some(false));
    let prod = env(&[("OPS_ENV", "prod"), ("IDEMPOTENCY_SECRET", &"s".repeat(32))]);
    let file = "[auth]\ntrusted_proxies = \"10.0.0.0/16\"\n";
    let c = Config::from_parts(Some(file), &prod, "t".into()).unwrap();
    assert_eq!(c.switches.require_approval, Some(true));
    let mut off = prod.clone();
    off.insert("OPS_SWITCHES_REQUIRE_APPROVAL".into(), "false".into());
    let c = Config::from_parts(Some(file), &off, "t".into()).unwrap();
    assert_eq!(c.switches.require_approval, Some(false));
    let c = Config::from_parts(
        None,
        &env(&[("OPS_SWITCHES_REQUIRE_APPROVAL", "true")]),
        "t".into(),
    )
    .unwrap();
    assert_eq!(c.switches.require_approval, Some(true));
    for bad in ["Erin", "erin, bob smith"] {
        let err = Config::from_parts(
            None,
            &env(&[("OPS_SWITCHES_EMERGENCY_ADMINS", bad)]),
            "t".into(),
        )
        .unwrap_err();
        assert_eq!(err.key, "switches.emergency_admins", "{bad}");
    }
    let c = Config::from_parts(
        None,
        &env(&[("OPS_SWITCHES_EMERGENCY_ADMINS", "erin, bob")]),
        "t".into(),
    )
    .unwrap();
    let policy = crate::server::services::kill_switches::ApprovalPolicy::from(&c.switches);
    assert_eq!(policy.emergency_admins, ["erin", "bob"]);
}
