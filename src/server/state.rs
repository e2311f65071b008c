use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::accounts::AccountTtls;
use crate::server::domain::conversations::reference::Refs;
use crate::server::domain::events::ingest::Ingest;
use crate::server::domain::idempotency::{Engine, Secret};
use crate::server::domain::inbox::Inbox;
use crate::server::domain::measurements::Measurements;
use crate::server::store::Store;

/// Everything a request handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub leptos: LeptosOptions,
    pub store: Store,
    pub config: Arc<Config>,
    pub clock: Clock,
    /// The idempotency engine every write path goes through.
    pub idempotency: Engine,
    /// The helpdesk event pipeline (design doc 1).
    pub ingest: Ingest,
    /// Opaque conversation links (no phone or email in URLs).
    pub refs: Refs,
    /// Publishing, feeds and reads (design doc 3).
    pub inbox: Inbox,
    /// Idempotent, ordered measurements (design doc 5).
    pub measurements: Measurements,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

impl AppState {
    pub fn new(config: Config, store: Store, clock: Clock, secret: Secret) -> Self {
        let leptos = LeptosOptions::builder()
            .output_name("ops-console")
            .site_root(std::env::var("LEPTOS_SITE_ROOT").unwrap_or_else(|_| "target/site".into()))
            .site_pkg_dir(std::env::var("LEPTOS_SITE_PKG_DIR").unwrap_or_else(|_| "pkg".into()))
            .site_addr(config.site_addr)
            .env(leptos::config::Env::PROD)
            .build();
        let idempotency = Engine::new(
            store.clone(),
            secret,
            clock.clone(),
            config.idempotency.clone(),
        );
        let refs = Refs::new(&idempotency);
        let inbox = Inbox::new(store.clone(), config.ttl.settings_days);
        let measurements = Measurements::new(store.clone(), config.measurements.clone());
        let config = Arc::new(config);
        // `serve` checks the webhook settings before it gets here, with a readable error.
        let ingest = Ingest::new(store.clone(), clock.clone(), config.clone())
            .unwrap_or_else(|e| panic!("invalid events settings: {e}"));
        AppState {
            leptos,
            idempotency,
            ingest,
            refs,
            inbox,
            measurements,
            store,
            config,
            clock,
        }
    }

    pub fn account_ttls(&self) -> AccountTtls {
        AccountTtls {
            user_inactive_days: self.config.ttl.user_inactive_days,
            audit_days: self.config.ttl.audit_days,
            settings_days: self.config.ttl.settings_days,
        }
    }
}
