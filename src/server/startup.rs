//! Builds the router, connects to DynamoDB (starting the embedded one in dev), and serves.

use std::time::Duration;

use axum::{middleware, Router};
use leptos_axum::{generate_route_list, LeptosRoutes};

use crate::app::{shell, App};
use crate::server::clock::Clock;
use crate::server::config::{Config, Environment};
use crate::server::http::{self, middleware as mw};
use crate::server::services::idempotency::{Engine, Secret};
use crate::server::state::AppState;
use crate::server::store::Store;

use crate::server::database::endpoint_file;
pub use crate::server::database::{bootstrap, connect, Database, StartError};

/// The whole application as a router; tests drive it without a socket.
/// The pages' routes, listed once per process. Listing them renders the app with resource
/// loading suppressed by a process-wide flag, and a resource whose first poll falls in that
/// moment waits for ever (leptos issue 4773): a second listing while another router serves
/// pages (the tests build many apps, the harness several) hung page renders.
fn route_list() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

pub fn app(state: AppState) -> Router {
    let routes = route_list();
    let leptos_options = state.leptos.clone();
    Router::new()
        .merge(http::routes(&state))
        .leptos_routes(&state, routes, move || shell(leptos_options.clone()))
        // The site's files, as Leptos serves them (precompressed), answering a browser's
        // `If-Modified-Since` with a 304: a second page reuses the shell it has.
        .route_service(
            &leptos_axum::site_pkg_dir_service_route_path(&state.leptos),
            leptos_axum::site_pkg_dir_service(&state.leptos),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(middleware::from_fn(mw::server_fn_status))
        .layer(middleware::from_fn(mw::cache_headers))
        .layer(middleware::from_fn(mw::guard_pages))
        .layer(middleware::from_fn_with_state(state.clone(), mw::session))
        .layer(middleware::from_fn(mw::same_origin))
        .layer(middleware::from_fn(mw::contain_panics))
        .layer(middleware::from_fn_with_state(state.clone(), mw::deadline))
        .layer(middleware::from_fn(mw::measure))
        // Outermost: what the idempotency layer stores and replays is the answer itself;
        // only the wire is compressed (files already precompressed pass through). Brotli
        // at 9, not tower-http's 4: a page's HTML is 10 to 15% smaller for a millisecond or
        // two of the server's time (docs/page-weight.md).
        .layer(
            tower_http::compression::CompressionLayer::new()
                .quality(tower_http::CompressionLevel::Precise(9)),
        )
        // Outside everything: a method the console does not serve goes no further.
        .layer(middleware::from_fn(mw::known_methods))
        .with_state(state)
}

/// `ops-console serve`.
pub async fn serve(mut config: Config) -> Result<(), StartError> {
    crate::server::telemetry::withhold_panic_messages();
    let mut db = connect(&config, false).await?;
    let endpoint_path = endpoint_file(&config);
    if config.env == Environment::Dev {
        bootstrap(&mut db).await?;
    }
    if config.events.due_index && due_index_building(&db.store).await? {
        // Reads of it fail until AWS has built it: what is queued goes where every console
        // reads it, until this console starts again after the index is ACTIVE.
        tracing::warn!(
            "events.due_index is on but due-index is still being built: the due group is \
             written on outbox-index until this console restarts once it is ACTIVE"
        );
        config.events.due_index = false;
    }
    let clock = Clock::default();
    let secret = Secret::resolve(&config)
        .map_err(|e| StartError::Other(format!("idempotency secret: {e}")))?;
    let state = AppState::new(config, db.store.clone(), clock.clone(), secret);
    let background = spawn_background(&state, &db.store);
    if state.config.env == Environment::Dev {
        let created = state
            .users
            .ensure_first_admin()
            .await
            .map_err(|e| StartError::Other(format!("creating the first admin failed: {e}")))?;
        if let Some(password) = created {
            // Straight to the terminal, once; never through the log.
            println!("\n  First start: created user `admin` with password  {password}\n  Sign in at http://{}/login and change it (ops-console user reset-password admin).\n", state.config.site_addr);
        }
    }
    if state.config.demo_data {
        spawn_demo_seed(&state);
    }
    let metrics_server = spawn_metrics_listener(&state.config).await?;
    let addr = state.config.site_addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Bind {
            addr: addr.to_string(),
            cause: e.to_string(),
        })?;
    tracing::info!(
        env = %state.config.env,
        dynamodb = %db.endpoint,
        settings = %state.config.source,
        "ops-console listening on http://{addr}"
    );
    let state_for_shutdown = state.clone();
    // The peer's address reaches the sign-in's counters (`http::extract::ClientAddress`).
    let service = app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let result = axum::serve(listener, service)
        .with_graceful_shutdown(shutdown_signal())
        .await;
    // A write answered 503 at its deadline may still be running: it ends beside the
    // dispatcher's last round, within the same drain (inside ECS's 30 s before SIGKILL).
    tokio::join!(
        background.stop(metrics_server),
        crate::server::http::middleware::handlers_ended(DISPATCH_DRAIN),
    );
    if let Err(e) = state_for_shutdown.idempotency.flush_stats().await {
        tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "could not write the last idempotency counters");
    }
    // Last: the spans of everything above go out too.
    let _ = tokio::task::spawn_blocking(crate::server::telemetry::traces::flush).await;
    if let Some(local) = db.embedded {
        tracing::info!("stopping DynamoDB Local");
        local.stop();
        let _ = std::fs::remove_file(endpoint_path);
    }
    result.map_err(|e| StartError::Other(e.to_string()))
}

