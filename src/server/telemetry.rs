//! Logs: `tracing`, filtered by `RUST_LOG`, as JSON lines when `LOG_FORMAT=json`.
//! Nothing personal is ever passed to a log call; free text goes through `redact` first.

use tracing_subscriber::EnvFilter;

const DEFAULT_FILTER: &str =
    "info,aws_config=warn,aws_smithy_runtime=warn,aws_sdk_dynamodb=warn,hyper=warn,tower_http=warn";

pub fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let json = std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) keeps the first subscriber.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
