//! `user` and `apikey`: console users and machine clients' keys, every change audited with
//! the actor `cli:<login>`.

use std::io::{BufRead, IsTerminal, Write};

use clap::Subcommand;

use super::{database, err, CliError};
use crate::model::accounts::Role;
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::domain::accounts::sessions::{create_api_key, SCOPES};
use crate::server::domain::accounts::{self, AccountTtls, Change};
use crate::server::store::accounts::users;

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

pub async fn user(config: &Config, command: UserCommand) -> Result<(), CliError> {
    let now = Clock::default().now();
    let change = |name: String, change: Change, reason: String| async move {
        let db = database(config).await?;
        accounts::change_user(
            &db.store,
            &name,
            change,
            &reason,
            &actor(),
            &ttls(config),
            now,
        )
        .await
        .map_err(err)
    };
    match command {
        UserCommand::Add {
            name,
            role,
            password_stdin,
        } => {
            let password = read_password(password_stdin)?;
            let db = database(config).await?;
            accounts::add_user(
                &db.store,
                &name,
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
        UserCommand::SetRole { name, role, reason } => {
            change(name.clone(), Change::SetRole(role), reason).await?;
            println!("{name} is now {role}");
        }
        UserCommand::Disable { name, reason } => {
            change(name.clone(), Change::Disable, reason).await?;
            println!("{name} disabled");
        }
        UserCommand::Enable { name, reason } => {
            change(name.clone(), Change::Enable, reason).await?;
            println!("{name} enabled");
        }
        UserCommand::ResetPassword {
            name,
            password_stdin,
            reason,
        } => {
            let password = read_password(password_stdin)?;
            change(name.clone(), Change::ResetPassword(password), reason).await?;
            println!("password of {name} changed; their sessions have ended");
        }
        UserCommand::List => list(config, now).await?,
    }
    Ok(())
}

async fn list(config: &Config, now: chrono::DateTime<chrono::Utc>) -> Result<(), CliError> {
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
    Ok(())
}

pub async fn apikey(config: &Config, command: ApiKeyCommand) -> Result<(), CliError> {
    let ApiKeyCommand::Create { name, scopes, days } = command;
    let scopes: Vec<String> = scopes
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let days = days.unwrap_or(config.ttl.api_key_days);
    let db = database(config).await?;
    let now = Clock::default().now();
    let key = create_api_key(
        &db.store,
        &name,
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
