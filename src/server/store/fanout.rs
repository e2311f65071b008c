//! A page of one write-sharded index key (docs/dynamodb.md, "No hot partition key"): a key
//! that one value per day or per group would make hot is spread over shards (`<value>#NN`),
//! each its own partition, and a list reads every shard and merges them in the index's
//! order. The cursor is the boundary between what was shown and what was not, one sort
//! value, sealed: as opaque and as small as one partition's.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

use super::cursor::Binding;
use super::query::{self, Cond, From, Item, Spec};
use super::{Store, StoreError};

/// The shard of `id` among `shards`: FNV-1a, stable across builds and platforms (the shard
/// is stored), the same for every write of one item.
pub fn shard_of(id: &str, shards: u32) -> u32 {
    let h = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (h % u64::from(shards.max(1))) as u32
}

/// The sharded key of `id` under `value` (a day, say): `<value>#NN`.
pub fn key(value: &str, id: &str, shards: u32) -> String {
    format!("{value}#{:02}", shard_of(id, shards))
}

/// Every partition of `value`: (its number in a cursor, its key). The shards, and `value`
/// unsharded, as a release before the sharding wrote it (read until its items expire).
pub fn keys(value: &str, shards: u32) -> Vec<(u32, String)> {
    let mut keys: Vec<(u32, String)> = (0..shards)
        .map(|i| (i, format!("{value}#{i:02}")))
        .collect();
    keys.push((shards, value.to_string()));
    keys
}

/// One shard's query: its number and what it reads. Every shard's query differs from the
/// others' by its partition (and, for an index of the release before, its index and a
/// filter) only.
pub struct Shard {
    pub id: u32,
    pub spec: Spec,
    /// Read in one `Query` call a page, however few of its items match its filter: for a
    /// partition that holds every item of the list (the unsharded index of the release
    /// before, which this release writes too), where that call stops bounds the page
    /// as well as reading on would, at a page's reads.
    pub one_call: bool,
}

impl Shard {
    pub fn new(id: u32, spec: Spec) -> Shard {
        Shard {
            id,
            spec,
            one_call: false,
        }
    }
}

/// A merged page: the items in the index's order (with the shard each came from), and
/// the cursor of the next.
pub struct Merged {
    pub items: Vec<(u32, Item)>,
    pub next: Option<String>,
}

