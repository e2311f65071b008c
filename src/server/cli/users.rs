//! `user` and `apikey`: console users and machine clients' keys, every change audited with
//! the actor `cli:<login>`.

use std::io::{BufRead, IsTerminal, Write};

use clap::Subcommand;

use super::{database, err, CliError};
use crate::model::api_keys::ApiScope;
use crate::model::users::Role;
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::services::api_keys::{parse_scopes, ApiKeys};
use crate::server::services::users::{Change, UserTtls, Users};
use crate::server::startup::Database;

#[derive(Subcommand)]
pub enum UserCommand {
    /// Add a user; the password is prompted for (twice, hidden) or read from stdin.
    Add {
        name: String,
        #[arg(long, value_parser = parse_role)]
        role: Role,
        #[arg(long)]
        password_stdin: bool,
    },
    /// Change a user's role.
    SetRole {
        name: String,
        #[arg(value_parser = parse_role)]
        role: Role,
        #[arg(long)]
        reason: String,
    },
    /// Disable a user: their sessions end and they cannot sign in.
    Disable {
        name: String,
        #[arg(long)]
        reason: String,
    },
    /// Enable a disabled user.
    Enable {
        name: String,
        #[arg(long)]
        reason: String,
    },
    /// Set a new password; the user's sessions end.
    ResetPassword {
        name: String,
        #[arg(long)]
        password_stdin: bool,
        #[arg(long, default_value = "password reset")]
        reason: String,
    },
    /// Every user, with role, state and last sign-in.
    List,
}

#[derive(Subcommand)]
pub enum ApiKeyCommand {
    /// Create a key (printed once on stdout; only its hash is stored).
    Create {
        name: String,
        /// Comma-separated, e.g. switches:read,switches:write.
        #[arg(long, value_delimiter = ',')]
        scopes: Vec<String>,
        /// Days it lives (default: ttl.api_key_days).
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..=3650))]
        days: Option<i64>,
    },
}

fn parse_role(raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|e| e.to_string())
}

/// The users service over the CLI's connection (keep `db` alive while it is used: it
/// may own the embedded DynamoDB Local).
fn users_service(db: &Database, config: &Config) -> Users {
    Users::new(
        db.store.clone(),
        Clock::default(),
        UserTtls::from(&config.ttl),
        config.auth.clone(),
    )
}

fn actor() -> String {
    format!(
        "cli:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
}

pub async fn user(config: &Config, command: UserCommand) -> Result<(), CliError> {
    match command {
        UserCommand::Add {
            name,
            role,
            password_stdin,
        } => add(config, &name, role, password_stdin).await,
        UserCommand::SetRole { name, role, reason } => {
            let done = format!("{name} is now {role}");
            change(config, &name, Change::SetRole(role), &reason, &done).await
        }
        UserCommand::Disable { name, reason } => {
            let done = format!("{name} disabled");
            change(config, &name, Change::Disable, &reason, &done).await
        }
        UserCommand::Enable { name, reason } => {
            let done = format!("{name} enabled");
            change(config, &name, Change::Enable, &reason, &done).await
        }
        UserCommand::ResetPassword {
            name,
            password_stdin,
            reason,
        } => {
            let password = read_password(password_stdin)?;
            let done = format!("password of {name} changed; their sessions have ended");
            change(
                config,
                &name,
                Change::ResetPassword(password),
                &reason,
                &done,
            )
            .await
        }
        UserCommand::List => list(config).await,
    }
}

/// `user add`: the password is read before DynamoDB is started or reached.
async fn add(config: &Config, name: &str, role: Role, from_stdin: bool) -> Result<(), CliError> {
    let password = read_password(from_stdin)?;
    let db = database(config).await?;
    users_service(&db, config)
        .add_user(name, role, &password, &actor())
        .await
        .map_err(err)?;
    println!("added {name} ({role})");
    Ok(())
}

/// A change to an existing user, audited with `reason`; prints `done` once it is stored.
async fn change(
    config: &Config,
    name: &str,
    change: Change,
    reason: &str,
    done: &str,
) -> Result<(), CliError> {
    let db = database(config).await?;
    users_service(&db, config)
        .change_user(name, change, reason, &actor())
        .await
        .map_err(err)?;
    println!("{done}");
    Ok(())
}

async fn list(config: &Config) -> Result<(), CliError> {
    let db = database(config).await?;
    for u in users_service(&db, config).users().await.map_err(err)? {
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
    Ok(())
}

pub async fn apikey(config: &Config, command: ApiKeyCommand) -> Result<(), CliError> {
    let ApiKeyCommand::Create { name, scopes, days } = command;
    let named: Vec<String> = scopes
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let scopes = parse_scopes(&named).map_err(|e| err(e.to_string()))?;
    let days = days.unwrap_or(config.ttl.api_key_days);
    let db = database(config).await?;
    let key = ApiKeys::new(db.store.clone(), Clock::default(), &config.ttl)
        .create_api_key(&name, &scopes, days, &actor())
        .await
        .map_err(|e| {
            let known = ApiScope::ALL.map(ApiScope::as_str).join(", ");
            err(format!("{e} (scopes: {known})"))
        })?;
    // The only time the key is shown.
    println!("{key}");
    eprintln!(
        "API key {name} created with scopes {}; store it now, it is not shown again.",
        named.join(",")
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
