//! Running it: `/readyz` names drift; the deploy kit (CloudFormation template, IAM policy)
//! says what the bootstrap does, on the same tables.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::{
    BillingMode, DeleteGlobalSecondaryIndexAction, GlobalSecondaryIndexUpdate, KeySchemaElement,
};
use serde_json::Value;

use crate::helpers::{spawn_app, TestApp};
use ops_console::server::config::Environment;
use ops_console::server::deploy::{cloudformation, iam};
use ops_console::server::store::schema::{self, ALL, MW_AUDIT_ACTIONS};
use ops_console::server::store::TableNames;

fn names(app: &TestApp) -> TableNames {
    let c = &app.state.config;
    TableNames::new(&c.dynamodb.table_prefix, c.env.as_str())
}

/// `(attribute, HASH|RANGE)` in order.
fn keys_of(k: &[KeySchemaElement]) -> Vec<(String, String)> {
    k.iter()
        .map(|e| {
            (
                e.attribute_name().to_string(),
                e.key_type().as_str().to_string(),
            )
        })
        .collect()
}

fn keys_in(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["AttributeName"].as_str().unwrap().to_string(),
                k["KeyType"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// An index's projection: its type and the attributes it names, sorted.
type Projected = (String, Vec<String>);

/// An index: its name, keys and projection.
type Index = (String, Vec<(String, String)>, Projected);

/// The template's indexes of one kind.
fn indexes_in(v: &Value) -> BTreeSet<Index> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    let mut attrs: Vec<String> = i["Projection"]["NonKeyAttributes"]
                        .as_array()
                        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                        .unwrap_or_default();
                    attrs.sort();
                    (
                        i["IndexName"].as_str().unwrap().to_string(),
                        keys_in(&i["KeySchema"]),
                        (
                            i["Projection"]["ProjectionType"]
                                .as_str()
                                .unwrap()
                                .to_string(),
                            attrs,
                        ),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What DynamoDB says an index projects, as [`indexes_in`] reads the template's.
fn projected(p: Option<&aws_sdk_dynamodb::types::Projection>) -> Projected {
    let mut attrs = p
        .map(|p| p.non_key_attributes().to_vec())
        .unwrap_or_default();
    attrs.sort();
    (
        p.and_then(|p| p.projection_type())
            .map(|t| t.as_str().to_string())
            .unwrap_or_default(),
        attrs,
    )
}

#[tokio::test]
async fn the_cloudformation_template_creates_what_the_bootstrap_created() {
    let app = spawn_app().await;
    let template = cloudformation::template(&names(&app), Environment::Dev);
    let resources = template["Resources"].as_object().unwrap();
    assert_eq!(resources.len(), ALL.len());
    for (id, res) in resources {
        assert_eq!(res["Type"], "AWS::DynamoDB::Table", "{id}");
        let p = &res["Properties"];
        let name = p["TableName"].as_str().unwrap();
        assert!(name.ends_with("-dev"), "{name}");
        let desc = app
            .store
            .client()
            .describe_table()
            .table_name(name)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{name} was bootstrapped: {e:?}"))
            .table
            .unwrap();
        assert_eq!(
            keys_in(&p["KeySchema"]),
            keys_of(desc.key_schema()),
            "{name} keys"
        );
        let gsis: BTreeSet<_> = desc
            .global_secondary_indexes()
            .iter()
            .map(|g| {
                (
                    g.index_name().unwrap().to_string(),
                    keys_of(g.key_schema()),
                    projected(g.projection()),
                )
            })
            .collect();
        assert_eq!(
            indexes_in(&p["GlobalSecondaryIndexes"]),
            gsis,
            "{name} GSIs"
        );
        let lsis: BTreeSet<_> = desc
            .local_secondary_indexes()
            .iter()
            .map(|l| {
                (
                    l.index_name().unwrap().to_string(),
                    keys_of(l.key_schema()),
                    projected(l.projection()),
                )
            })
            .collect();
        assert_eq!(indexes_in(&p["LocalSecondaryIndexes"]), lsis, "{name} LSIs");
        let defined: BTreeSet<(String, String)> = desc
            .attribute_definitions()
            .iter()
            .map(|a| {
                (
                    a.attribute_name().to_string(),
                    a.attribute_type().as_str().to_string(),
                )
            })
            .collect();
        let templated: BTreeSet<(String, String)> = p["AttributeDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["AttributeName"].as_str().unwrap().to_string(),
                    a["AttributeType"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(templated, defined, "{name} attribute definitions");
        let ttl = schema::ttl_attribute(&app.store, name).await.unwrap();
        assert_eq!(
            p["TimeToLiveSpecification"]["AttributeName"].as_str(),
            ttl.as_deref(),
            "{name} TTL"
        );
        let streamed = desc
            .stream_specification()
            .is_some_and(|s| s.stream_enabled());
        assert_eq!(
            p.get("StreamSpecification").is_some(),
            streamed,
            "{name} stream"
        );
        if streamed {
            assert_eq!(
                p["StreamSpecification"]["StreamViewType"],
                desc.stream_specification()
                    .unwrap()
                    .stream_view_type()
                    .unwrap()
                    .as_str()
            );
        }
        assert_eq!(
            desc.billing_mode_summary().and_then(|b| b.billing_mode()),
            Some(&BillingMode::PayPerRequest),
            "{name} on demand"
        );
        assert_eq!(p["BillingMode"], "PAY_PER_REQUEST");
        // Dev: deletable, no point-in-time recovery.
        assert_eq!(p["DeletionProtectionEnabled"], false);
        assert_eq!(res["DeletionPolicy"], "Delete");
    }
}

#[tokio::test]
async fn prod_tables_are_protected_and_recoverable() {
    let names = TableNames::new("", "prod");
    let template = cloudformation::template(&names, Environment::Prod);
    for (id, res) in template["Resources"].as_object().unwrap() {
        let p = &res["Properties"];
        assert!(p["TableName"].as_str().unwrap().ends_with("-prod"), "{id}");
        assert_eq!(p["DeletionProtectionEnabled"], true, "{id}");
        assert_eq!(
            p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true,
            "{id}"
        );
        // A first create that failed leaves nothing in the way of the next.
        assert_eq!(res["DeletionPolicy"], "RetainExceptOnCreate", "{id}");
        assert_eq!(res["UpdateReplacePolicy"], "Retain", "{id}");
    }
}

fn statements(policy: &Value) -> Vec<(String, Vec<String>, Vec<String>)> {
    policy["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["Effect"], "Allow");
            let list = |v: &Value| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            (
                s["Sid"].as_str().unwrap().to_string(),
                list(&s["Action"]),
                list(&s["Resource"]),
            )
        })
        .collect()
}

#[test]
fn the_iam_policy_names_exactly_the_environments_tables() {
    let names = TableNames::new("", "prod");
    let arn = |base: &str| format!("arn:aws:dynamodb:eu-west-1:123456789012:table/{base}-prod");
    let console = iam::policy(&names, "eu-west-1", "123456789012", iam::Role::Console);
    let all_tables: BTreeSet<String> = ALL.iter().map(|t| arn(t.base)).collect();
    for (sid, actions, resources) in statements(&console) {
        assert!(
            !actions.iter().any(|a| a.contains('*')),
            "{sid}: no wildcard action"
        );
        for r in &resources {
            assert!(
                all_tables
                    .iter()
                    .any(|t| r == t || r.starts_with(&format!("{t}/"))),
                "{sid}: {r} is one of the tables, its indexes or its stream"
            );
            assert!(!r.contains("-dev") && !r.contains("-staging"), "{r}");
        }
        assert!(
            !actions
                .iter()
                .any(|a| a == "dynamodb:CreateTable" || a == "dynamodb:DeleteTable"),
            "the console never creates or deletes tables"
        );
        if sid == "Items" {
            let covered: BTreeSet<String> = resources
                .iter()
                .filter(|r| !r.contains("/index/"))
                .cloned()
                .collect();
            assert_eq!(covered, all_tables, "every table, and only those");
            assert!(resources.contains(&format!("{}/index/*", arn(MW_AUDIT_ACTIONS.base))));
        }
        if sid == "InboxStream" {
            assert_eq!(resources, vec![format!("{}/stream/*", arn("inbox"))]);
        }
    }
    let bootstrap = iam::policy(&names, "eu-west-1", "123456789012", iam::Role::Bootstrap);
    for (_, actions, _) in statements(&bootstrap) {
        assert!(actions.contains(&"dynamodb:CreateTable".to_string()));
        assert!(
            !actions
                .iter()
                .any(|a| a.ends_with("Item") || a == "dynamodb:Query" || a == "dynamodb:Scan"),
            "the bootstrap reads and writes no items: {actions:?}"
        );
    }
}

#[tokio::test]
async fn readyz_names_an_index_that_is_gone() {
    let app = spawn_app().await;
    // What differs names tables: only a `metrics:read` key (or an admin) reads it.
    let key = app.api_key(&["metrics:read"]).await;
    let ready = app.api("GET", "/readyz", &key, None).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.json()["status"], "ready");
    // Ready, there is nothing to name (and the key is not even looked up).
    assert!(ready.json().get("problems").is_none(), "{}", ready.body);

    // Someone drops an index of Table C.
    let table = app.store.table(MW_AUDIT_ACTIONS.base);
    app.store
        .client()
        .update_table()
        .table_name(&table)
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .delete(
                    DeleteGlobalSecondaryIndexAction::builder()
                        .index_name(schema::AUDIT_BY_DAY_INDEX)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    // A check answers probes for 5 s.
    app.clock.advance(chrono::Duration::seconds(6));
    let drift = app.api("GET", "/readyz", &key, None).await;
    assert_eq!(drift.status, 503, "{}", drift.body);
    assert_eq!(drift.json()["status"], "not ready");
    let problems = drift.json()["problems"].to_string();
    assert!(
        problems.contains(&table) && problems.contains(schema::AUDIT_BY_DAY_INDEX),
        "names the table and the index: {problems}"
    );
    let public = app.get("/readyz", None).await;
    assert_eq!(public.status, 503);
    assert!(
        !public.body.contains(&table),
        "the public answer names no table"
    );
    // Liveness is not readiness: DynamoDB still answers.
    assert_eq!(app.get("/healthz", None).await.status, 200);

    // Another environment's tables are not this console's business: a fresh app on its
    // own prefix is ready.
    assert_eq!(spawn_app().await.get("/readyz", None).await.status, 200);
}
