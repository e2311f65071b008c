//! The DynamoDB a console works on: the embedded DynamoDB Local (dev without an endpoint),
//! the configured endpoint, or AWS; and the tables made ready on it at start-up.

use std::path::PathBuf;
use std::time::Duration;

use crate::server::config::Config;
use crate::server::dynamo_local::{self, DynamoLocal};
use crate::server::store::schema::{self, Outcome};
use crate::server::store::{Connection, Store, StoreError};

/// Why a console (or a CLI command) could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Local(#[from] dynamo_local::LocalError),
    #[error("DynamoDB does not answer at {endpoint}: {cause}")]
    Unreachable { endpoint: String, cause: String },
    #[error("creating tables failed: {0}")]
    Bootstrap(String),
    #[error("cannot listen on {addr}: {cause}")]
    Bind { addr: String, cause: String },
    #[error("{0}")]
    Other(String),
}

/// DynamoDB as configured: the embedded DynamoDB Local (dev without an endpoint), the
/// configured endpoint, or AWS.
pub struct Database {
    pub store: Store,
    pub endpoint: String,
    /// Kept alive for as long as the store is used; stops Java when dropped.
    pub embedded: Option<DynamoLocal>,
}

pub(crate) fn endpoint_file(config: &Config) -> PathBuf {
    config.data_dir.join("dynamodb").join("endpoint")
}

/// Connects, starting DynamoDB Local first when dev has no endpoint. A CLI command run
/// next to a running dev server reuses the server's DynamoDB Local (two JVMs must not
/// share one data directory).
pub async fn connect(config: &Config, share_running: bool) -> Result<Database, StartError> {
    let mut embedded = None;
    let endpoint = if !config.dynamodb.endpoint.is_empty() {
        Some(config.dynamodb.endpoint.clone())
    } else if config.wants_embedded_dynamodb() {
        let running = match std::fs::read_to_string(endpoint_file(config)) {
            Ok(e) if share_running => {
                let candidate = e.trim().to_string();
                let store = store_for(config, Some(&candidate)).await;
                store
                    .wait_until_reachable(Duration::from_secs(2))
                    .await
                    .is_ok()
                    .then_some(candidate)
            }
            _ => None,
        };
        match running {
            Some(e) => Some(e),
            None => {
                let dir = config.data_dir.join("dynamodb");
                let local = DynamoLocal::start(dynamo_local::Options {
                    jar: (!config.dynamodb.local_jar.is_empty())
                        .then(|| PathBuf::from(&config.dynamodb.local_jar)),
                    data_dir: Some(dir.clone()),
                    port: None,
                    log_file: Some(config.data_dir.join("dynamodb-local.log")),
                })?;
                let e = local.endpoint();
                embedded = Some(local);
                Some(e)
            }
        }
    } else {
        None
    };
    let store = store_for(config, endpoint.as_deref()).await;
    let shown = endpoint
        .clone()
        .unwrap_or_else(|| format!("AWS ({})", config.dynamodb.region));
    let wait = if embedded.is_some() { 60 } else { 10 };
    store
        .wait_until_reachable(Duration::from_secs(wait))
        .await
        .map_err(|e| StartError::Unreachable {
            endpoint: shown.clone(),
            cause: e.to_string(),
        })?;
    if embedded.is_some() {
        let _ = std::fs::write(endpoint_file(config), &shown);
    }
    Ok(Database {
        store,
        endpoint: shown,
        embedded,
    })
}

async fn store_for(config: &Config, endpoint: Option<&str>) -> Store {
    Store::connect(Connection {
        endpoint,
        region: &config.dynamodb.region,
        table_prefix: &config.dynamodb.table_prefix,
        env: config.env.as_str(),
    })
    .await
}

/// Creates or completes the tables, and logs what it did. An index added to an existing
/// table is built in the background; on AWS the console serves meanwhile (reads from that
/// index answer 503), but the embedded DynamoDB Local only builds it when it starts, so it
/// is restarted here.
pub async fn bootstrap(db: &mut Database) -> Result<Vec<(String, Outcome)>, StartError> {
    let failed = |e: StoreError| StartError::Bootstrap(e.to_string());
    let report = schema::bootstrap(&db.store).await.map_err(failed)?;
    for (table, outcome) in &report {
        tracing::info!(%table, ?outcome, "table ready");
    }
    let building = schema::indexes_building(&db.store).await.map_err(failed)?;
    if building.is_empty() {
        return Ok(report);
    }
    match db.embedded.as_mut() {
        Some(local) => {
            tracing::info!(indexes = ?building, "restarting DynamoDB Local to build new indexes");
            local.restart()?;
            // A JVM start and an index build on a machine busy with other work: minutes at
            // worst; it goes on as soon as they are done.
            let wait = Duration::from_secs(300);
            db.store
                .wait_until_reachable(wait)
                .await
                .map_err(|e| StartError::Unreachable {
                    endpoint: db.endpoint.clone(),
                    cause: e.to_string(),
                })?;
            schema::wait_indexes_built(&db.store, wait)
                .await
                .map_err(failed)?;
        }
        None => tracing::warn!(
            indexes = ?building,
            "indexes still being built: on AWS, what reads them answers 503 until they are \
             ACTIVE; on a DynamoDB Local another process started, restart that process (it \
             builds them only when it starts, and refuses their tables until then)"
        ),
    }
    Ok(report)
}
