//! The only module that talks to DynamoDB. Table names, key formats and condition
//! expressions live here and nowhere else.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod conversations;
pub mod copies;
mod counter;
pub mod cursor;
pub mod directory;
mod error;
pub mod events;
pub mod fanout;
pub mod idempotency;
pub mod inbox;
pub mod item;
pub mod kill_switch_approvals;
pub mod kill_switch_schedule;
pub mod kill_switch_triggers;
pub mod kill_switch_trips;
pub mod kill_switches;
pub mod many;
pub mod measurements;
pub mod query;
pub mod schema;
mod spans;
pub mod sweep;
pub mod tx;
pub mod users;
pub mod versioned_list;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::Client;

pub use counter::{Reach, RequestCounter};
pub use error::{Busy, StoreError};

/// Table names are `<prefix><name>-<env>`: the environment suffix keeps dev, staging and
/// prod apart; the prefix lets tests run side by side on one DynamoDB.
#[derive(Clone, Debug)]
pub struct TableNames {
    prefix: String,
    env: String,
}

impl TableNames {
    pub fn new(prefix: &str, env: &str) -> Self {
        TableNames {
            prefix: prefix.to_string(),
            env: env.to_string(),
        }
    }

    pub fn of(&self, base: &str) -> String {
        format!("{}{}-{}", self.prefix, base, self.env)
    }

    /// What every name starts with (`dynamodb.table_prefix`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

#[derive(Clone)]
pub struct Store {
    client: Client,
    streams: aws_sdk_dynamodbstreams::Client,
    names: TableNames,
    requests: Arc<RequestCounter>,
    cursors: cursor::Cursors,
    due_index: bool,
}

/// How to reach DynamoDB.
pub struct Connection<'a> {
    /// `None`: AWS, with the normal credential chain.
    pub endpoint: Option<&'a str>,
    pub region: &'a str,
    pub table_prefix: &'a str,
    pub env: &'a str,
}

impl Store {
    pub async fn connect(conn: Connection<'_>) -> Store {
        let requests = Arc::new(RequestCounter::default());
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(Region::new(conn.region.to_string()))
            // Stated rather than inherited: each request is tried at most 3 times by the
            // SDK (throttles, 5xx, resets, timeouts), each try at most 10 s, 30 s in all;
            // the store's own budget comes on top for throttles and conflicts
            // (docs/dynamodb.md). A request's deadline bounds its client's wait, not this.
            .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(3))
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(10))
                    .operation_timeout(Duration::from_secs(30))
                    .build(),
            );
        if let Some(endpoint) = conn.endpoint {
            loader = loader.endpoint_url(endpoint);
            // DynamoDB Local takes any credentials; a real endpoint gets the real chain.
            if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
                loader = loader.credentials_provider(Credentials::new(
                    "local",
                    "local",
                    None,
                    None,
                    "ops-console",
                ));
            }
        }
        let sdk = loader.load().await;
        let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(counter::CountingInterceptor::new(requests.clone()))
            .interceptor(spans::SpanInterceptor)
            .build();
        let streams = aws_sdk_dynamodbstreams::Client::new(&sdk);
        Store {
            client: Client::from_conf(config),
            streams,
            names: TableNames::new(conn.table_prefix, conn.env),
            requests,
            cursors: cursor::Cursors::ephemeral(),
            due_index: false,
        }
    }

    /// This store, sealing page cursors with `cursors` (keys every console of the
    /// environment shares; until then, keys of this process alone).
    pub fn with_cursors(mut self, cursors: cursor::Cursors) -> Store {
        self.cursors = cursors;
        self
    }

    /// This store, writing the outbox's due group on `due-index` (`events.due_index`: on
    /// once every console reads it, docs/events.md, "The outbox").
    pub fn with_due_index(mut self, on: bool) -> Store {
        self.due_index = on;
        self
    }

    /// Whether the due group is written on `due-index` (else on `outbox-index`, as the
    /// release before writes it). Every console reads both.
    pub fn writes_due_index(&self) -> bool {
        self.due_index
    }

    /// Seals and opens page cursors.
    pub fn cursors(&self) -> &cursor::Cursors {
        &self.cursors
    }

    pub fn table(&self, base: &str) -> String {
        self.names.of(base)
    }

    /// Every request this store has sent, by operation (retries included).
    pub fn requests(&self) -> &RequestCounter {
        &self.requests
    }

    /// The SDK client (for the store's modules, and for tests that inspect tables).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The DynamoDB Streams client (the inbox's removal consumer).
    pub(crate) fn streams(&self) -> &aws_sdk_dynamodbstreams::Client {
        &self.streams
    }

    /// Waits until DynamoDB answers at all (right after starting DynamoDB Local, and at
    /// start-up). It describes the settings table, which the console's IAM policy allows
    /// (ListTables would need every table in the account); "no such table" is an answer.
    pub async fn wait_until_reachable(&self, within: Duration) -> Result<(), StoreError> {
        use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let asked = self
                .client
                .describe_table()
                .table_name(self.table(schema::SETTINGS.base))
                .send()
                .await;
            match asked.map_err(|e| e.into_service_error()) {
                Ok(_) | Err(DescribeTableError::ResourceNotFoundException(_)) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    return Err(StoreError::service("DescribeTable", &e))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}
