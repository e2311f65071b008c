//! `ops-console verify inbox` (docs/inbox.md, "Verify"): recounts every partition from its
//! messages and receipts and compares the counters. Run it once the stream consumer has
//! caught up with deletions.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::server::store::inbox::stream::scan_page;
use crate::server::store::inbox::{Kind, PUBLIC_UID};
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

/// `(tenant, inbox)` of a user or public partition key (`t#<tenant>U#<uid>#<inbox>`).
fn tenant_inbox(pk: &str) -> Option<(&str, &str)> {
    let rest = pk.strip_prefix("t#")?;
    let at = rest.find("U#").or_else(|| rest.find("G#"))?;
    Some((&rest[..at], rest.rsplit('#').next()?))
}

/// `(tenant, inbox, message id)` of a publication's read-counter shard
/// (`t#<tenant>R#<inbox>#<id>#<shard>`).
fn read_shard_owner(pk: &str) -> Option<(String, String, String)> {
    let rest = pk.strip_prefix("t#")?;
    let (tenant, rest) = rest.split_once("R#")?;
    let mut parts = rest.split('#');
    let inbox = parts.next()?;
    let id = parts.next()?;
    Some((tenant.to_string(), inbox.to_string(), id.to_string()))
}

type Key3 = (String, String, String);

/// What a scan of the table found: the counts its messages and receipts make, and what
/// the counters say.
#[derive(Default)]
struct Recount {
    /// Per partition and category (`*` for all): published and read, from the items.
    counted: Tally,
    /// The same from the stats items.
    stored: Tally,
    /// Reads per publication (`(tenant, inbox, message id)`), from the items.
    reads_counted: BTreeMap<Key3, i64>,
    /// The same from the publications' read-counter shards.
    reads_stored: BTreeMap<Key3, i64>,
    /// Publications whose messages still live.
    live_publications: Vec<Key3>,
}

