//! Inbox: a user's first feed page with 1,000 messages of their own and 1,000 public ones,
//! and mark-read, each next to the bare DynamoDB work it builds on.

use std::time::Instant;

use chrono::Utc;
use serde_json::Value;

use super::{print_rows, Series};
use ops_console::server::domain::inbox::keys::{InboxKey, MessageKey, TenantKey, UserKey};
use ops_console::server::services::inbox::publish::Publish;
use ops_console::server::services::inbox::Inbox;
use ops_console::server::store::inbox as store;
use ops_console::server::store::Store;

const T: &str = "bench";
const I: &str = "news";
const UID: &str = "reader";

fn tk() -> TenantKey {
    TenantKey::parse(T).expect("a valid tenant key")
}

fn ik() -> InboxKey {
    InboxKey::parse(I).expect("a valid inbox key")
}

fn uk(k: &str) -> UserKey {
    UserKey::parse(k).expect("a valid user key")
}

fn mk(k: &str) -> MessageKey {
    MessageKey::parse(k).expect("a valid message id")
}

fn message(n: usize, everyone: bool) -> Result<Publish, String> {
    Publish::build(
        (!everyone).then(|| vec![uk(UID)]),
        None,
        Some(
            if n.is_multiple_of(2) {
                "billing"
            } else {
                "news"
            }
            .into(),
        ),
        format!("Message {n}"),
        "A short body for the benchmark.".into(),
        None,
        None,
        "bench",
        None,
    )
    .map_err(|e| e.to_string())
}

pub async fn bench_inbox(store: &Store, n: usize, per_side: usize) -> Result<Vec<Value>, String> {
    let inbox = Inbox::new(store.clone(), 365);
    let bar = ops_console::server::seed::progress_bar(2 * per_side, "inbox messages published");
    for i in 0..2 * per_side {
        let p = message(i, i % 2 == 1)?;
        inbox
            .publish(&tk(), &ik(), &p, &format!("bench-{i}"), Utc::now())
            .await
            .map_err(|e| e.to_string())?;
        bar(i + 1);
    }
    let user_pk = store::user_pk(T, UID, I);

    // First page: the bare query of one partition against the merged feed of two.
    let mut bare = Series::new("inbox: one partition, 20 items (baseline)");
    let mut feed = Series::new("inbox: merged feed first page (20 of 2,000)");
    for _ in 0..n.min(200) {
        let r0 = store.requests().total();
        let t = Instant::now();
        store::list::<Value>(
            store,
            &user_pk,
            "m#",
            ops_console::server::store::query::Start::First,
            20,
        )
        .await
        .map_err(|e| e.to_string())?;
        bare.add(t.elapsed(), store.requests().total() - r0);
        let r0 = store.requests().total();
        let t = Instant::now();
        let page = inbox
            .feed(&tk(), &ik(), &uk(UID), None, 20, Utc::now())
            .await
            .map_err(|e| e.to_string())?;
        feed.add(t.elapsed(), store.requests().total() - r0);
        if page.items.len() != 20 {
            return Err(format!("expected a full page, got {}", page.items.len()));
        }
    }
    let feed_rows = print_rows("inbox feed", &[bare, feed]);

    // Reads: a plain `SET readat` against the counted, once-only mark.
    let (mine, _) = store::messages(store, &user_pk, None, 0, per_side)
        .await
        .map_err(|e| e.to_string())?;
    let marks = mine.len().min(n);
    let mut plain = Series::new("inbox: plain SET readat (baseline)");
    let mut counted = Series::new("inbox: mark read (once, with counters)");
    for m in mine.iter().take(marks) {
        let r0 = store.requests().total();
        let t = Instant::now();
        store::set_readat_unguarded(store, &m.pk, &format!("bench-{}", m.sk), 1)
            .await
            .map_err(|e| e.to_string())?;
        plain.add(t.elapsed(), store.requests().total() - r0);
        let r0 = store.requests().total();
        let t = Instant::now();
        inbox
            .mark_read(&tk(), &ik(), &uk(UID), &mk(&m.id), Utc::now())
            .await
            .map_err(|e| e.to_string())?;
        counted.add(t.elapsed(), store.requests().total() - r0);
    }
    let mut rows = feed_rows;
    rows.extend(print_rows("inbox mark read", &[plain, counted]));

    // Publishing: to everyone (one public copy), and to ten users (ten copies).
    let mut everyone = Series::new("inbox: publish to everyone");
    let mut ten = Series::new("inbox: publish to ten users");
    for i in 0..n.min(200) {
        let r0 = store.requests().total();
        let t = Instant::now();
        inbox
            .publish(
                &tk(),
                &ik(),
                &message(i, true)?,
                &format!("pub-all-{i}"),
                Utc::now(),
            )
            .await
            .map_err(|e| e.to_string())?;
        everyone.add(t.elapsed(), store.requests().total() - r0);
        let mut to_ten = message(i, false)?;
        to_ten.uids = Some((0..10).map(|u| uk(&format!("u{u}"))).collect());
        let r0 = store.requests().total();
        let t = Instant::now();
        inbox
            .publish(&tk(), &ik(), &to_ten, &format!("pub-ten-{i}"), Utc::now())
            .await
            .map_err(|e| e.to_string())?;
        ten.add(t.elapsed(), store.requests().total() - r0);
    }
    rows.extend(print_rows("inbox publish", &[everyone, ten]));
    Ok(rows)
}
