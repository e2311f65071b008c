use ops_console::server::store::schema::{self, Outcome};

use crate::helpers::spawn_app;

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