/// Every counter that disagrees with a recount, and how many items were read. A
/// publication's read count is checked while its messages live (their receipts expire
/// with them; the count stays as a record of the publication).
pub async fn verify(store: &Store, now_s: i64) -> Result<(Vec<Drift>, usize), StoreError> {
    let mut recount = Recount::default();
    let mut items = 0;
    let mut start = None;
    loop {
        let (page, next) = scan_page(store, start).await?;
        items += page.len();
        for v in &page {
            recount.add(v, now_s);
        }
        match next {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    Ok((recount.drift(), items))
}

/// What a repair did.
#[derive(Debug, Default)]
pub struct Repair {
    /// Counters set to their recount.
    pub fixed: Vec<Drift>,
    /// Drift left as it is: seen in one recount and not the other, or a counter that
    /// moved before it could be set (traffic goes on: run it again), or a publication's
    /// read count (its shards are not set by a recount).
    pub left: Vec<Drift>,
    pub items: usize,
}

/// Recounts twice, `settle` apart, and sets each partition counter that both recounts
/// found off by the same amount, if it still says what they read: the removals a trimmed
/// stream position lost (`inbox_stream_trimmed`) are never counted otherwise. A removal the
/// stream consumers had not counted yet at the first recount looks like a lost one there;
/// `settle` longer than they take to count one (`opsconsole_inbox_stream_behind_seconds`)
/// brings its counter down before the second, which then disagrees and leaves it.
pub async fn repair(
    store: &Store,
    now_s: i64,
    settle: std::time::Duration,
) -> Result<Repair, StoreError> {
    use crate::server::store::inbox::{repair_counter, Counter};
    let (first, _) = verify(store, now_s).await?;
    tokio::time::sleep(settle).await;
    let (second, items) = verify(store, now_s).await?;
    let mut out = Repair {
        items,
        ..Repair::default()
    };
    for d in second {
        let counter = match d.field {
            "published" => Some(Counter::Published),
            "read" => Some(Counter::Read),
            _ => None,
        };
        let settled = first.contains(&d);
        match counter {
            Some(c)
                if settled
                    && repair_counter(store, &d.pk, &d.category, c, d.stored, d.counted)
                        .await? =>
            {
                out.fixed.push(d)
            }
            _ => out.left.push(d),
        }
    }
    Ok(out)
}

impl Recount {
    /// Counts one item (any kind; kinds that count nothing are skipped).
    fn add(&mut self, v: &Value, now_s: i64) {
        let pk = v["pk"].as_str().unwrap_or_default();
        let cat = v["taxonomy"]["category"].as_str();
        match v["kind"].as_str().and_then(Kind::parse) {
            Some(Kind::Message) => {
                let read = v["uid"] != PUBLIC_UID && v.get("readat").is_some_and(|r| !r.is_null());
                add(&mut self.counted, pk, cat, 1, i64::from(read));
                if read {
                    count_read(&mut self.reads_counted, pk, v);
                }
            }
            Some(Kind::Receipt) => {
                add(&mut self.counted, pk, cat, 0, 1);
                count_read(&mut self.reads_counted, pk, v);
            }
            Some(Kind::ReadShard) => {
                if let Some(k) = read_shard_owner(pk) {
                    *self.reads_stored.entry(k).or_default() += v["read"].as_i64().unwrap_or(0);
                }
            }
            Some(Kind::Publication) => self.publication(pk, v, now_s),
            Some(Kind::Stats) => {
                let c = v["sk"]
                    .as_str()
                    .unwrap_or_default()
                    .trim_start_matches("c#");
                self.stored.insert(
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

    /// Notes a publication whose messages still live (it expires a day after them).
    fn publication(&mut self, pk: &str, v: &Value, now_s: i64) {
        let live = v["expiredat"].as_i64().unwrap_or(0) - 86_400 > now_s;
        let sk = v["sk"].as_str().unwrap_or_default();
        let tenant = pk.trim_start_matches("t#");
        if let (true, Some(rest)) = (live, sk.strip_prefix("pub#")) {
            if let Some((inbox, id)) = rest.split_once('#') {
                self.live_publications.push((
                    tenant.to_string(),
                    inbox.to_string(),
                    id.to_string(),
                ));
            }
        }
    }

    /// Every disagreement: partition counters first, then live publications' read counts.
    fn drift(self) -> Vec<Drift> {
        let mut drift = Vec::new();
        let keys: BTreeSet<_> = self
            .counted
            .keys()
            .chain(self.stored.keys())
            .cloned()
            .collect();
        for k in keys {
            let c = self.counted.get(&k).copied().unwrap_or_default();
            let s = self.stored.get(&k).copied().unwrap_or_default();
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
        for k in self.live_publications {
            let c = self.reads_counted.get(&k).copied().unwrap_or(0);
            let s = self.reads_stored.get(&k).copied().unwrap_or(0);
            if c != s {
                drift.push(Drift {
                    pk: format!("t#{}", k.0),
                    category: format!("{}#{}", k.1, k.2),
                    field: "publication reads",
                    counted: c,
                    stored: s,
                });
            }
        }
        drift
    }
}

/// One read of the message whose copy or receipt `v` is, in partition `pk`.
fn count_read(reads: &mut BTreeMap<Key3, i64>, pk: &str, v: &Value) {
    let id = v["sk"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("m#");
    if let Some((tenant, inbox)) = tenant_inbox(pk) {
        *reads
            .entry((tenant.to_string(), inbox.to_string(), id.to_string()))
            .or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_tenant_inbox_and_message() {
        assert_eq!(tenant_inbox("t#acmeU#u1#news"), Some(("acme", "news")));
        assert_eq!(tenant_inbox("t#xUU#u1#news"), Some(("xU", "news")));
        assert_eq!(tenant_inbox("t#acmeG#$public#news"), Some(("acme", "news")));
        assert_eq!(
            read_shard_owner("t#acmeR#news#0mwt1#07"),
            Some(("acme".into(), "news".into(), "0mwt1".into()))
        );
    }
}
