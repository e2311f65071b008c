//! `ops-harness`: what proves ops-console, kept out of the product binary.
//!
//! - `bench`: each part against the bare DynamoDB work it adds guarantees to;
//! - `chaos`: several consoles behind retrying clients, through a DynamoDB that fails the
//!   way AWS's does (conflicts, throttles, lost answers, outages, empty stream pages,
//!   shard splits), consoles killed at random; then every promise is checked;
//! - `hot`: the hot-item run (many users at once, a per-item write limit).

mod bench;
mod chaos;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ops-harness", about = "ops-console's benchmarks and chaos run")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Each part against the bare DynamoDB work it adds guarantees to, side by side.
    Bench {
        /// Calls per series.
        #[arg(long, default_value_t = 400)]
        n: usize,
        /// Parts to run (engine, events, ack, measurements, inbox, conversations, signin, pages).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Conversation counts the search latency is measured at.
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
        sizes: Vec<usize>,
    },
    /// Consoles killed under retrying clients, through a faulty DynamoDB; exit 1 on a
    /// broken promise.
    Chaos {
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        #[arg(long, default_value_t = 4)]
        clients: usize,
        #[arg(long, default_value_t = 2)]
        consoles: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench { n, only, sizes } => {
            let opts = bench::Options {
                n,
                only,
                conversation_sizes: sizes,
            };
            match bench::run(&opts).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ops-harness bench: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Chaos {
            seconds,
            clients,
            consoles,
            seed,
        } => {
            let opts = chaos::Options {
                seconds,
                clients,
                consoles,
                seed,
                dir: std::path::PathBuf::from("target/chaos"),
            };
            match chaos::run(&opts).await {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("ops-harness chaos: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