/// Up to `size` items of `shards` merged by `sort_attr` (a string attribute: the index's
/// sort key, unique per item, as `created_sk`, `ts_action_id` and `outbox_sk` are), in the
/// order of the shards' specs, from `cursor` (one this returned under `binding`). Every
/// shard is read at once, for at most `size` items past the cursor.
///
/// The cursor is one sort value, the boundary: every item on this side of it was shown,
/// from every shard, and none past it. So it stays small however many shards there are
/// (a key per shard would pass the sealed cursor's 4 KB with 32 of them), and the next
/// page reads each shard from the boundary with a sort-key condition. A shard whose reads
/// stopped early (a filter skipping many items) bounds the page: nothing is shown past
/// where it stopped, so nothing it has not read can be passed over.
pub async fn page(
    store: &Store,
    shards: &[Shard],
    sort_attr: &'static str,
    binding: &Binding,
    cursor: Option<&str>,
    size: usize,
) -> Result<Merged, StoreError> {
    let size = size.max(1);
    let Some(first) = shards.first() else {
        return Ok(Merged {
            items: Vec::new(),
            next: None,
        });
    };
    let ascending = first.spec.ascending;
    let bound = match cursor {
        Some(c) => Some(open(store.cursors().open(binding, c)?)?),
        None => None,
    };
    let sk = |i: &Item| {
        i.get(sort_attr)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    let reads = shards.iter().filter_map(|shard| {
        let spec = match &bound {
            None => shard.spec.clone(),
            Some(b) => resumed(&shard.spec, sort_attr, b)?,
        };
        let calls = if shard.one_call { 1 } else { query::MAX_CALLS };
        Some(async move {
            query::page_within(store, &spec, From::First, size, calls)
                .await
                .map(|page| (shard, page))
        })
    });
    let mut found: Vec<(u32, String, Item)> = Vec::new();
    // Where each shard with more to read stopped.
    let mut stops = Vec::new();
    for (shard, page) in futures_util::future::try_join_all(reads).await? {
        for item in page.items {
            let v = sk(&item);
            if bound.as_deref() == Some(v.as_str()) || !within(&shard.spec, &v) {
                continue;
            }
            found.push((shard.id, v, item));
        }
        stops.extend(page.next.map(|next| sk(&next)));
    }
    let (items, boundary) = merge(found, &stops, ascending, size);
    let next = boundary.map(|b| store.cursors().seal(binding, json!({ "b": b })));
    Ok(Merged { items, next })
}

/// Up to `size` of `found` (shard, sort value, item) in the page's order, and the boundary
/// of the next page (none: nothing follows). Nothing is shown past the nearest of `stops`
/// (where a shard with more to read stopped): it has not read beyond.
fn merge(
    mut found: Vec<(u32, String, Item)>,
    stops: &[String],
    ascending: bool,
    size: usize,
) -> (Vec<(u32, Item)>, Option<String>) {
    // `a` comes before `b` in the page's order.
    let before = |a: &str, b: &str| if ascending { a < b } else { a > b };
    let stop = stops.iter().fold(None::<&String>, |near, e| match near {
        Some(s) if before(s, e) => Some(s),
        _ => Some(e),
    });
    if let Some(s) = stop {
        found.retain(|(_, v, _)| !before(s, v));
    }
    found.sort_by(|a, b| {
        let order = a.1.cmp(&b.1).then(a.0.cmp(&b.0));
        if ascending {
            order
        } else {
            order.reverse()
        }
    });
    let full = found.len() > size;
    found.truncate(size);
    let boundary = if full {
        found.last().map(|(_, v, _)| v.clone())
    } else {
        stop.cloned()
    };
    (
        found.into_iter().map(|(s, _, i)| (s, i)).collect(),
        boundary,
    )
}

/// The boundary a cursor held.
fn open(value: Value) -> Result<String, StoreError> {
    value["b"]
        .as_str()
        .filter(|b| !b.is_empty())
        .map(str::to_string)
        .ok_or(StoreError::BadCursor)
}

/// `spec` from the boundary `b` on (past it in the spec's order), its own sort-key
/// condition kept; `None` when nothing can be past it (a condition that ends before it, or
/// one item by equality). Inclusive bounds include `b`, which the caller leaves out.
fn resumed(spec: &Spec, sort_attr: &'static str, b: &str) -> Option<Spec> {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let text = |a: &AttributeValue| a.as_s().ok().cloned().unwrap_or_default();
    let own = spec.sk.as_ref().map(|(_, c)| c);
    let cond = if spec.ascending {
        match own {
            None => Cond::Gt(s(b)),
            Some(Cond::Lt(x)) if b < text(x).as_str() => Cond::Between(s(b), x.clone()),
            Some(Cond::Between(lo, hi)) if b <= text(hi).as_str() => {
                Cond::Between(s(&text(lo).max(b.to_string())), hi.clone())
            }
            Some(Cond::BeginsWith(p)) => Cond::Between(s(b), s(&format!("{p}\u{10FFFF}"))),
            _ => return None,
        }
    } else {
        match own {
            None => Cond::Lt(s(b)),
            Some(Cond::Lt(x)) => Cond::Lt(s(&text(x).min(b.to_string()))),
            Some(Cond::Between(lo, hi)) if b >= text(lo).as_str() => {
                Cond::Between(lo.clone(), s(&text(hi).min(b.to_string())))
            }
            Some(Cond::BeginsWith(p)) if b >= p.as_str() => Cond::Between(s(p), s(b)),
            _ => return None,
        }
    };
    Some(Spec {
        sk: Some((sort_attr, cond)),
        ..spec.clone()
    })
}

/// Whether `v` meets `spec`'s own sort-key condition where a resumed one is wider (a strict
/// upper bound read as an inclusive one).
fn within(spec: &Spec, v: &str) -> bool {
    match spec.sk.as_ref().map(|(_, c)| c) {
        Some(Cond::Lt(x)) => x.as_s().is_ok_and(|x| v < x.as_str()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ascending: bool, sk: Option<Cond>) -> Spec {
        Spec {
            table: "t".into(),
            index: Some("i"),
            pk: ("p", AttributeValue::S("x".into())),
            sk: sk.map(|c| ("s", c)),
            filters: Vec::new(),
            ascending,
            key_attrs: vec!["k", "p", "s"],
            projection: None,
        }
    }

    fn cond(spec: Option<Spec>) -> Option<Vec<String>> {
        let text = |a: &AttributeValue| a.as_s().unwrap().clone();
        spec.map(|s| match s.sk.unwrap().1 {
            Cond::Lt(v) => vec!["<".into(), text(&v)],
            Cond::Gt(v) => vec![">".into(), text(&v)],
            Cond::Between(a, b) => vec![text(&a), text(&b)],
            other => vec![format!("{other:?}")],
        })
    }

    #[test]
    fn a_shard_resumes_past_the_boundary_within_its_own_condition() {
        let s = |v: &str| AttributeValue::S(v.into());
        // Newest first: below the boundary.
        assert_eq!(
            cond(resumed(&spec(false, None), "s", "m")),
            Some(vec!["<".into(), "m".into()])
        );
        assert_eq!(
            cond(resumed(
                &spec(false, Some(Cond::BeginsWith("2026-11-25".into()))),
                "s",
                "2026-11-25T10"
            )),
            Some(vec!["2026-11-25".into(), "2026-11-25T10".into()])
        );
        assert_eq!(
            cond(resumed(
                &spec(false, Some(Cond::Between(s("b"), s("y")))),
                "s",
                "m"
            )),
            Some(vec!["b".into(), "m".into()])
        );
        // A boundary before the condition's start: nothing is left.
        assert!(resumed(&spec(false, Some(Cond::Between(s("n"), s("y")))), "s", "m").is_none());
        // Oldest first: above it.
        assert_eq!(
            cond(resumed(&spec(true, None), "s", "m")),
            Some(vec![">".into(), "m".into()])
        );
        assert_eq!(
            cond(resumed(&spec(true, Some(Cond::Lt(s(":")))), "s", "0005")),
            Some(vec!["0005".into(), ":".into()])
        );
        assert!(resumed(&spec(true, Some(Cond::Lt(s("0003")))), "s", "0005").is_none());
        assert!(resumed(&spec(true, Some(Cond::Eq(s("m")))), "s", "m").is_none());
        // A strict upper bound read as inclusive: its end is left out.
        assert!(!within(&spec(true, Some(Cond::Lt(s(":")))), ":"));
        assert!(within(&spec(true, Some(Cond::Lt(s(":")))), "0009"));
    }

    #[test]
    fn a_page_shows_nothing_past_where_a_shard_stopped() {
        let item = |v: &str| (0u32, v.to_string(), Item::new());
        // Newest first, two to a page: a full page's boundary is its last item.
        let (items, b) = merge(vec![item("3"), item("9"), item("5")], &[], false, 2);
        assert_eq!((items.len(), b.as_deref()), (2, Some("5")));
        // A shard stopped at "6" (a filter skipped what it read): "5" and "3" wait, and the
        // next page starts below "6".
        let (items, b) = merge(
            vec![item("3"), item("9"), item("5")],
            &["6".into()],
            false,
            2,
        );
        assert_eq!((items.len(), b.as_deref()), (1, Some("6")));
        // Nothing more anywhere: no next page.
        let (items, b) = merge(vec![item("3")], &[], true, 2);
        assert_eq!((items.len(), b), (1, None));
    }

    #[test]
    fn a_cursor_is_one_boundary() {
        assert_eq!(
            open(json!({"b": "2026-12-06T10:00:00.000Z#e"})).unwrap(),
            "2026-12-06T10:00:00.000Z#e"
        );
        assert!(open(json!({"b": ""})).is_err());
        assert!(open(json!({"0": "-"})).is_err());
    }
}
