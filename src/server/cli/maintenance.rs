//! Maintenance commands: tables, sweeping what TTL would delete, recounts, demo data.

use super::{database, err, CliError};
use crate::server::clock::Clock;
use crate::server::config::Config;
use crate::server::store::items::Item;
use crate::server::store::{schema, StoreError};

pub async fn bootstrap(config: &Config) -> Result<(), CliError> {
    let db = database(config).await?;
    let report = schema::bootstrap(&db.store).await.map_err(err)?;
    for (table, outcome) in report {
        println!("{table:40} {outcome:?}");
    }
    Ok(())
}

/// Deletes expired idempotency keys, then expired inbox items, with a progress line on
/// stderr.
pub async fn sweep(config: &Config) -> Result<(), CliError> {
    use crate::server::store::{idempotency, inbox};
    let db = database(config).await?;
    let now = chrono::Utc::now().timestamp();
    let (examined, deleted) = sweep_pages("idempotency keys", |start| {
        idempotency::sweep_page(&db.store, now, start)
    })
    .await?;
    eprintln!("\r✓ swept idempotency keys: {examined} examined, {deleted} expired deleted      ");
    let (examined, deleted) = sweep_pages("the inbox", |start| {
        inbox::stream::sweep_page(&db.store, now, start)
    })
    .await?;
    eprintln!("\r✓ swept the inbox: {examined} examined, {deleted} expired deleted (the stream consumer counts them down)");
    Ok(())
}

/// Runs one sweep to its end, a page at a time, with a progress line on stderr naming
/// `what`; how many items it examined and deleted.
async fn sweep_pages<F, Fut>(what: &str, mut page: F) -> Result<(usize, usize), CliError>
where
    F: FnMut(Option<Item>) -> Fut,
    Fut: std::future::Future<Output = Result<(usize, usize, Option<Item>), StoreError>>,
{
    use std::io::Write;
    let (mut examined, mut deleted, mut pages) = (0usize, 0usize, 0usize);
    let mut start = None;
    loop {
        let (e, d, next) = page(start).await.map_err(err)?;
        examined += e;
        deleted += d;
        pages += 1;
        let spin = ['|', '/', '-', '\\'][pages % 4];
        eprint!("\r{spin} sweeping {what}: {examined} examined, {deleted} expired deleted");
        let _ = std::io::stderr().flush();
        match next {
            Some(k) => start = Some(k),
            None => return Ok((examined, deleted)),
        }
    }
}

/// Recounts every inbox partition; drift is an error (exit 1).
pub async fn verify_inbox(config: &Config) -> Result<(), CliError> {
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
pub async fn seed_conversations(config: &Config, count: usize, seed_: u64) -> Result<(), CliError> {
    use crate::server::domain::conversations::Conversations;
    use crate::server::seed;
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
