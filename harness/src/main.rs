//! `ops-harness`: what proves ops-console, kept out of the product binary.
//!
//! - `bench`: each part against the bare DynamoDB work it adds guarantees to;
//! - `chaos`: several consoles behind retrying clients, through a DynamoDB that fails the
//!   way AWS's does (conflicts, throttles, lost answers, outages, empty stream pages,
//!   shard splits), consoles killed at random; then every promise is checked;
//! - `hot`: the hot-item run (many users at once, a per-item write limit);
//! - `scale`: many consoles on AWS's partitions, scaled down, at a rate standing for
//!   thousands of events a second.

mod bench;
mod chaos;
mod scale;

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
        /// Break a console on purpose (the checker's own tests): `unavailable` (DynamoDB
        /// away for the whole storm), `other-secret` (the second console hashes keys with
        /// another secret), `bypass-proxy` (the second console skips the proxy),
        /// `measurements-down` (that table throttles everything), `measurements-unconditioned`
        /// (its writes' conditions made true), `feeds-unread` (the expiry reads feeds with
        /// an unknown API key), `nothing-expires` (no message is short-lived), `redacted-flip-keys`
        /// (flips named in their reasons by what the console redacts), `torn-transactions`
        /// (a cancelled measurement transaction's counter applied anyway).
        #[arg(long)]
        broken: Option<String>,
        /// Succeed only if the run fails with a violation containing this text.
        #[arg(long)]
        expect_violation: Option<String>,
        /// How long clients retry after the storm before they give up, in seconds.
        #[arg(long, default_value_t = 120)]
        give_up: u64,
    },
    /// Consoles on AWS's partition limits, scaled down, under an open-loop offer; exit 1
    /// when the offer fell short, nothing was done, or (with --no-throttles) anything was
    /// throttled.
    Scale {
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        #[arg(long, default_value_t = 3)]
        consoles: usize,
        /// AWS's limits times this (0.0005: half a write unit a second per partition).
        #[arg(long, default_value_t = 0.0005)]
        scale: f64,
        /// Events offered a second (5 at 0.0005 stand for 10,000).
        #[arg(long, default_value_t = 5.0)]
        rate: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        no_throttles: bool,
        /// Each table's and global index's quota on AWS, write and read units a second
        /// (40,000: on-demand's default, raised through Service Quotas).
        #[arg(long, default_value_t = 40_000.0)]
        table_quota: f64,
        /// Where the figures go as JSON.
        #[arg(long, default_value = "target/bench/scale.json")]
        report: std::path::PathBuf,
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
        Command::Scale {
            seconds,
            consoles,
            scale,
            rate,
            seed,
            no_throttles,
            table_quota,
            report,
        } => {
            let opts = scale::Options {
                seconds,
                consoles,
                scale,
                rate,
                seed,
                no_throttles,
                table_quota,
                dir: std::path::PathBuf::from("target/scale"),
                report,
            };
            match scale::run(&opts).await {
                Ok(failed) if failed.is_empty() => ExitCode::SUCCESS,
                Ok(failed) => {
                    for f in failed {
                        eprintln!("ops-harness scale: {f}");
                    }
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("ops-harness scale: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Chaos {
            seconds,
            clients,
            consoles,
            seed,
            broken,
            expect_violation,
            give_up,
        } => {
            let broken_name = broken.clone();
            let broken = match broken.as_deref() {
                None => None,
                Some("unavailable") => Some(chaos::Break::Unavailable),
                Some("other-secret") => Some(chaos::Break::OtherSecret),
                Some("bypass-proxy") => Some(chaos::Break::BypassProxy),
                Some("measurements-down") => Some(chaos::Break::MeasurementsDown),
                Some("measurements-unconditioned") => Some(chaos::Break::MeasurementsUnconditioned),
                Some("feeds-unread") => Some(chaos::Break::FeedsUnread),
                Some("nothing-expires") => Some(chaos::Break::NothingExpires),
                Some("redacted-flip-keys") => Some(chaos::Break::RedactedFlipKeys),
                Some("torn-transactions") => Some(chaos::Break::TornTransactions),
                Some(other) => {
                    eprintln!("ops-harness chaos: no such break: {other}");
                    return ExitCode::from(2);
                }
            };
            // A broken run in a directory of its own: `make chaos-checker` runs them side
            // by side, and scan-logs reads every one's logs.
            let dir = match &broken {
                Some(_) => std::path::Path::new("target/chaos-broken")
                    .join(broken_name.as_deref().unwrap_or("broken")),
                None => std::path::PathBuf::from("target/chaos"),
            };
            let opts = chaos::Options {
                seconds,
                clients,
                consoles,
                seed,
                dir,
                broken,
                give_up_seconds: give_up,
            };
            match (chaos::run(&opts).await, expect_violation) {
                (Ok(v), None) if v.is_empty() => ExitCode::SUCCESS,
                (Ok(_), None) => ExitCode::FAILURE,
                (Ok(v), Some(want)) if v.iter().any(|v| v.contains(&want)) => {
                    println!("the checker caught the broken console: a violation names \"{want}\"");
                    ExitCode::SUCCESS
                }
                (Ok(_), Some(want)) => {
                    eprintln!(
                        "ops-harness chaos: the broken run should have failed with \"{want}\""
                    );
                    ExitCode::FAILURE
                }
                (Err(e), _) => {
                    eprintln!("ops-harness chaos: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
