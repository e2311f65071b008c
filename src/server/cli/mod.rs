//! The command line: `ops-console [serve|bootstrap|openapi|sweep|verify|seed|user|apikey]`,
//! parsed by clap. The commands talk to the same DynamoDB as a running console.

mod accounts;
mod maintenance;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::server::config::Config;
use crate::server::startup::{self, Database};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(String);

pub(super) fn err(e: impl std::fmt::Display) -> CliError {
    CliError(e.to_string())
}

#[derive(Parser)]
#[command(
    name = "ops-console",
    about = "Keeps a support-automation middleware exactly-once and under control.",
    after_help = "Settings come from Leptos.toml (or OPS_CONFIG) and OPS_* environment variables."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Start the console (the default).
    Serve,
    /// Create every table (idempotent) and enable TTL.
    Bootstrap,
    /// Print the REST API's OpenAPI 3.1 document.
    Openapi,
    /// Delete expired idempotency keys and inbox items (DynamoDB Local has no TTL deleter).
    Sweep,
    /// Recount what counters count; exit 1 on drift.
    Verify {
        #[command(subcommand)]
        what: Verify,
    },
    /// Write demo data.
    Seed {
        #[command(subcommand)]
        what: Seed,
    },
    /// Console users: add, change, list.
    User {
        #[command(subcommand)]
        command: accounts::UserCommand,
    },
    /// API keys for machine clients.
    Apikey {
        #[command(subcommand)]
        command: accounts::ApiKeyCommand,
    },
}

#[derive(Subcommand)]
enum Verify {
    /// Recount every inbox partition.
    Inbox,
}

#[derive(Subcommand)]
enum Seed {
    /// Demo conversations, with a progress bar.
    Conversations {
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        count: u64,
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
}

pub async fn run(raw: Vec<String>) -> ExitCode {
    let cli = match Cli::try_parse_from(std::iter::once("ops-console".to_string()).chain(raw)) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let config = match Config::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ops-console: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => startup::serve(config).await.map_err(err),
        Command::Bootstrap => maintenance::bootstrap(&config).await,
        Command::Openapi => {
            let doc = crate::server::http::openapi::document();
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            Ok(())
        }
        Command::Sweep => maintenance::sweep(&config).await,
        Command::Verify {
            what: Verify::Inbox,
        } => maintenance::verify_inbox(&config).await,
        Command::Seed {
            what: Seed::Conversations { count, seed },
        } => maintenance::seed_conversations(&config, count as usize, seed).await,
        Command::User { command } => accounts::user(&config, command).await,
        Command::Apikey { command } => accounts::apikey(&config, command).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ops-console: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(super) async fn database(config: &Config) -> Result<Database, CliError> {
    startup::connect(config, true).await.map_err(err)
}
