//! The command line: `ops-console [serve|bootstrap|openapi|sweep|verify|seed|user|apikey|aws]`,
//! parsed by clap. The commands talk to the same DynamoDB as a running console.

mod maintenance;
mod users;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::server::config::{Config, Environment};
use crate::server::startup::{self, Database};
use crate::server::store::TableNames;

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
        command: users::UserCommand,
    },
    /// API keys for machine clients.
    Apikey {
        #[command(subcommand)]
        command: users::ApiKeyCommand,
    },
    /// The deploy kit: what AWS needs, for this environment's tables (docs/operations.md).
    Aws {
        #[command(subcommand)]
        what: Aws,
    },
}

#[derive(Subcommand)]
enum Aws {
    /// Print a CloudFormation template (JSON) for every table, or for the whole service.
    Cloudformation {
        #[command(flatten)]
        tables: Tables,
        /// The whole service: the tables, the console on ECS Fargate behind a load
        /// balancer, its secrets and its alarms (docs/operations.md, "Running on AWS").
        #[arg(long)]
        service: bool,
    },
    /// Print the least-privilege IAM policy (JSON) on the environment's tables.
    IamPolicy {
        #[command(flatten)]
        tables: Tables,
        /// The AWS account id the tables are in (12 digits).
        #[arg(long, value_parser = account_id)]
        account: String,
        #[arg(long)]
        region: String,
        /// The bootstrap's policy (create and complete tables) instead of the console's.
        #[arg(long)]
        bootstrap: bool,
    },
}

/// Which tables: the settings `app.environment` and `dynamodb.table_prefix` name them.
#[derive(clap::Args)]
struct Tables {
    /// dev, staging or prod.
    #[arg(long, value_parser = environment)]
    env: Environment,
    #[arg(long, default_value = "")]
    table_prefix: String,
}

fn environment(s: &str) -> Result<Environment, String> {
    match s {
        "dev" => Ok(Environment::Dev),
        "staging" => Ok(Environment::Staging),
        "prod" => Ok(Environment::Prod),
        _ => Err("one of dev, staging, prod".into()),
    }
}

fn account_id(s: &str) -> Result<String, String> {
    if s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit()) {
        Ok(s.to_string())
    } else {
        Err("an AWS account id is 12 digits".into())
    }
}

#[derive(Subcommand)]
enum Verify {
    /// Recount every inbox partition.
    Inbox {
        /// Set each counter two recounts agree is off (after `inbox_stream_trimmed`), if it
        /// has not moved since.
        #[arg(long)]
        repair: bool,
        /// Seconds between the two recounts: longer than the stream consumers take to
        /// count a removal.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=3600))]
        settle_seconds: u64,
    },
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
    let command = match cli.command.unwrap_or(Command::Serve) {
        Command::Aws { what } => return print_aws(what),
        other => other,
    };
    let config = match Config::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ops-console: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Command::Serve => startup::serve(config).await.map_err(err),
        Command::Bootstrap => maintenance::bootstrap(&config).await,
        Command::Openapi => {
            print_json(
                &serde_json::to_value(crate::server::http::openapi::document()).unwrap_or_default(),
            );
            Ok(())
        }
        Command::Sweep => maintenance::sweep(&config).await,
        Command::Verify {
            what: Verify::Inbox { repair: false, .. },
        } => maintenance::verify_inbox(&config).await,
        Command::Verify {
            what:
                Verify::Inbox {
                    repair: true,
                    settle_seconds,
                },
        } => maintenance::repair_inbox(&config, settle_seconds).await,
        Command::Seed {
            what: Seed::Conversations { count, seed },
        } => maintenance::seed_conversations(&config, count as usize, seed).await,
        Command::User { command } => users::user(&config, command).await,
        Command::Apikey { command } => users::apikey(&config, command).await,
        Command::Aws { .. } => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ops-console: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints what `aws` makes, or why it refuses (exit 2).
fn print_aws(what: Aws) -> ExitCode {
    match aws(what) {
        Ok(v) => {
            print_json(&v);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ops-console: {e}");
            ExitCode::from(2)
        }
    }
}

/// The deploy kit needs no settings and no DynamoDB: only the tables' names.
fn aws(what: Aws) -> Result<serde_json::Value, String> {
    use crate::server::deploy::{cloudformation, iam, service};
    let names = |t: &Tables| TableNames::new(&t.table_prefix, t.env.as_str());
    match what {
        Aws::Cloudformation {
            tables,
            service: true,
        } if tables.env == Environment::Dev => Err(
            "the service runs staging or prod: dev runs on one machine, on an embedded DynamoDB Local (`make run`)".into(),
        ),
        Aws::Cloudformation {
            tables,
            service: true,
        } => Ok(service::template(&names(&tables), tables.env)),
        Aws::Cloudformation { tables, .. } => {
            Ok(cloudformation::template(&names(&tables), tables.env))
        }
        Aws::IamPolicy {
            tables,
            account,
            region,
            bootstrap,
        } => {
            let role = if bootstrap {
                iam::Role::Bootstrap
            } else {
                iam::Role::Console
            };
            Ok(iam::policy(&names(&tables), &region, &account, role))
        }
    }
}

fn print_json(v: &serde_json::Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

pub(super) async fn database(config: &Config) -> Result<Database, CliError> {
    startup::connect(config, true).await.map_err(err)
}
