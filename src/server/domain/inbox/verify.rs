//! `ops-console verify inbox`: recounts every partition from its messages and receipts and
//! compares the counters. Run it once the stream consumer has caught up with deletions.

use std::collections::BTreeMap;

use crate::server::store::inbox::stream::scan_page;
use crate::server::store::inbox::PUBLIC_UID;
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

/// Every counter that disagrees with a recount, and how many items were read. A
/// publication's read count is checked while its messages live (their receipts expire
/// with them; the count stays as a record of the publication).
pub async fn verify(store: &Store, now_s: i64) -> Result<(Vec<Drift>, usize), StoreError> {
    let mut counted = Tally::new();
    let mut stored = Tally::new();
    let mut reads_counted: BTreeMap<Key3, i64> = BTreeMap::new();
    let mut reads_stored: BTreeMap<Key3, i64> = BTreeMap::new();
    let mut live_publications: Vec<Key3> = Vec::new();
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
                    if read {
                        count_read(&mut reads_counted, pk, v);
                    }
                }
                Some("RR") => {
                    add(&mut counted, pk, cat, 0, 1);
                    count_read(&mut reads_counted, pk, v);
                }
                Some("PR") => {
                    if let Some(k) = read_shard_owner(pk) {
                        *reads_stored.entry(k).or_default() += v["read"].as_i64().unwrap_or(0);
                    }
                }
                Some("PB") => {
                    let live = v["expiredat"].as_i64().unwrap_or(0) - 86_400 > now_s;
                    let sk = v["sk"].as_str().unwrap_or_default();
                    let tenant = pk.trim_start_matches("t#");
                    if let (true, Some(rest)) = (live, sk.strip_prefix("pub#")) {
                        if let Some((inbox, id)) = rest.split_once('#') {
                            live_publications.push((
                                tenant.to_string(),
                                inbox.to_string(),
                                id.to_string(),
                            ));
                        }
                    }
                }
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
    for k in live_publications {
        let c = reads_counted.get(&k).copied().unwrap_or(0);
        let s = reads_stored.get(&k).copied().unwrap_or(0);
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
    Ok((drift, items))
}

/// One read of the message whose copy or receipt `v` is, in partition `pk`.
fn count_read(reads: &mut BTreeMap<Key3, i64>, pk: &str, v: &serde_json::Value) {
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
