//! `ops-console verify inbox`: recounts every partition from its messages and receipts and
//! compares the counters. Run it once the stream consumer has caught up with deletions.

use std::collections::BTreeMap;

use crate::server::store::inbox::PUBLIC_UID;
use crate::server::store::inbox_stream::scan_page;
use crate::server::store::{Store, StoreError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    pub pk: String,
    /// `*` or the category.
    pub category: String,
    pub field: &'static str,
    pub counted: i64,
    pub stored: i64,
}

type Tally = BTreeMap<(String, String), (i64, i64)>;

fn add(t: &mut Tally, pk: &str, category: Option<&str>, published: i64, read: i64) {
    for c in std::iter::once("*").chain(category) {
        let e = t.entry((pk.to_string(), c.to_string())).or_default();
        e.0 += published;
        e.1 += read;
    }
}

/// Every counter that disagrees with a recount, and how many items were read.
pub async fn verify(store: &Store) -> Result<(Vec<Drift>, usize), StoreError> {
    let mut counted = Tally::new();
    let mut stored = Tally::new();
    let mut items = 0;
    let mut start = None;
    loop {
        let (page, next) = scan_page(store, start).await?;
        items += page.len();
        for v in &page {
            let pk = v["pk"].as_str().unwrap_or_default();
            let cat = v["taxonomy"]["category"].as_str();
            match v["kind"].as_str() {
                Some("UM") => {
                    let read =
                        v["uid"] != PUBLIC_UID && v.get("readat").is_some_and(|r| !r.is_null());
                    add(&mut counted, pk, cat, 1, i64::from(read));
                }
                Some("RR") => add(&mut counted, pk, cat, 0, 1),
                Some("US") => {
                    let c = v["sk"]
                        .as_str()
                        .unwrap_or_default()
                        .trim_start_matches("c#");
                    stored.insert(
                        (pk.to_string(), c.to_string()),
                        (
                            v["published"].as_i64().unwrap_or(0),
                            v["read"].as_i64().unwrap_or(0),
                        ),
                    );
                }
                _ => {}
            }
        }
        match next {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    let mut drift = Vec::new();
    let keys: std::collections::BTreeSet<_> =
        counted.keys().chain(stored.keys()).cloned().collect();
    for k in keys {
        let c = counted.get(&k).copied().unwrap_or_default();
        let s = stored.get(&k).copied().unwrap_or_default();
        for (field, a, b) in [("published", c.0, s.0), ("read", c.1, s.1)] {
            if a != b {
                drift.push(Drift {
                    pk: k.0.clone(),
                    category: k.1.clone(),
                    field,
                    counted: a,
                    stored: b,
                });
            }
        }
    }
    Ok((drift, items))
}
