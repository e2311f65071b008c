//! Logs: `tracing`, filtered by `RUST_LOG`, as JSON lines when `LOG_FORMAT=json`, to stderr
//! or appended to the file `LOG_FILE` names. Nothing personal is ever passed to a log call;
//! free text goes through `redact` first. Traces: the same spans, exported when the standard
//! OpenTelemetry variables ask for it ([`traces`]).

pub mod traces;

use std::fs::File;
use std::sync::Arc;

use tracing_subscriber::filter::{filter_fn, FilterExt};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

const DEFAULT_FILTER: &str =
    "info,aws_config=warn,aws_smithy_runtime=warn,aws_sdk_dynamodb=warn,hyper=warn,tower_http=warn";

fn writer() -> BoxMakeWriter {
    let file = std::env::var("LOG_FILE").ok().and_then(|path| {
        if let Some(dir) = std::path::Path::new(&path).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| eprintln!("LOG_FILE {path}: {e}; logging to stderr"))
            .ok()
    });
    match file {
        Some(f) => {
            let f: Arc<File> = Arc::new(f);
            BoxMakeWriter::new(move || f.clone())
        }
        None => BoxMakeWriter::new(std::io::stderr),
    }
}

/// Logs, and with `with_traces` the traces the settings ask for (the server's; a command-line
/// tool exports none). Call within the runtime (the exporter sends on it).
pub fn init(with_traces: bool) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let json = std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::env::var_os("LOG_FILE").is_none())
        .with_writer(writer());
    // The spans made for traces alone stay out of the log lines.
    let filter = filter.and(filter_fn(|m| m.target() != traces::TARGET));
    let logs = if json {
        fmt.json().with_filter(filter).boxed()
    } else {
        fmt.with_filter(filter).boxed()
    };
    let exported = with_traces
        .then(traces::from_env)
        .flatten()
        .map(|p| traces::layer(&p));
    // A second init (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(exported)
        .try_init();
}

/// For the server: a panic's message can quote the input that caused it, so only where it
/// happened is logged. (The CLI's tools keep the default hook and its message.)
pub fn withhold_panic_messages() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(at, "panic (message withheld: it may quote personal data)");
    }));
}

/// Where a server-side failure becomes what a user may see: the cause (redacted: it can
/// quote the data it choked on) goes to the log under a short reference, the user gets the
/// reference.
pub fn internal(cause: &dyn std::fmt::Display) -> crate::model::AppError {
    let reference = crate::server::ids::random_hex(4);
    // A cause can quote the data it choked on (a decoding error names the value).
    let cause = crate::server::domain::redact::redact(&cause.to_string());
    tracing::error!(%reference, error = %cause, "request failed");
    crate::model::AppError::Internal { reference }
}
