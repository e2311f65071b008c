use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use axum::body::Body;
use axum::http::{header, Request};
use ops_console::server::config::Config;
use ops_console::server::ids::random_hex;
use ops_console::server::startup::{self, Database};
use ops_console::server::store::schema::{self, Outcome};
use ops_console::server::store::Store;

use crate::helpers::{spawn_app, spawn_app_at};
use crate::idempotency::{turn_off, writer_key};

#[tokio::test]
async fn bootstrap_is_idempotent_and_creates_every_table_with_ttl() {
    let app = spawn_app().await; // bootstraps once
    let again = schema::bootstrap(&app.store).await.unwrap();
    assert_eq!(again.len(), schema::ALL.len());
    for (table, outcome) in &again {
        assert_eq!(
            outcome,
            &Outcome::Unchanged,
            "{table} changed on the second run"
        );
        assert!(table.ends_with("-dev"), "{table} is environment-scoped");
    }
    for spec in schema::ALL {
        let name = app.store.table(spec.base);
        assert_eq!(
            schema::ttl_attribute(&app.store, &name)
                .await
                .unwrap()
                .as_deref(),
            Some(spec.ttl_attr),
            "TTL on {name}"
        );
        let indexes = schema::index_names(&app.store, &name).await.unwrap();
        for gsi in spec.gsis {
            assert!(
                indexes.iter().any(|i| i == gsi.name),
                "{name} has {}",
                gsi.name
            );
        }
    }
    for base in [
        "rp_mw_idempotency",
        "rp_mw_conversation_state",
        "rp_mw_audit_actions",
        "settings",
    ] {
        assert!(
            again
                .iter()
                .any(|(t, _)| t.ends_with(&format!("{base}-dev"))),
            "{base} exists"
        );
    }
}

/// Replaces the idempotency table by one as a console from before `watch-shard-index`
/// made it: the same keys, `watch-index` and `correlation-index`, no `watch-shard-index`.
async fn make_it_a_table_from_before_the_index(store: &Store) -> String {
    let table = store.table(schema::IDEMPOTENCY_KEYS.base);
    let client = store.client();
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let attr = |name: &str, ty: ScalarAttributeType| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ty)
            .build()
            .unwrap()
    };
    let key = |name: &str, ty: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(ty)
            .build()
            .unwrap()
    };
    let watch = GlobalSecondaryIndex::builder()
        .index_name(schema::IDEMPOTENCY_WATCH_INDEX)
        .key_schema(key("watch", KeyType::Hash))
        .key_schema(key("watch_at", KeyType::Range))
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .unwrap();
    let correlation = GlobalSecondaryIndex::builder()
        .index_name(schema::IDEMPOTENCY_CORRELATION_INDEX)
        .key_schema(key("correlation_hash", KeyType::Hash))
        .key_schema(key("created_at", KeyType::Range))
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .unwrap();
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("id", KeyType::Hash))
        .attribute_definitions(attr("id", ScalarAttributeType::S))
        .attribute_definitions(attr("watch", ScalarAttributeType::S))
        .attribute_definitions(attr("watch_at", ScalarAttributeType::N))
        .attribute_definitions(attr("correlation_hash", ScalarAttributeType::S))
        .attribute_definitions(attr("created_at", ScalarAttributeType::N))
        .global_secondary_indexes(watch)
        .global_secondary_indexes(correlation)
        .send()
        .await
        .unwrap();
    client
        .update_time_to_live()
        .table_name(&table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(schema::IDEMPOTENCY_KEYS.ttl_attr)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    table
}

fn outcome_of<'a>(report: &'a [(String, Outcome)], table: &str) -> &'a Outcome {
    &report.iter().find(|(t, _)| t == table).unwrap().1
}

/// An upgrade that adds an index, as `make run` meets it: two consoles start on the new
/// version at once, against the embedded DynamoDB Local with its data on disk. That Local
/// builds an index added to a table in use only when it starts, and refuses the table
/// meanwhile (with TTL on its tables it does not build it in memory either), so the
/// console's bootstrap restarts it. On AWS the index backfills while the consoles serve.
#[tokio::test]
async fn an_upgrade_by_two_consoles_at_once_adds_a_missing_index_once_and_serves_it() {
    let dir = std::path::PathBuf::from(format!("target/test-data/embedded-{}", random_hex(4)));
    let mut config = Config::for_tests("", "unused_");
    config.data_dir = dir.clone();
    assert!(config.wants_embedded_dynamodb());
    let db = startup::connect(&config, false)
        .await
        .expect("DynamoDB Local starts");
    let app = spawn_app_at(&db.endpoint).await;
    let table = make_it_a_table_from_before_the_index(&app.store).await;

    let (a, b) = (app.store.clone(), app.store.clone());
    let first = tokio::spawn(async move { schema::bootstrap(&a).await });
    let second = tokio::spawn(async move { schema::bootstrap(&b).await });
    let reports = [
        first.await.unwrap().expect("the first console's bootstrap"),
        second
            .await
            .unwrap()
            .expect("the second console's bootstrap"),
    ];
    let index = schema::IDEMPOTENCY_WATCH_SHARD_INDEX;
    let added = Outcome::Updated(vec![format!("index {index}")]);
    assert!(
        reports.iter().any(|r| outcome_of(r, &table) == &added),
        "one of them added the index: {reports:?}"
    );
    // The other found it added, or (DynamoDB Local takes both at once) asked for it too.
    assert!(
        reports
            .iter()
            .all(|r| [&added, &Outcome::Unchanged].contains(&outcome_of(r, &table))),
        "nothing else changed on {table}: {reports:?}"
    );
    for report in &reports {
        for (t, outcome) in report.iter().filter(|(t, _)| t != &table) {
            assert_eq!(outcome, &Outcome::Unchanged, "{t} was left alone");
        }
    }
    assert!(schema::index_names(&app.store, &table)
        .await
        .unwrap()
        .iter()
        .any(|i| i == index));

    // The console's own start: the same bootstrap, then the restart the index needs.
    let mut db = Database {
        store: app.store.clone(),
        ..db
    };
    startup::bootstrap(&mut db)
        .await
        .expect("the start after the upgrade");
    assert!(schema::indexes_building(&app.store)
        .await
        .unwrap()
        .is_empty());

    // The table takes writes again, and the new index finds them.
    let key = writer_key(&app, "upgrade-bot").await;
    let req = Request::post("/api/v1/kill-switches")
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("Idempotency-Key", "after-the-upgrade")
        .header("X-Correlation-Id", "trace-upgrade-1")
        .body(Body::from(turn_off(0).to_string()))
        .unwrap();
    assert_eq!(app.send(req).await.status, 200);
    let found = app
        .state
        .idempotency
        .find_by_correlation("trace-upgrade-1")
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].scope, "http:POST /api/v1/kill-switches");
    // And the added index serves the monitoring lists.
    for which in ["stuck", "failed"] {
        let listed = app.state.idempotency.watched_keys(which, None).await;
        assert!(listed.unwrap().keys.is_empty(), "nothing to watch yet");
    }

    if let Some(local) = db.embedded.take() {
        local.stop();
    }
    let _ = std::fs::remove_dir_all(dir);
}
