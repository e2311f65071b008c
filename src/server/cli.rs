//! The command line: `ops-console [serve|bootstrap|user ...|apikey ...]`.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use crate::model::auth::Role;
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::accounts::{self, AccountTtls, Change};
use crate::server::domain::sessions::{create_api_key, SCOPES};
use crate::server::startup::{self, Database};
use crate::server::store::{schema, users};

const USAGE: &str = "\
ops-console: keeps a support-automation middleware exactly-once and under control.

Usage:
  ops-console [serve]                       start the console (default)
  ops-console bootstrap                     create every table (idempotent), enable TTL
  ops-console openapi                       print the REST API's OpenAPI 3.1 document
  ops-console sweep                         delete expired idempotency keys and inbox items
                                            (DynamoDB Local has no TTL deleter)
  ops-console verify inbox                  recount every inbox partition; exit 1 on counter drift
  ops-console seed conversations [--count N] [--seed S]
                                            write N demo conversations (default 200)
  ops-console user add NAME --role ROLE [--password-stdin]
  ops-console user set-role NAME ROLE --reason TEXT
  ops-console user disable NAME --reason TEXT
  ops-console user enable NAME --reason TEXT
  ops-console user reset-password NAME [--password-stdin] [--reason TEXT]
  ops-console user list
  ops-console apikey create NAME --scopes SCOPE,SCOPE [--days N]

Roles: viewer, operator, admin.
Settings come from Leptos.toml (or OPS_CONFIG) and OPS_* environment variables.";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(String);

fn err(e: impl std::fmt::Display) -> CliError {
    CliError(e.to_string())
}

/// Parsed `--flag value` options and positional words.
struct Args {
    words: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(raw: Vec<String>) -> Args {
        let mut words = Vec::new();
        let mut flags = Vec::new();
        let mut it = raw.into_iter().peekable();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                let takes_value = !matches!(name, "password-stdin" | "help");
                let value = if takes_value { it.next() } else { None };
                flags.push((name.to_string(), value));
            } else {
                words.push(a);
            }
        }
        Args { words, flags }
    }

    fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| n == name)
    }

    fn word(&self, i: usize) -> Option<&str> {
        self.words.get(i).map(String::as_str)
    }
}