/// The work every console does beside serving, as it runs.
struct Background {
    /// Tells the dispatcher to end its round and stop.
    stopping: tokio::sync::watch::Sender<bool>,
    dispatcher: Task,
    others: Vec<Task>,
}

impl Background {
    /// The dispatcher ends the round under way (its deliveries recorded, their slots given
    /// back); one that takes longer is cut short, in flight under a lease, and another
    /// console takes it over once the lease runs out. The rest (and `more`) stop at once.
    async fn stop(self, more: Option<Task>) {
        let _ = self.stopping.send(true);
        if tokio::time::timeout(DISPATCH_DRAIN, self.dispatcher)
            .await
            .is_err()
        {
            tracing::warn!("the dispatcher's last round did not end in time; its claims run out");
        }
        for task in self.others.into_iter().chain(more) {
            task.abort();
        }
    }
}

/// How long a console shutting down waits for the dispatcher's round under way: under
/// the 30 s a container gets between `SIGTERM` and `SIGKILL` (ECS's default and the
/// service stack's `StopTimeout`).
const DISPATCH_DRAIN: std::time::Duration = std::time::Duration::from_secs(20);

type Task = tokio::task::JoinHandle<()>;

/// The work every console does beside serving (docs/architecture.md, "Background work"):
/// the dispatcher, which ends its round when told to stop, and the rest.
fn spawn_background(state: &AppState, store: &Store) -> Background {
    let mut tasks = vec![
        spawn_stats_flusher(state.idempotency.clone()),
        spawn_inbox_consumer(store.clone(), &state.config),
    ];
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let events = state.events.clone();
    let dispatcher = tokio::spawn(async move { events.run_dispatcher(stop).await });
    let alerts = state.alerts.clone();
    tasks.push(tokio::spawn(async move { alerts.run().await }));
    let (switches, alerts) = (state.kill_switches.clone(), state.alerts.clone());
    tasks.push(tokio::spawn(
        async move { switches.run_reverts(alerts).await },
    ));
    tasks.extend(spawn_reaper(store.clone(), &state.config));
    tasks.push(spawn_mender(store.clone()));
    Background {
        stopping,
        dispatcher,
        others: tasks,
    }
}

/// `/metrics` alone, without a key, on `operations.metrics_listen` (when set).
async fn spawn_metrics_listener(
    config: &Config,
) -> Result<Option<tokio::task::JoinHandle<()>>, StartError> {
    let Ok(addr) = config
        .operations
        .metrics_listen
        .parse::<std::net::SocketAddr>()
    else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Bind {
            addr: addr.to_string(),
            cause: e.to_string(),
        })?;
    tracing::info!("metrics on http://{addr}/metrics");
    let router = Router::new().route(
        "/metrics",
        axum::routing::get(crate::server::http::health::metrics_text),
    );
    Ok(Some(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::warn!(error = %e, "the metrics address stopped");
        }
    })))
}

/// Seeds the demo conversations once per data directory (a marker in the settings table
/// says it was done), in the background so the console answers at once.
fn spawn_demo_seed(state: &AppState) {
    let store = state.store.clone();
    let conversations = state.conversations.clone();
    let switches = state.kill_switches.clone();
    let now = state.clock.now();
    tokio::spawn(async move {
        match crate::server::store::kill_switches::mark_once(&store, "demo#conversations", now)
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "demo data: could not check the marker");
                return;
            }
        }
        if let Err(e) = seed_switch_automation(&switches, now).await {
            tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "demo data: the switches' automation was not set");
        }
        let plans = crate::server::seed::plan(DEMO_CONVERSATIONS, 7, now);
        match crate::server::seed::seed(&conversations, plans, |_| {}).await {
            Ok(()) => tracing::info!(
                count = DEMO_CONVERSATIONS,
                "demo data: seeded conversations (company ci-acme-001 and others)"
            ),
            Err(e) => {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "demo data: seeding stopped")
            }
        }
    });
}

const DEMO_CONVERSATIONS: usize = 200;

