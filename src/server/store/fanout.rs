//! A page of one write-sharded index key (docs/dynamodb.md, "No hot partition key"): a key
//! that one value per day or per group would make hot is spread over shards (`<value>#NN`),
//! each its own partition, and a list reads every shard and merges them in the index's
//! order. The cursor holds each shard's position (where it goes on, or spent), sealed
//! once: it stays as opaque as one partition's.

use std::collections::BTreeMap;

use serde_json::Value;

use super::cursor::{self, Binding};
use super::query::{self, From, Item, Spec};
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

/// One shard's query: its number (its place in the cursor) and what it reads. Every
/// shard's query differs from the others' by its partition only.
pub struct Shard {
    pub id: u32,
    pub spec: Spec,
}

/// A merged page: the items in the index's order (with the shard each came from), and
/// the cursor of the next page.
pub struct Merged {
    pub items: Vec<(u32, Item)>,
    pub next: Option<String>,
}

/// Up to `size` items of `shards` merged by `sort_attr` (a string attribute: the index's
/// sort key), in the order of the shards' specs, from `cursor` (one this returned under
/// `binding`). Each shard not spent is read once, for at most `size` items.
pub async fn page(
    store: &Store,
    shards: &[Shard],
    sort_attr: &str,
    binding: &Binding,
    cursor: Option<&str>,
    size: usize,
) -> Result<Merged, StoreError> {
    let Some(first) = shards.first() else {
        return Ok(Merged {
            items: Vec::new(),
            next: None,
        });
    };
    let key_attrs = first.spec.key_attrs.clone();
    let ascending = first.spec.ascending;
    let positions = match cursor {
        Some(c) => Positions::open(store.cursors().open(binding, c)?, &key_attrs)?,
        None => Positions::default(),
    };
    let mut found: Vec<(u32, Item, Item)> = Vec::new();
    let mut read: BTreeMap<u32, ShardRead> = BTreeMap::new();
    // Every shard at once: a page costs the slowest shard's read, not their sum.
    let reads = shards.iter().filter_map(|shard| {
        let from = match positions.of(shard.id) {
            Position::Spent => return None,
            Position::Start => From::First,
            Position::After(k) => From::After(k.clone()),
        };
        Some(async move {
            query::page_from(store, &shard.spec, from, size)
                .await
                .map(|page| (shard, page))
        })
    });
    for (shard, page) in futures_util::future::try_join_all(reads).await? {
        read.insert(
            shard.id,
            ShardRead {
                fetched: page.items.len(),
                onward: page.next.clone(),
            },
        );
        for item in page.items {
            let k = shard.spec.key_of(&item);
            found.push((shard.id, item, k));
        }
    }
    let sk = |i: &Item| {
        i.get(sort_attr)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    found.sort_by_key(|(_, i, _)| sk(i));
    if !ascending {
        found.reverse();
    }
    let taken: Vec<_> = found.into_iter().take(size + 1).collect();
    let has_more = taken.len() > size || read.values().any(|r| r.onward.is_some());
    let page: Vec<_> = taken.into_iter().take(size).collect();
    let next = advance(&positions, &read, &page);
    let next = has_more.then(|| store.cursors().seal(binding, next.to_json()));
    Ok(Merged {
        items: page.into_iter().map(|(s, i, _)| (s, i)).collect(),
        next,
    })
}

/// What one shard's read of a page gave: how many items, and where its reads go on (the
/// last item's key, or where the reads stopped when a filter skipped everything).
struct ShardRead {
    fetched: usize,
    onward: Option<Item>,
}

/// Where each shard goes on after a page showed `page` (shard, item, key) of what `read`
/// found: spent once all it had was shown; after its last item shown; past what its reads
/// skipped when they found nothing (a filter that matches nothing in a long stretch must
/// not hand out the same cursor again); else where it was.
fn advance(
    positions: &Positions,
    read: &BTreeMap<u32, ShardRead>,
    page: &[(u32, Item, Item)],
) -> Positions {
    let mut next = positions.clone();
    for (shard, r) in read {
        let shown: Vec<_> = page.iter().filter(|(s, _, _)| s == shard).collect();
        if r.onward.is_none() && shown.len() == r.fetched {
            next.set(*shard, Position::Spent);
        } else if let Some((_, _, c)) = shown.last() {
            next.set(*shard, Position::After(c.clone()));
        } else if let (0, Some(onward)) = (r.fetched, &r.onward) {
            next.set(*shard, Position::After(onward.clone()));
        }
    }
    next
}

#[derive(Clone, Debug, PartialEq)]
enum Position {
    Start,
    After(Item),
    Spent,
}

/// Each shard's position in a paged list.
#[derive(Clone, Debug, Default)]
struct Positions(BTreeMap<u32, Position>);

impl Positions {
    /// The positions a cursor held: `{"<shard>": <key> | "-"}`.
    fn open(value: Value, key_attrs: &[&str]) -> Result<Positions, StoreError> {
        let Value::Object(map) = value else {
            return Err(StoreError::BadCursor);
        };
        let mut positions = Positions::default();
        for (shard, pos) in map {
            let shard: u32 = shard.parse().map_err(|_| StoreError::BadCursor)?;
            let pos = match pos {
                Value::String(s) if s == "-" => Position::Spent,
                key => Position::After(cursor::key_of_json(&key, key_attrs)?),
            };
            positions.set(shard, pos);
        }
        Ok(positions)
    }

    fn of(&self, shard: u32) -> &Position {
        self.0.get(&shard).unwrap_or(&Position::Start)
    }

    fn set(&mut self, shard: u32, p: Position) {
        self.0.insert(shard, p);
    }

    fn to_json(&self) -> Value {
        let map: serde_json::Map<String, Value> = self
            .0
            .iter()
            .filter_map(|(shard, p)| match p {
                Position::Start => None,
                Position::After(k) => Some((shard.to_string(), cursor::key_json(k))),
                Position::Spent => Some((shard.to_string(), Value::String("-".into()))),
            })
            .collect();
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn key(sk: &str) -> Item {
        [("outbox_sk".to_string(), AttributeValue::S(sk.into()))].into()
    }

    #[test]
    fn a_shard_whose_reads_matched_nothing_goes_on_past_them() {
        let start = Positions::default();
        let read: BTreeMap<u32, ShardRead> = [
            // Filtered: 5,500 items read, none matched, the reads stopped here.
            (
                0,
                ShardRead {
                    fetched: 0,
                    onward: Some(key("0005")),
                },
            ),
            // Two found, one shown.
            (
                1,
                ShardRead {
                    fetched: 2,
                    onward: Some(key("0002")),
                },
            ),
            // Ended with nothing.
            (
                2,
                ShardRead {
                    fetched: 0,
                    onward: None,
                },
            ),
        ]
        .into();
        let page = vec![(1, key("0001"), key("0001"))];
        let next = advance(&start, &read, &page);
        assert_eq!(
            next.of(0),
            &Position::After(key("0005")),
            "not the same cursor again"
        );
        assert_eq!(next.of(1), &Position::After(key("0001")));
        assert_eq!(next.of(2), &Position::Spent);
        // A shard that found items none of which made the page stays where it was.
        let read: BTreeMap<u32, ShardRead> = [(
            3,
            ShardRead {
                fetched: 4,
                onward: Some(key("0009")),
            },
        )]
        .into();
        assert_eq!(advance(&start, &read, &[]).of(3), &Position::Start);
    }
}
