//! Maintenance commands: tables, sweeping what TTL would delete, recounts, demo data.

use super::{database, err, CliError};
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::store::{schema, sweep};

pub async fn bootstrap(config: &Config) -> Result<(), CliError> {
    let mut db = database(config).await?;
    let report = crate::server::startup::bootstrap(&mut db)
        .await
        .map_err(err)?;
    for (table, outcome) in report {
        println!("{table:40} {outcome:?}");
    }
    Ok(())
}

/// Deletes every expired item of every table (what DynamoDB's TTL deletes, late; DynamoDB
/// Local never), with a progress line per table on stderr. The inbox's stream consumer
/// counts its deletions down as it would TTL's.
pub async fn sweep(config: &Config) -> Result<(), CliError> {
    use std::io::Write;
    let db = database(config).await?;
    let now = chrono::Utc::now().timestamp();
    for spec in schema::ALL {
        let mut pages = 0usize;
        let (examined, deleted) = sweep::table(&db.store, spec, now, |e, d| {
            pages += 1;
            let spin = ['|', '/', '-', '\\'][pages % 4];
            eprint!(
                "\r{spin} sweeping {}: {e} examined, {d} expired deleted",
                spec.base
            );
            let _ = std::io::stderr().flush();
        })
        .await
        .map_err(err)?;
        eprintln!(
            "\r✓ swept {}: {examined} examined, {deleted} expired deleted      ",
            spec.base
        );
    }
    Ok(())
}

/// Recounts every inbox partition; drift is an error (exit 1).
pub async fn verify_inbox(config: &Config) -> Result<(), CliError> {
    let db = database(config).await?;
    let (drift, items) =
        crate::server::services::inbox::verify::verify(&db.store, chrono::Utc::now().timestamp())
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

/// Recounts every inbox partition twice, `settle_seconds` apart, and sets the counters both
/// found off; drift left
/// (moved meanwhile, or not repairable) is an error (exit 1).
pub async fn repair_inbox(config: &Config, settle_seconds: u64) -> Result<(), CliError> {
    let db = database(config).await?;
    println!("inbox: recounting, then again in {settle_seconds} s");
    let r = crate::server::services::inbox::verify::repair(
        &db.store,
        chrono::Utc::now().timestamp(),
        std::time::Duration::from_secs(settle_seconds),
    )
    .await
    .map_err(err)?;
    for d in &r.fixed {
        println!(
            "repaired: {} [{}] {}: counter said {}, set to the recount {}",
            d.pk, d.category, d.field, d.stored, d.counted
        );
    }
    for d in &r.left {
        println!(
            "left: {} [{}] {}: counted {}, counter says {} (moved during the recount, or not a partition counter)",
            d.pk, d.category, d.field, d.counted, d.stored
        );
    }
    println!(
        "inbox: {} items recounted, {} counter(s) repaired, {} left",
        r.items,
        r.fixed.len(),
        r.left.len()
    );
    if r.left.is_empty() {
        Ok(())
    } else {
        Err(err(format!("{} counter(s) left as they are", r.left.len())))
    }
}

/// Demo conversations through the same calls the API makes, with a progress bar.
pub async fn seed_conversations(config: &Config, count: usize, seed_: u64) -> Result<(), CliError> {
    use crate::server::seed;
    use crate::server::services::conversations::Conversations;
    let db = database(config).await?;
    schema::bootstrap(&db.store).await.map_err(err)?;
    let plans = seed::plan(count, seed_, Clock::default().now());
    let conversations = Conversations::new(db.store.clone(), &config.ttl);
    seed::seed(
        &conversations,
        plans,
        seed::progress_bar(count, "conversations"),
    )
    .await
    .map_err(err)?;
    println!("seeded {count} conversations");
    Ok(())
}