/// What the demo shows on the Kill switch automation page: two trips, and a change set for
/// tomorrow morning (automation on for the day shift, timed). Both switches stay in their
/// safe defaults.
async fn seed_switch_automation(
    switches: &crate::server::services::kill_switches::Switches,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), crate::model::AppError> {
    use crate::model::kill_switches::Switch;
    use crate::server::domain::kill_switches::{timers::Ends, ChangeRequest};
    switches
        .attach_trip("outbox.dead_letters", Switch::SafeMode, "demo")
        .await?;
    switches
        .attach_trip("idempotency.failure", Switch::AutomationEnabled, "demo")
        .await?;
    let req = ChangeRequest {
        switch: Switch::AutomationEnabled,
        enable: true,
        expected_version: switches.load().await?.version,
        reason: "Demo: automation for the day shift".into(),
        confirmed: true,
        ends: Some(Ends::After(9 * 60)),
        emergency: false,
    };
    let tomorrow = (now + chrono::Duration::days(1)).date_naive();
    let at = tomorrow
        .and_hms_opt(8, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(now + chrono::Duration::days(1));
    switches
        .schedule_change(&req, at, "demo")
        .await
        .map_err(crate::model::AppError::from)?;
    Ok(())
}

/// Reads the inbox's stream and brings counters down for removed messages and receipts
/// (exactly once each, whatever the stream repeats), sharing the shards with every other
/// console through leases in DynamoDB.
fn spawn_inbox_consumer(store: Store, config: &Config) -> tokio::task::JoinHandle<()> {
    let owner = format!(
        "console-{}-{}",
        std::process::id(),
        crate::server::ids::random_hex(4)
    );
    let lease = Duration::from_secs(config.inbox.stream_lease_seconds.max(1) as u64);
    let poll = Duration::from_millis(config.inbox.stream_poll_ms.max(10) as u64);
    tokio::spawn(async move {
        let mut consumer = crate::server::store::inbox::stream::Consumer::new(store, &owner, lease);
        loop {
            match consumer.round().await {
                Ok(r) if r.counted + r.repeated > 0 => {
                    tracing::info!(
                        counted = r.counted,
                        repeated = r.repeated,
                        "inbox removals counted"
                    )
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "inbox stream: will retry")
                }
            }
            tokio::time::sleep(poll).await;
        }
    })
}

/// Where nothing deletes expired items (DynamoDB Local), sweeps every table every
/// `dynamodb.sweep_minutes`; on AWS, DynamoDB's TTL does it and nothing is spawned.
fn spawn_reaper(store: Store, config: &Config) -> Option<tokio::task::JoinHandle<()>> {
    let on_aws = config.dynamodb.endpoint.is_empty() && !config.wants_embedded_dynamodb();
    let minutes = config.dynamodb.sweep_minutes;
    if on_aws || minutes == 0 {
        return None;
    }
    Some(tokio::spawn(async move {
        let every = Duration::from_secs(minutes as u64 * 60);
        loop {
            tokio::time::sleep(every).await;
            match crate::server::store::sweep::all(&store, chrono::Utc::now().timestamp()).await {
                Ok(tables) => {
                    let deleted: usize = tables.iter().map(|(_, _, d)| d).sum();
                    tracing::info!(deleted, "swept expired items");
                }
                Err(e) => {
                    tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "sweeping expired items failed; trying again later")
                }
            }
        }
    }))
}

/// At start and once a minute, mends what a console of the release before leaves behind
/// in a rolling deployment: it revokes the copies of API keys revoked without them, and
/// keys revoked in part (requests read a key's copies), and moves idempotency keys'
/// watches to the sharded index (the monitoring lists read only that).
fn spawn_mender(store: Store) -> tokio::task::JoinHandle<()> {
    use crate::server::domain::redact::redact;
    tokio::spawn(async move {
        loop {
            if let Err(e) = crate::server::store::api_keys::mend_revoked(&store).await {
                tracing::warn!(error = %redact(&e.to_string()), "API key copies not checked; trying again later");
            }
            let now = chrono::Utc::now().timestamp();
            if let Err(e) = crate::server::store::idempotency::mend_watch(&store, now).await {
                tracing::warn!(error = %redact(&e.to_string()), "idempotency keys' watches not moved; trying again later");
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    })
}

/// Writes the engine's counters every `idempotency.flush_seconds`.
fn spawn_stats_flusher(engine: Engine) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_secs(engine.settings().flush_seconds.max(1) as u64);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Err(e) = engine.flush_stats().await {
                tracing::warn!(error = %crate::server::domain::redact::redact(&e.to_string()), "could not write idempotency counters; will retry");
            }
        }
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

/// Whether `due-index` is still being built (added by this release to a table in use).
async fn due_index_building(store: &Store) -> Result<bool, StartError> {
    let building = crate::server::store::schema::indexes_building(store)
        .await
        .map_err(|e| StartError::Other(format!("describing the tables: {e}")))?;
    let due = crate::server::store::schema::DUE_INDEX;
    Ok(building.iter().any(|i| i.ends_with(&format!("/{due}"))))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::model::pages::PAGE_PATHS;

    #[test]
    fn the_pages_a_sign_in_may_go_on_to_are_the_pages_the_router_serves() {
        let served: BTreeSet<String> = super::route_list()
            .iter()
            .map(|r| r.path().to_string())
            .filter(|p| p != "/login")
            .collect();
        let listed: BTreeSet<String> = PAGE_PATHS.iter().map(|p| p.to_string()).collect();
        assert_eq!(served, listed);
    }
}
