use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::readiness::Readiness;
use crate::server::services::alerts::Alerts;
use crate::server::services::api_keys::ApiKeys;
use crate::server::services::audit::Audit;
use crate::server::services::conversations::reference::Refs;
use crate::server::services::conversations::Conversations;
use crate::server::services::events::Events;
use crate::server::services::idempotency::{Engine, Secret};
use crate::server::services::inbox::Inbox;
use crate::server::services::kill_switches::{self, Switches};
use crate::server::services::measurements::Measurements;
use crate::server::services::users::{UserTtls, Users};
use crate::server::store::cursor::Cursors;
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
    /// The kill switches: reads, changes with their audit record, history.
    pub kill_switches: Switches,
    /// Users, sessions and API keys.
    pub users: Users,
    /// The audit trail's reads.
    pub audit: Audit,
    pub api_keys: ApiKeys,
    /// Helpdesk events: the webhook's pipeline and the console's reads (docs/events.md).
    pub events: Events,
    /// Opaque conversation links (no phone or email in URLs).
    pub refs: Refs,
    /// Conversations: the channel processors' writes and the console's reads.
    pub conversations: Conversations,
    /// Publishing, feeds and reads (docs/inbox.md).
    pub inbox: Inbox,
    /// Idempotent, ordered measurements (docs/measurements.md).
    pub measurements: Measurements,
    /// The alert rules, judged in the background and announced once (docs/operations.md).
    pub alerts: Alerts,
    /// This console's last readiness check (`/readyz`), shared by probes for a few seconds.
    pub readiness: Arc<Readiness>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// Leptos's options: the site as cargo-leptos built it (`LEPTOS_SITE_ROOT`, default
/// `target/site`), served at the configured address.
fn leptos_options(config: &Config) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("ops-console")
        .site_root(std::env::var("LEPTOS_SITE_ROOT").unwrap_or_else(|_| "target/site".into()))
        .site_pkg_dir(std::env::var("LEPTOS_SITE_PKG_DIR").unwrap_or_else(|_| "pkg".into()))
        .site_addr(config.site_addr)
        .env(leptos::config::Env::PROD)
        .build()
}

impl AppState {
    /// The references of one answer ([`Refs::for_answer`]), once a lookup by a typed value
    /// is counted against `person` when anything the page was given (conversation ids in
    /// `conversations`, user ids in `users`) is typed rather than a reference this server
    /// made ([`Users::count_lookup`]: refused past the person's limit).
    pub async fn answer_refs(
        &self,
        person: &str,
        conversations: &[&str],
        users: &[&str],
    ) -> Result<Refs, crate::model::AppError> {
        let refs = self.refs.for_answer();
        let typed = conversations.iter().any(|g| refs.given(g).typed())
            || users.iter().any(|g| refs.given_user(g).typed());
        if typed {
            self.users.count_lookup(person).await?;
        }
        Ok(refs)
    }

    pub fn new(config: Config, store: Store, clock: Clock, secret: Secret) -> Self {
        // The metrics recorder exists before anything counts.
        crate::server::metrics::handle();
        let leptos = leptos_options(&config);
        // Every console of the environment seals page cursors under the same key, so a
        // cursor opens behind any of them.
        let store = store
            .with_cursors(Cursors::new(secret.seal("page-cursor"), clock.clone()))
            .with_due_index(config.events.due_index);
        let idempotency = Engine::new(
            store.clone(),
            secret,
            clock.clone(),
            config.idempotency.clone(),
        );
        let refs = Refs::new(&idempotency);
        let ttls = kill_switches::Ttls::from(&config.ttl);
        let switches = Switches::new(store.clone(), clock.clone(), ttls)
            .with_approvals(kill_switches::ApprovalPolicy::from(&config.switches));
        let users = Users::new(
            store.clone(),
            clock.clone(),
            UserTtls::from(&config.ttl),
            config.auth.clone(),
        )
        .with_address_key(idempotency.subkey("login-address"))
        .with_four_eyes(config.switches.require_approval.unwrap_or(true));
        let audit = Audit::new(store.clone(), clock.clone());
        let api_keys = ApiKeys::new(store.clone(), clock.clone(), &config.ttl);
        let conversations = Conversations::new(store.clone(), &config.ttl);
        let inbox = Inbox::new(store.clone(), config.ttl.settings_days);
        let measurements = Measurements::new(store.clone(), config.measurements.clone());
        let config = Arc::new(config);
        // `serve` checks the webhook settings before it gets here, with a readable error.
        let seal = idempotency.seal("receiver-secret");
        let events = Events::new(store.clone(), clock.clone(), config.clone(), seal)
            .unwrap_or_else(|e| panic!("invalid events settings: {e}"));
        let alerts = Alerts::new(
            store.clone(),
            clock.clone(),
            config.clone(),
            idempotency.clone(),
        );
        AppState {
            leptos,
            alerts,
            idempotency,
            kill_switches: switches,
            users,
            audit,
            api_keys,
            events,
            refs,
            conversations,
            inbox,
            measurements,
            store,
            config,
            clock,
            readiness: Arc::default(),
        }
    }
}