pub async fn run(raw: Vec<String>) -> ExitCode {
    let args = Args::parse(raw);
    if args.has("help") || matches!(args.word(0), Some("help")) {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let config = match Config::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ops-console: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match (args.word(0), args.word(1)) {
        (None | Some("serve"), _) => startup::serve(config).await.map_err(err),
        (Some("bootstrap"), _) => bootstrap(&config).await,
        (Some("openapi"), _) => {
            let doc = crate::server::http::openapi::document();
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            Ok(())
        }
        (Some("sweep"), _) => sweep(&config).await,
        (Some("verify"), Some("inbox")) => verify_inbox(&config).await,
        (Some("seed"), Some("conversations")) => seed_conversations(&config, &args).await,
        (Some("user"), Some(cmd)) => user(&config, cmd, &args).await,
        (Some("apikey"), Some("create")) => apikey(&config, &args).await,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ops-console: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn database(config: &Config) -> Result<Database, CliError> {
    let db = startup::connect(config, true).await.map_err(err)?;
    Ok(db)
}

async fn bootstrap(config: &Config) -> Result<(), CliError> {
    let db = database(config).await?;
    let report = schema::bootstrap(&db.store).await.map_err(err)?;
    for (table, outcome) in report {
        println!("{table:40} {outcome:?}");
    }
    Ok(())
}

/// Deletes expired idempotency keys page by page, with a progress line on stderr.
async fn sweep(config: &Config) -> Result<(), CliError> {
    use std::io::Write;
    let db = database(config).await?;
    let now = chrono::Utc::now().timestamp();
    let (mut examined, mut deleted, mut pages) = (0usize, 0usize, 0usize);
    let mut start = None;
    loop {
        let (e, d, next) = crate::server::store::idempotency::sweep_page(&db.store, now, start)
            .await
            .map_err(err)?;
        examined += e;
        deleted += d;
        pages += 1;
        let spin = ['|', '/', '-', '\\'][pages % 4];
        eprint!(
            "\r{spin} sweeping idempotency keys: {examined} examined, {deleted} expired deleted"
        );
        let _ = std::io::stderr().flush();
        match next {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    eprintln!("\r✓ swept idempotency keys: {examined} examined, {deleted} expired deleted      ");
    let (mut examined, mut deleted, mut pages) = (0usize, 0usize, 0usize);
    let mut start = None;
    loop {
        let (e, d, next) = crate::server::store::inbox_stream::sweep_page(&db.store, now, start)
            .await
            .map_err(err)?;
        examined += e;
        deleted += d;
        pages += 1;
        let spin = ['|', '/', '-', '\\'][pages % 4];
        eprint!("\r{spin} sweeping the inbox: {examined} examined, {deleted} expired deleted");
        let _ = std::io::stderr().flush();
        match next {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    eprintln!("\r✓ swept the inbox: {examined} examined, {deleted} expired deleted (the stream consumer counts them down)");
    Ok(())
}

/// Recounts every inbox partition; drift is an error (exit 1).
async fn verify_inbox(config: &Config) -> Result<(), CliError> {
    let db = database(config).await?;
    let (drift, items) =
        crate::server::domain::inbox::verify::verify(&db.store, chrono::Utc::now().timestamp())
            .await
            .map_err(err)?;
    for d in &drift {
        println!(
            "drift: {} [{}] {}: counted {}, counter says {}",
            d.pk, d.category, d.field, d.counted, d.stored
        );
    }
    if drift.is_empty() {
        println!("inbox: {items} items recounted, every counter agrees");
        Ok(())
    } else {
        Err(err(format!(
            "{} counter(s) disagree with a recount",
            drift.len()
        )))
    }
}

/// Demo conversations through the same calls the API makes, with a progress bar.
async fn seed_conversations(config: &Config, args: &Args) -> Result<(), CliError> {
    use crate::server::seed;
    let number = |flag: &str, default: u64| -> Result<u64, CliError> {
        match args.flag(flag) {
            Some(v) => v
                .parse()
                .map_err(|_| err(format!("--{flag} is a whole number"))),
            None => Ok(default),
        }
    };
    let count = number("count", 200)? as usize;
    if !(1..=1_000_000).contains(&count) {
        return Err(err("--count is 1 to 1000000"));
    }
    let db = database(config).await?;
    schema::bootstrap(&db.store).await.map_err(err)?;
    let plans = seed::plan(count, number("seed", 7)?, Clock::default().now());
    seed::seed(
        &db.store,
        plans,
        config.ttl.conversations_days,
        seed::progress_bar(count, "conversations"),
    )
    .await
    .map_err(err)?;
    println!("seeded {count} conversations");
    Ok(())
}

fn ttls(config: &Config) -> AccountTtls {
    AccountTtls {
        user_inactive_days: config.ttl.user_inactive_days,
        audit_days: config.ttl.audit_days,
        settings_days: config.ttl.settings_days,
    }
}

fn actor() -> String {
    format!(
        "cli:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
}

async fn user(config: &Config, cmd: &str, args: &Args) -> Result<(), CliError> {
    let name = args.word(2);
    let now = Clock::default().now();
    let need_name = || name.ok_or_else(|| err(format!("missing NAME\n\n{USAGE}")));
    let reason = || {
        args.flag("reason")
            .ok_or_else(|| err("--reason TEXT is required (it goes into the audit)"))
    };
    match cmd {
        "add" => {
            let name = need_name()?;
            let role = Role::parse(args.flag("role").unwrap_or("")).map_err(err)?;
            let password = read_password(args.has("password-stdin"))?;
            let db = database(config).await?;
            accounts::add_user(
                &db.store,
                name,
                role,
                &password,
                &actor(),
                &ttls(config),
                now,
            )
            .await
            .map_err(err)?;
            println!("added {name} ({role})");
        }
        "set-role" => {
            let name = need_name()?;
            let role = Role::parse(args.word(3).unwrap_or("")).map_err(err)?;
            let db = database(config).await?;
            accounts::change_user(
                &db.store,
                name,
                Change::SetRole(role),
                reason()?,
                &actor(),
                &ttls(config),
                now,
            )
            .await
            .map_err(err)?;
            println!("{name} is now {role}");
        }
        "disable" | "enable" => {
            let name = need_name()?;
            let change = if cmd == "disable" {
                Change::Disable
            } else {
                Change::Enable
            };
            let db = database(config).await?;
            accounts::change_user(
                &db.store,
                name,
                change,
                reason()?,
                &actor(),
                &ttls(config),
                now,
            )
            .await
            .map_err(err)?;
            println!("{name} {cmd}d");
        }
        "reset-password" => {
            let name = need_name()?;
            let password = read_password(args.has("password-stdin"))?;
            let reason = args.flag("reason").unwrap_or("password reset");
            let db = database(config).await?;
            accounts::change_user(
                &db.store,
                name,
                Change::ResetPassword(password),
                reason,
                &actor(),
                &ttls(config),
                now,
            )
            .await
            .map_err(err)?;
            println!("password of {name} changed; their sessions have ended");
        }
        "list" => {
            let db = database(config).await?;
            for u in users::list(&db.store, now).await.map_err(err)? {
                let last = u
                    .last_login_at
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_else(|| "never".into());
                let state = if u.disabled { "disabled" } else { "active" };
                println!(
                    "{:24} {:9} {:9} last sign-in {last}",
                    u.name,
                    u.role.as_str(),
                    state
                );
            }
        }
        other => return Err(err(format!("unknown user command {other}\n\n{USAGE}"))),
    }
    Ok(())
}

async fn apikey(config: &Config, args: &Args) -> Result<(), CliError> {
    let name = args
        .word(2)
        .ok_or_else(|| err(format!("missing NAME\n\n{USAGE}")))?;
    let scopes: Vec<String> = args
        .flag("scopes")
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let days = match args.flag("days") {
        Some(d) => d
            .parse::<i64>()
            .ok()
            .filter(|d| (1..=3650).contains(d))
            .ok_or_else(|| err("--days is 1 to 3650"))?,
        None => config.ttl.api_key_days,
    };
    let db = database(config).await?;
    let now = Clock::default().now();
    let key = create_api_key(
        &db.store,
        name,
        &scopes,
        days,
        &actor(),
        config.ttl.audit_days,
        now,
    )
    .await
    .map_err(|e| err(format!("{e} (scopes: {})", SCOPES.join(", "))))?;
    // The only time the key is shown.
    println!("{key}");
    eprintln!(
        "API key {name} created with scopes {}; store it now, it is not shown again.",
        scopes.join(",")
    );
    Ok(())
}

/// From stdin (one line) when piped or asked to; else prompted twice without echo.
fn read_password(from_stdin: bool) -> Result<String, CliError> {
    let stdin = std::io::stdin();
    if from_stdin || !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map_err(err)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_string());
    }
    let first = prompt_hidden("Password: ")?;
    let second = prompt_hidden("Again: ")?;
    if first != second {
        return Err(err("the two passwords differ"));
    }
    Ok(first)
}

fn prompt_hidden(prompt: &str) -> Result<String, CliError> {
    let stty = |arg: &str| {
        std::process::Command::new("stty")
            .arg(arg)
            .stdin(std::process::Stdio::inherit())
            .status()
    };
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let _ = stty("-echo");
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    let _ = stty("echo");
    eprintln!();
    read.map_err(err)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}
