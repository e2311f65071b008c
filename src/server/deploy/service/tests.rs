//! The stack against what the console and its image read: the container's settings load
//! as the console loads them, the ports and the health path agree with the router and the
//! Dockerfile, and the tables and the task's policy are the one specification's.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{template, CONTAINER, PORT};
use crate::server::config::{Config, Environment};
use crate::server::deploy::cloudformation::table_id;
use crate::server::deploy::iam;
use crate::server::http::HEALTH_PATH;
use crate::server::store::schema::ALL;
use crate::server::store::TableNames;
use crate::server::telemetry::traces;

const BALANCER_CIDRS: &str = "10.20.1.0/24, 10.20.2.0/24";
const WEBHOOK_URL: &str = "https://receiver.example.com/hooks";
// The Standard Webhooks specification's example secret.
const WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn repo_file(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A value as the stack resolves it, with every condition true.
fn resolve(v: &Value) -> Option<String> {
    if let Some(s) = v.as_str() {
        return Some(s.to_string());
    }
    if let Some(join) = v.get("Fn::Join") {
        assert_eq!(join[1], json!({"Ref": "LoadBalancerCidrs"}), "{v}");
        return Some(BALANCER_CIDRS.into());
    }
    if let Some(sub) = v.get("Fn::Sub").and_then(Value::as_str) {
        // A key of the receiver's secret (its JSON: url and secret).
        return match sub {
            "${WebhookSecretArn}:url::" => Some(WEBHOOK_URL.into()),
            "${WebhookSecretArn}:secret::" => Some(WEBHOOK_SECRET.into()),
            _ => None,
        };
    }
    match v.get("Ref").and_then(Value::as_str) {
        Some("AWS::Region") => Some("eu-west-1".into()),
        Some("IdempotencySecret") => Some("s".repeat(64)),
        Some("TracesEndpoint") => Some("http://localhost:4318".into()),
        _ => None,
    }
}

/// `(name, value)` of a container's `Environment` or `Secrets` list.
fn pairs(list: &Value, value_key: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in list.as_array().expect("a list") {
        let entry = entry.get("Fn::If").map_or(entry, |branches| &branches[1]);
        let name = entry["Name"].as_str().expect("a name").to_string();
        let value = resolve(&entry[value_key]).unwrap_or_else(|| panic!("{name}: {entry}"));
        out.push((name, value));
    }
    out
}

fn container(t: &Value) -> &Value {
    &t["Resources"]["TaskDefinition"]["Properties"]["ContainerDefinitions"][0]
}

#[test]
fn the_container_runs_with_settings_the_console_accepts() {
    let leptos_toml = repo_file("Leptos.toml");
    for env in [Environment::Staging, Environment::Prod] {
        let t = template(&TableNames::new("team-", env.as_str()), env);
        let c = container(&t);
        let plain = pairs(&c["Environment"], "Value");
        let secret = pairs(&c["Secrets"], "ValueFrom");
        for (name, _) in &plain {
            let sensitive = ["SECRET", "PASSWORD", "TOKEN"]
                .iter()
                .any(|w| name.contains(w));
            assert!(!sensitive, "{name} is a plain environment variable");
        }
        let names: Vec<&str> = secret.iter().map(|(n, _)| n.as_str()).collect();
        // The receiver's URL can hold a token: a secret too.
        let expected = [
            "IDEMPOTENCY_SECRET",
            "OPS_EVENTS_WEBHOOK_URL",
            "OPS_EVENTS_WEBHOOK_SECRET",
        ];
        assert_eq!(names, expected);
        let vars: BTreeMap<String, String> = plain.into_iter().chain(secret).collect();
        // The image runs the console with its copy of Leptos.toml (the Dockerfile's OPS_CONFIG).
        let config = Config::from_parts(Some(&leptos_toml), &vars, "stack".into())
            .unwrap_or_else(|e| panic!("{env}: the console refuses the stack's settings: {e}"));
        assert_eq!(config.env, env);
        assert_eq!(config.site_addr.port(), PORT);
        assert!(
            config.site_addr.ip().is_unspecified(),
            "{}",
            config.site_addr
        );
        assert!(!config.wants_embedded_dynamodb());
        assert_eq!(config.dynamodb.table_prefix, "team-");
        assert_eq!(config.auth.proxies(), BALANCER_CIDRS);
        assert_eq!(config.events.webhook_url, WEBHOOK_URL);
        assert_eq!(config.idempotency.secret.expose().len(), 64);
        // Traces go where the parameter says, by the variable the console reads.
        assert_eq!(
            vars.get(traces::ENDPOINT_VAR).map(String::as_str),
            Some("http://localhost:4318")
        );
        // The generated secret is long enough for the console's check.
        let generated = &t["Resources"]["IdempotencySecret"]["Properties"]["GenerateSecretString"];
        assert!(generated["PasswordLength"].as_u64().unwrap() >= 32);
    }
}

#[test]
fn the_load_balancer_checks_the_consoles_health_route_on_its_port() {
    let t = template(&TableNames::new("", "prod"), Environment::Prod);
    let group = &t["Resources"]["TargetGroup"]["Properties"];
    assert_eq!(group["HealthCheckPath"], HEALTH_PATH);
    assert_eq!(group["Port"], PORT);
    let c = container(&t);
    assert_eq!(c["Name"], CONTAINER);
    assert_eq!(c["PortMappings"][0]["ContainerPort"], PORT);
    let attached = &t["Resources"]["Service"]["Properties"]["LoadBalancers"][0];
    assert_eq!(attached["ContainerName"], CONTAINER);
    assert_eq!(attached["ContainerPort"], PORT);
    // From outside, the load balancer answers the health and metrics paths itself.
    let rule = &t["Resources"]["InternalPathsListenerRule"]["Properties"];
    let paths = &rule["Conditions"][0]["PathPatternConfig"]["Values"];
    assert_eq!(*paths, json!([HEALTH_PATH, "/readyz", "/metrics"]));
    assert_eq!(
        rule["Actions"][0]["FixedResponseConfig"]["StatusCode"],
        "404"
    );
    // A scraper inside the VPC reaches the metrics address, it alone, when it is named.
    let scraper = &t["Resources"]["TaskIngressFromMetricsScraper"];
    assert_eq!(scraper["Condition"], "HasMetricsScraper");
    assert_eq!(scraper["Properties"]["FromPort"], super::METRICS_PORT);
    assert_eq!(
        scraper["Properties"]["SourceSecurityGroupId"]["Ref"],
        "MetricsScraperSecurityGroupId"
    );
    let listen = pairs(&c["Environment"], "Value")
        .into_iter()
        .find(|(k, _)| k == "OPS_OPERATIONS_METRICS_LISTEN")
        .expect("the metrics address when a scraper is named");
    assert_eq!(listen.1, format!("0.0.0.0:{}", super::METRICS_PORT));
    // A slow request is answered by the console (503 at its deadline) before the load
    // balancer would drop it or a leaving task is stopped.
    let attributes = &t["Resources"]["LoadBalancer"]["Properties"]["LoadBalancerAttributes"];
    let idle = attributes
        .as_array()
        .expect("a list")
        .iter()
        .find(|a| a["Key"] == "idle_timeout.timeout_seconds")
        .expect("an idle timeout");
    let idle: i64 = idle["Value"].as_str().unwrap().parse().unwrap();
    let deadline = crate::server::config::OperationsSection::default().request_deadline_ms;
    assert!(deadline <= crate::server::config::MAX_REQUEST_DEADLINE_MS);
    assert!(crate::server::config::MAX_REQUEST_DEADLINE_MS < idle * 1000);
    // The image: the same port, health path and settings file.
    let dockerfile = repo_file("Dockerfile");
    for line in [
        format!("EXPOSE {PORT}"),
        format!("http://127.0.0.1:{PORT}{HEALTH_PATH}"),
        format!("OPS_APP_SITE_ADDR=0.0.0.0:{PORT}"),
        "COPY --from=build /src/Leptos.toml /app/Leptos.toml".into(),
        "OPS_CONFIG=/app/Leptos.toml".into(),
    ] {
        assert!(dockerfile.contains(&line), "the Dockerfile lacks {line:?}");
    }
}

#[test]
fn every_table_and_the_tasks_policy_come_from_the_one_specification() {
    let names = TableNames::new("", "prod");
    let t = template(&names, Environment::Prod);
    for spec in ALL {
        let id = table_id(spec);
        let table = &t["Resources"][&id];
        assert_eq!(table["Properties"]["TableName"], names.of(spec.base));
        assert_eq!(table["DeletionPolicy"], "RetainExceptOnCreate", "{id}");
        assert_eq!(table["UpdateReplacePolicy"], "Retain", "{id}");
        assert_eq!(
            t["Outputs"][format!("{id}Name")]["Value"],
            json!({"Ref": id})
        );
    }
    // Every index has its own throttle alarm, on its own dimension: the table's leave
    // the indexes out.
    for spec in ALL {
        for index in spec.gsis {
            let id = format!(
                "Alarm{}{}Throttles",
                table_id(spec),
                crate::server::deploy::pascal(index.name)
            );
            let metrics = &t["Resources"][&id]["Properties"]["Metrics"];
            assert_eq!(
                metrics[1]["MetricStat"]["Metric"]["Dimensions"][1],
                json!({"Name": "GlobalSecondaryIndexName", "Value": index.name}),
                "{id}"
            );
        }
        let table = &t["Resources"][format!("Alarm{}Throttles", table_id(spec))];
        let metrics = table["Properties"]["Metrics"].as_array().unwrap();
        assert!(metrics.len() <= 10);
        assert!(metrics
            .iter()
            .any(|m| m["MetricStat"]["Metric"]["MetricName"] == "ThrottledRequests"));
    }
    let mut role =
        t["Resources"]["TaskRole"]["Properties"]["Policies"][0]["PolicyDocument"].clone();
    substitute(&mut role);
    let expected = iam::policy(&names, "eu-west-1", "123456789012", iam::Role::Console);
    assert_eq!(role, expected);
    assert_eq!(
        t["Resources"]["IdempotencySecret"]["DeletionPolicy"],
        "RetainExceptOnCreate"
    );
}

/// Every `Fn::Sub` in `v` as the stack in eu-west-1 of account 123456789012 makes it.
fn substitute(v: &mut Value) {
    if let Some(text) = v.get("Fn::Sub").and_then(Value::as_str) {
        *v = json!(text
            .replace("${AWS::Region}", "eu-west-1")
            .replace("${AWS::AccountId}", "123456789012"));
        return;
    }
    match v {
        Value::Array(items) => items.iter_mut().for_each(substitute),
        Value::Object(map) => map.values_mut().for_each(substitute),
        _ => {}
    }
}

#[test]
fn each_skipped_check_says_why() {
    let t = template(&TableNames::new("", "staging"), Environment::Staging);
    let mut skipped = 0;
    for (id, resource) in t["Resources"].as_object().unwrap() {
        for skip in resource["Metadata"]["checkov"]["skip"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let why = skip["comment"].as_str().unwrap_or_default();
            assert!(why.len() > 20, "{id}: {skip}");
            skipped += 1;
        }
    }
    assert!(skipped > 0, "no skip to check");
}

/// Every table can be warmed up for a launch at full traffic and capped in cost, by
/// parameters that leave AWS's own settings when unset (0), in both templates.
#[test]
fn every_table_takes_the_throughput_parameters() {
    let names = TableNames::new("", "prod");
    for t in [
        template(&names, Environment::Prod),
        crate::server::deploy::cloudformation::template(&names, Environment::Prod),
    ] {
        for p in [
            "TableWarmWriteUnitsPerSecond",
            "TableWarmReadUnitsPerSecond",
            "TableMaxWriteRequestUnits",
            "TableMaxReadRequestUnits",
        ] {
            assert_eq!(t["Parameters"][p]["Default"], 0, "{p}");
        }
        let tables = t["Resources"]
            .as_object()
            .unwrap()
            .values()
            .filter(|r| r["Type"] == "AWS::DynamoDB::Table");
        let mut n = 0;
        for table in tables {
            let props = &table["Properties"];
            let warm = props["WarmThroughput"].to_string();
            assert!(warm.contains("TableWarmWriteUnitsPerSecond"), "{warm}");
            let cap = props["OnDemandThroughput"].to_string();
            assert!(cap.contains("TableMaxWriteRequestUnits"), "{cap}");
            n += 1;
        }
        assert_eq!(n, crate::server::store::schema::ALL.len());
    }
}

/// The stream alarms count log lines by their `alert` field where the JSON logs put an
/// event's fields (`LOG_FORMAT=json`, `telemetry::init`): `$.fields.alert`.
#[test]
fn the_stream_alarms_read_the_alert_field_where_the_json_logs_put_it() {
    use crate::server::store::inbox::stream::{BEHIND_ALERT, TRIMMED_ALERT};
    use tracing_subscriber::layer::SubscriberExt;
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let layer = tracing_subscriber::fmt::layer()
        .json()
        .with_writer(move || writer.clone());
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        tracing::warn!(alert = BEHIND_ALERT, "behind");
    });
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let logged: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(logged["fields"]["alert"], BEHIND_ALERT, "{text}");

    let t = template(&TableNames::new("", "prod"), Environment::Prod);
    for (metric, alert) in [
        ("InboxStreamBehind", BEHIND_ALERT),
        ("InboxStreamTrimmed", TRIMMED_ALERT),
    ] {
        let filter = &t["Resources"][format!("{metric}LogMetric")]["Properties"];
        assert_eq!(
            filter["FilterPattern"],
            format!("{{ $.fields.alert = \"{alert}\" }}")
        );
        let alarm = &t["Resources"][format!("Alarm{metric}")]["Properties"];
        assert_eq!(alarm["MetricName"], metric);
    }
}
