//! AWS's partitions, scaled down: which partitions a request's capacity units land on, the
//! limits they are held to, and what each key spent.
//!
//! **Writes.** AWS bills a write by the larger of the item's size before and after it,
//! rounded up to 1 KB, on the item's partition; and for each index the item is in before
//! or after, by the size of what the index projects, on the *index key's* partition (a
//! global index) or on the item's own (a local one): a new copy, a removed copy, both when
//! the index key changes, an updated copy when a projected attribute changes, nothing when
//! none does. A transaction bills each of these twice (AWS's documented example: a 2.5 KB
//! item in a transaction, with one global index whose key it has, is 6 units on the table's
//! partition and 6 on the index's). A `ConditionCheck` bills its item's size.
//!
//! To know what an `Update` or a `Delete` leaves behind, the proxy reads the items a write
//! touches just before it (not when its condition says the item does not exist yet) and
//! just after it (updates only), straight from DynamoDB Local: requests that are neither
//! faulted nor counted. They are not atomic with the write; under concurrent writes to one
//! item a copy can be billed to the key a neighbour's write left, which is as hot.
//!
//! **Reads** are billed as DynamoDB Local reports them (4 KB units, half when eventually
//! consistent, a query by the bytes it read) on the partition they read: a `GetItem`'s
//! item, a `Query`'s partition key (of the table or the index), each key of a batch; a
//! `Scan` reads every partition and is held to the table's limit only.
//!
//! **Limits** ([`crate::Limits`]) are token buckets holding one second's worth: one per
//! partition, and one per table and per global index (on-demand's per-table quota counts
//! each global index on its own). A request is admitted while none of the buckets it will
//! charge is in debt, as far as they are known before it (an update that moves an item to
//! a new index key charges that key after it, without having been checked against it); its
//! exact units are charged once DynamoDB Local answered, so a bucket can go into debt, and
//! then it refuses until it has paid. A refusal names its reason as AWS does
//! (`TableWriteKeyRangeThroughputExceeded`, `IndexWriteKeyRangeThroughputExceeded`,
//! `…AccountLimitExceeded` for a table's or index's quota).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::capacity::item_size;
use crate::expr::resolve;
use crate::items::{Index, Projection, TableSchema, Target, Write};
use crate::{KeyUse, Limits};

pub(crate) type Item = Map<String, Value>;

/// Units one request spends on one partition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Charge {
    /// The request's item (a transaction's action, a batch's key) it is spent for.
    pub(crate) item: usize,
    /// `table` or `table/index/name`: whose quota it counts against.
    pub(crate) resource: String,
    /// Whether it is a global index's copy (its reason says `Index`).
    pub(crate) index: bool,
    /// `resource|attribute=value`, or `None` for a scan (every partition).
    pub(crate) partition: Option<String>,
    pub(crate) units: f64,
}

/// A key attribute's value as text: `{"S": "a"}` is `a`.
fn key_text(v: &Value) -> String {
    match v.as_object().and_then(|o| o.iter().next()) {
        Some((_, Value::String(s))) => s.clone(),
        Some((_, other)) => other.to_string(),
        None => v.to_string(),
    }
}

fn partition_of(resource: &str, attr: &str, item: &Item) -> Option<String> {
    item.get(attr)
        .map(|v| format!("{resource}|{attr}={}", key_text(v)))
}

fn units_of(bytes: usize, per: usize) -> f64 {
    bytes.div_ceil(per).max(1) as f64
}

/// What `index` holds of `item`: the table's keys, the index's keys, and what it projects.
fn projected(item: &Item, index: &Index, table_keys: &[String]) -> Item {
    match &index.projection {
        Projection::All => item.clone(),
        Projection::KeysOnly | Projection::Include(_) => item
            .iter()
            .filter(|(k, _)| {
                table_keys.contains(k)
                    || index.keys.contains(k)
                    || matches!(&index.projection, Projection::Include(a) if a.contains(k))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// The item a write names (a `Put`'s item, or just the key of the others).
fn named(w: &Write) -> Item {
    match &w.target {
        Target::Key(v) | Target::Item(v) => v.as_object().cloned().unwrap_or_default(),
    }
}

/// The units a successful write of `w` (the request's item number `item`) spends, with the
/// item as it was before (`old`) and after (`new`); `times` is 2 in a transaction.
pub(crate) fn write_charges(
    schema: &TableSchema,
    w: &Write,
    item: usize,
    old: Option<&Item>,
    new: Option<&Item>,
    times: f64,
) -> Vec<Charge> {
    let key = named(w);
    let table = w.table.as_str();
    let base = schema
        .keys
        .first()
        .and_then(|pk| partition_of(table, pk, &key));
    let size = old
        .map(item_size)
        .max(new.map(item_size))
        .unwrap_or(0)
        .max(item_size(&key));
    let mut out = vec![Charge {
        item,
        resource: table.to_string(),
        index: false,
        partition: base.clone(),
        units: times * units_of(size, 1024),
    }];
    if w.kind == "ConditionCheck" {
        return out;
    }
    for ix in &schema.indexes {
        let within = |it: Option<&Item>| -> Option<Item> {
            it.filter(|i| ix.keys.iter().all(|k| i.contains_key(k)))
                .cloned()
        };
        let (o, n) = (within(old), within(new));
        let resource = if ix.global {
            format!("{table}/index/{}", ix.name)
        } else {
            table.to_string()
        };
        let part = |it: &Item| {
            if ix.global {
                ix.keys
                    .first()
                    .and_then(|pk| partition_of(&resource, pk, it))
            } else {
                base.clone()
            }
        };
        let mut copy = |it: &Item, bytes: usize| {
            out.push(Charge {
                item,
                resource: resource.clone(),
                index: ix.global,
                partition: part(it),
                units: times * units_of(bytes, 1024),
            })
        };
        let key_of = |it: &Item| -> Vec<Option<Value>> {
            ix.keys.iter().map(|k| it.get(k).cloned()).collect()
        };
        match (&o, &n) {
            (Some(o), Some(n)) if key_of(o) == key_of(n) => {
                let (po, pn) = (
                    projected(o, ix, &schema.keys),
                    projected(n, ix, &schema.keys),
                );
                if po != pn {
                    copy(n, item_size(&po).max(item_size(&pn)));
                }
            }
            _ => {
                if let Some(o) = &o {
                    copy(o, item_size(&projected(o, ix, &schema.keys)));
                }
                if let Some(n) = &n {
                    copy(n, item_size(&projected(n, ix, &schema.keys)));
                }
            }
        }
    }
    out
}

/// Whether a write's own condition says its item does not exist before it (so a write that
/// succeeds had nothing before it, and nothing needs reading): an
/// `attribute_not_exists(<a key attribute>)` that no `OR` can get around.
pub(crate) fn new_item(w: &Write, table_keys: &[String]) -> bool {
    let Some(c) = w.action["ConditionExpression"].as_str() else {
        return false;
    };
    if words(c).any(|t| t.eq_ignore_ascii_case("OR") || t.eq_ignore_ascii_case("NOT")) {
        return false;
    }
    c.split("attribute_not_exists(").skip(1).any(|rest| {
        let arg = rest.split(')').next().unwrap_or_default().trim();
        table_keys.iter().any(|k| k == resolve(&w.action, arg))
    })
}

/// An expression's words (split at whitespace and parentheses).
fn words(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|t| !t.is_empty())
}

/// Where the keyword `kw` (upper case) starts in `expr` as a word of its own.
fn keyword(expr: &str, kw: &str) -> Option<usize> {
    let upper = expr.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    let mut from = 0;
    while let Some(i) = upper[from..].find(kw).map(|i| i + from) {
        let before = i == 0 || bytes[i - 1].is_ascii_whitespace();
        let after = bytes
            .get(i + kw.len())
            .is_none_or(|b| b.is_ascii_whitespace());
        if before && after {
            return Some(i);
        }
        from = i + kw.len();
    }
    None
}

/// Splits at `sep` outside parentheses.
fn top_level(s: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The item as a write is expected to leave it, before it is made: a `Put`'s item, nothing
/// after a `Delete`, and an `Update`'s `SET a = :v` and `SET a = if_not_exists(a, :v)`
/// applied to what was there (what else it does is known only after).
pub(crate) fn expected_after(w: &Write, old: Option<&Item>) -> Option<Item> {
    match w.kind {
        "Put" => Some(named(w)),
        "Delete" => None,
        "ConditionCheck" => old.cloned(),
        _ => {
            let mut item = old.cloned().unwrap_or_else(|| named(w));
            let expr = w.action["UpdateExpression"].as_str().unwrap_or_default();
            let Some(at) = keyword(expr, "SET") else {
                return Some(item);
            };
            let rest = &expr[at + 3..];
            let end = ["REMOVE", "ADD", "DELETE"]
                .iter()
                .filter_map(|k| keyword(rest, k))
                .min()
                .unwrap_or(rest.len());
            for assignment in top_level(&rest[..end], ',') {
                let Some((lhs, rhs)) = assignment.split_once('=') else {
                    continue;
                };
                let (lhs, rhs) = (lhs.trim(), rhs.trim());
                if lhs.contains(['.', '[']) {
                    continue;
                }
                let name = resolve(&w.action, lhs).to_string();
                let placeholder = if let Some(args) = rhs
                    .strip_prefix("if_not_exists(")
                    .and_then(|a| a.strip_suffix(')'))
                {
                    let args = top_level(args, ',');
                    let checked = resolve(&w.action, args.first().map_or("", |a| a.trim()));
                    if item.contains_key(checked) {
                        continue;
                    }
                    args.get(1).map(|v| v.trim()).unwrap_or("")
                } else {
                    rhs
                };
                if let Some(v) = w.action["ExpressionAttributeValues"].get(placeholder) {
                    item.insert(name, v.clone());
                }
            }
            Some(item)
        }
    }
}

/// What one read reads: its table, the resource whose quota it counts against, whether that
/// is a global index, and the partition (`None`: a scan reads them all).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Read {
    pub(crate) table: String,
    pub(crate) resource: String,
    pub(crate) index: bool,
    pub(crate) partition: Option<String>,
}

/// The partitions a read request reads, in the order of its keys.
pub(crate) fn read_targets(
    op: &str,
    body: &Value,
    schema_of: impl Fn(&str) -> Option<TableSchema>,
) -> Vec<Read> {
    let base = |table: &str, key: &Value| -> Read {
        let part = schema_of(table).and_then(|s| {
            let k = key.as_object()?;
            partition_of(table, s.keys.first()?, k)
        });
        Read {
            table: table.to_string(),
            resource: table.to_string(),
            index: false,
            partition: part,
        }
    };
    match op {
        "GetItem" => {
            let table = body["TableName"].as_str().unwrap_or_default();
            vec![base(table, &body["Key"])]
        }
        "Query" => {
            let table = body["TableName"].as_str().unwrap_or_default();
            let schema = schema_of(table).unwrap_or_default();
            let index = body["IndexName"]
                .as_str()
                .and_then(|n| schema.indexes.iter().find(|i| i.name == n));
            let (resource, global, pk) = match index {
                Some(ix) if ix.global => (
                    format!("{table}/index/{}", ix.name),
                    true,
                    ix.keys.first().cloned(),
                ),
                _ => (table.to_string(), false, schema.keys.first().cloned()),
            };
            let expr = body["KeyConditionExpression"].as_str().unwrap_or_default();
            // `pk = :v` among the conditions, however spaced, bracketed or cased.
            let terms: Vec<&str> = words(expr).collect();
            let value = pk.as_deref().and_then(|pk| {
                let joined = terms.join(" ");
                joined
                    .split(" AND ")
                    .flat_map(|p| p.split(" and "))
                    .flat_map(|p| p.split(" And "))
                    .filter_map(|p| p.split_once('='))
                    .find(|(l, _)| resolve(body, l.trim()) == pk)
                    .and_then(|(_, r)| body["ExpressionAttributeValues"].get(r.trim()))
            });
            let part = match (pk, value) {
                (Some(pk), Some(v)) => Some(format!("{resource}|{pk}={}", key_text(v))),
                _ => None,
            };
            vec![Read {
                table: table.to_string(),
                resource,
                index: global,
                partition: part,
            }]
        }
        "BatchGetItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(table, r)| {
                r["Keys"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|k| base(table, &k))
                    .collect::<Vec<_>>()
            })
            .collect(),
        "TransactGetItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                let get = &g["Get"];
                base(get["TableName"].as_str().unwrap_or_default(), &get["Key"])
            })
            .collect(),
        _ => {
            let table = body["TableName"].as_str().unwrap_or_default();
            vec![Read {
                table: table.to_string(),
                resource: table.to_string(),
                index: false,
                partition: None,
            }]
        }
    }
}

/// What a read request will be charged to, before its units are known.
pub(crate) fn expected_reads(targets: &[Read]) -> Vec<Charge> {
    targets
        .iter()
        .enumerate()
        .map(|(i, r)| Charge {
            item: i,
            resource: r.resource.clone(),
            index: r.index,
            partition: r.partition.clone(),
            units: 0.0,
        })
        .collect()
}

/// Spreads each table's reported read units over the partitions read in it.
pub(crate) fn read_charges(targets: &[Read], units_by_table: &[(String, f64)]) -> Vec<Charge> {
    let mut out = Vec::new();
    for (table, units) in units_by_table {
        let mine: Vec<(usize, &Read)> = targets
            .iter()
            .enumerate()
            .filter(|(_, t)| &t.table == table)
            .collect();
        let each = units / mine.len().max(1) as f64;
        for (i, r) in mine {
            out.push(Charge {
                item: i,
                resource: r.resource.clone(),
                index: r.index,
                partition: r.partition.clone(),
                units: each,
            });
        }
    }
    out
}

/// A request refused for throughput: which of its items, why, and on what.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) item: usize,
    /// AWS's throttling reason, e.g. `IndexWriteKeyRangeThroughputExceeded`.
    pub(crate) reason: String,
    /// `table` or `table/index/name`.
    pub(crate) resource: String,
    pub(crate) index: bool,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl Bucket {
    fn at(&mut self, now: Instant, rate: f64, window_s: f64) -> &mut Bucket {
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(rate * window_s.max(1.0));
        self.refilled = now;
        self
    }
}

#[derive(Default)]
struct State {
    write: HashMap<String, Bucket>,
    read: HashMap<String, Bucket>,
    keys: HashMap<String, KeyUse>,
}

/// A partition's and a table's limits, for writes or reads.
fn rates(limits: &Limits, write: bool) -> (Rate, Rate) {
    let window_s = limits.window_s;
    let (p, t) = if write {
        (limits.partition_write_per_s, limits.table_write_per_s)
    } else {
        (limits.partition_read_per_s, limits.table_read_per_s)
    };
    (Rate { per_s: p, window_s }, Rate { per_s: t, window_s })
}

/// The buckets and what each key spent.
#[derive(Default)]
pub(crate) struct Ledger(Mutex<State>);

impl Ledger {
    /// The first of `charges` whose partition or resource is in debt (none: admitted).
    pub(crate) fn refusal(
        &self,
        limits: &Limits,
        charges: &[Charge],
        write: bool,
    ) -> Option<Refusal> {
        let (part_rate, table_rate) = rates(limits, write);
        let mut st = self.0.lock().ok()?;
        let now = Instant::now();
        let kind = if write { "Write" } else { "Read" };
        for c in charges {
            let what = if c.index { "Index" } else { "Table" };
            let buckets = if write { &mut st.write } else { &mut st.read };
            let mut limit = None;
            if let (Some(p), true) = (&c.partition, part_rate.on()) {
                if in_debt(buckets, p, now, part_rate) {
                    limit = Some(("KeyRangeThroughputExceeded", p.clone()));
                }
            }
            if limit.is_none() && table_rate.on() && in_debt(buckets, &c.resource, now, table_rate)
            {
                limit = Some(("AccountLimitExceeded", c.resource.clone()));
            }
            if let Some((why, key)) = limit {
                st.keys
                    .entry(key.clone())
                    .or_insert_with(|| KeyUse::new(&key))
                    .throttled += 1;
                return Some(Refusal {
                    item: c.item,
                    reason: format!("{what}{kind}{why}"),
                    resource: c.resource.clone(),
                    index: c.index,
                });
            }
        }
        None
    }

    /// Every item (of a batch) with a charge whose partition or resource is in debt, each
    /// counted as refused.
    pub(crate) fn refused_items(
        &self,
        limits: &Limits,
        charges: &[Charge],
        write: bool,
    ) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for c in charges {
            if out.contains(&c.item) {
                continue;
            }
            if self
                .refusal(limits, std::slice::from_ref(c), write)
                .is_some()
            {
                out.push(c.item);
            }
        }
        out
    }

    /// Spends `charges` from their partitions' and resources' buckets, and notes them by key.
    pub(crate) fn spend(&self, limits: &Limits, charges: &[Charge], write: bool) {
        let (part_rate, table_rate) = rates(limits, write);
        let Ok(mut st) = self.0.lock() else {
            return;
        };
        let now = Instant::now();
        for c in charges {
            let buckets = if write { &mut st.write } else { &mut st.read };
            if let (Some(p), true) = (&c.partition, part_rate.on()) {
                take(buckets, p, now, part_rate, c.units);
            }
            if table_rate.on() {
                take(buckets, &c.resource, now, table_rate, c.units);
            }
            let key = c
                .partition
                .clone()
                .unwrap_or_else(|| format!("{}|*", c.resource));
            let used = st
                .keys
                .entry(key.clone())
                .or_insert_with(|| KeyUse::new(&key));
            if write {
                used.write += c.units;
            } else {
                used.read += c.units;
            }
        }
    }

    /// Every key that spent or was refused anything, the most used first.
    pub(crate) fn keys(&self) -> Vec<KeyUse> {
        let mut all: Vec<KeyUse> = self
            .0
            .lock()
            .map(|st| st.keys.values().cloned().collect())
            .unwrap_or_default();
        all.sort_by(|a, b| {
            (b.write + b.read)
                .total_cmp(&(a.write + a.read))
                .then(b.throttled.cmp(&a.throttled))
                .then(a.key.cmp(&b.key))
        });
        all
    }
}

/// A bucket's limit: units a second, and seconds of them it keeps.
#[derive(Clone, Copy)]
struct Rate {
    per_s: f64,
    window_s: f64,
}

impl Rate {
    fn on(self) -> bool {
        self.per_s > 0.0
    }
}

fn bucket<'a>(
    buckets: &'a mut HashMap<String, Bucket>,
    key: &str,
    now: Instant,
    rate: Rate,
) -> &'a mut Bucket {
    buckets
        .entry(key.to_string())
        .or_insert(Bucket {
            tokens: rate.per_s,
            refilled: now,
        })
        .at(now, rate.per_s, rate.window_s)
}

fn in_debt(buckets: &mut HashMap<String, Bucket>, key: &str, now: Instant, rate: Rate) -> bool {
    bucket(buckets, key, now, rate).tokens < 0.0
}

fn take(buckets: &mut HashMap<String, Bucket>, key: &str, now: Instant, rate: Rate, units: f64) {
    bucket(buckets, key, now, rate).tokens -= units;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items;
    use serde_json::json;

    fn schema() -> TableSchema {
        TableSchema {
            keys: vec!["pk".into(), "sk".into()],
            indexes: vec![
                Index {
                    name: "day-index".into(),
                    global: true,
                    keys: vec!["day".into(), "at".into()],
                    projection: Projection::All,
                },
                Index {
                    name: "kind-index".into(),
                    global: true,
                    keys: vec!["kind".into()],
                    projection: Projection::KeysOnly,
                },
            ],
        }
    }

    fn item(v: Value) -> Item {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_transactions_item_with_an_index_key_is_billed_twice_on_two_partitions() {
        // AWS's arithmetic: a 2.5 KB item written in a transaction, with one global index
        // whose key it has, is 6 units on the table's partition and 6 on the index's.
        let blob = "x".repeat(2500 - 30);
        let put = json!({"TransactItems": [{"Put": {"TableName": "t", "Item": {
            "pk": {"S": "a"}, "sk": {"S": "1"}, "day": {"S": "2026-12-06#07"}, "at": {"S": "t1"},
            "blob": {"S": blob}}}}]});
        let w = &items::writes("TransactWriteItems", &put)[0];
        let new = named(w);
        assert_eq!(item_size(&new), 2500);
        let charges = write_charges(&schema(), w, 0, None, Some(&new), 2.0);
        let by: Vec<(Option<&str>, f64)> = charges
            .iter()
            .map(|c| (c.partition.as_deref(), c.units))
            .collect();
        assert_eq!(
            by,
            vec![
                (Some("t|pk=a"), 6.0),
                (Some("t/index/day-index|day=2026-12-06#07"), 6.0),
            ]
        );
        assert!(charges[1].index && !charges[0].index);
    }

    #[test]
    fn an_index_key_that_changes_bills_the_old_partition_and_the_new_and_a_keys_only_index_nothing_else(
    ) {
        let s = schema();
        let old = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "kind": {"S": "started#03"}, "n": {"N": "1"}}),
        );
        let new = item(
            json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "kind": {"S": "failed#03"}, "n": {"N": "1"}}),
        );
        let upd = json!({"TableName": "t", "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
            "UpdateExpression": "SET #k = :k", "ExpressionAttributeNames": {"#k": "kind"},
            "ExpressionAttributeValues": {":k": {"S": "failed#03"}}});
        let w = &items::writes("UpdateItem", &upd)[0];
        assert_eq!(
            expected_after(w, Some(&old)),
            Some(new.clone()),
            "SET is applied"
        );
        let parts: Vec<String> = write_charges(&s, w, 0, Some(&old), Some(&new), 1.0)
            .into_iter()
            .filter_map(|c| c.partition)
            .collect();
        assert_eq!(
            parts,
            vec![
                "t|pk=a".to_string(),
                "t/index/kind-index|kind=started#03".to_string(),
                "t/index/kind-index|kind=failed#03".to_string(),
            ]
        );
        // A change of an attribute the keys-only index does not project costs it nothing.
        let mut more = new.clone();
        more.insert("n".into(), json!({"N": "2"}));
        let charges = write_charges(&s, w, 0, Some(&new), Some(&more), 1.0);
        assert_eq!(charges.len(), 1, "{charges:?}");
    }

    #[test]
    fn a_query_reads_the_partition_of_its_key_on_the_index_it_names() {
        let q = json!({"TableName": "t", "IndexName": "day-index",
            "KeyConditionExpression": "#d = :d AND #a > :a",
            "ExpressionAttributeNames": {"#d": "day", "#a": "at"},
            "ExpressionAttributeValues": {":d": {"S": "2026-12-06#01"}, ":a": {"S": "x"}}});
        let targets = read_targets("Query", &q, |_| Some(schema()));
        assert_eq!(
            targets[0].partition.as_deref(),
            Some("t/index/day-index|day=2026-12-06#01")
        );
        let charges = read_charges(&targets, &[("t".into(), 1.5)]);
        assert_eq!(charges[0].units, 1.5);
        assert!(charges[0].index);
        // Checked before the units are known: 6 read units a second, 7 spent.
        let ledger = Ledger::default();
        let limits = Limits::scaled(0.002);
        let mut heavy = charges.clone();
        heavy[0].units = 7.0;
        ledger.spend(&limits, &heavy, false);
        let refused = ledger.refusal(&limits, &expected_reads(&targets), false);
        assert_eq!(
            refused.map(|r| r.reason).as_deref(),
            Some("IndexReadKeyRangeThroughputExceeded")
        );
    }

    #[test]
    fn conditions_and_expressions_are_read_as_dynamodb_reads_them() {
        let keys = vec!["pk".to_string(), "sk".to_string()];
        let put = |cond: &str| {
            let body = json!({"TableName": "t", "Item": {"pk": {"S": "a"}},
                "ConditionExpression": cond, "ExpressionAttributeNames": {"#p": "pk"}});
            items::writes("PutItem", &body).remove(0)
        };
        assert!(new_item(&put("attribute_not_exists(#p)"), &keys));
        assert!(
            !new_item(&put("attribute_not_exists(version)"), &keys),
            "not a key"
        );
        assert!(!new_item(
            &put("attribute_not_exists(pk) OR expires_at <= :now"),
            &keys
        ));
        // Keywords inside names are names; `if_not_exists` checks its own argument.
        let upd = json!({"TableName": "t", "Key": {"pk": {"S": "a"}},
            "UpdateExpression": "SET #OFFSET = :o, is_delete = :d, day = if_not_exists(first, :d) ADD n :one",
            "ExpressionAttributeNames": {"#OFFSET": "offset"},
            "ExpressionAttributeValues": {":o": {"N": "1"}, ":d": {"S": "x"}, ":one": {"N": "1"}}});
        let w = &items::writes("UpdateItem", &upd)[0];
        let after = expected_after(w, None).unwrap();
        assert_eq!(after["offset"], json!({"N": "1"}));
        assert_eq!(after["is_delete"], json!({"S": "x"}));
        assert_eq!(after["day"], json!({"S": "x"}));
        assert!(!after.contains_key(""));
        let q = json!({"TableName": "t", "KeyConditionExpression": "( #p = :p )\n\tAnd begins_with(sk, :s)",
            "ExpressionAttributeNames": {"#p": "pk"},
            "ExpressionAttributeValues": {":p": {"S": "v"}, ":s": {"S": "x"}}});
        let targets = read_targets("Query", &q, |_| Some(schema()));
        assert_eq!(targets[0].partition.as_deref(), Some("t|pk=v"));
    }

    #[test]
    fn a_partition_in_debt_refuses_with_the_reason_aws_gives_until_it_has_paid() {
        let ledger = Ledger::default();
        let limits = Limits::scaled(0.002);
        assert_eq!(limits.partition_write_per_s, 2.0);
        assert_eq!(limits.table_write_per_s, 80.0);
        let c = vec![Charge {
            item: 0,
            resource: "t/index/day-index".into(),
            index: true,
            partition: Some("t/index/day-index|day=d".into()),
            units: 6.0,
        }];
        assert_eq!(ledger.refusal(&limits, &c, true), None);
        ledger.spend(&limits, &c, true);
        let refused = ledger.refusal(&limits, &c, true).expect("2 - 6 < 0");
        assert_eq!(refused.reason, "IndexWriteKeyRangeThroughputExceeded");
        assert_eq!(ledger.refusal(&limits, &c, false), None, "reads are apart");
        assert_eq!(ledger.refusal(&Limits::unlimited(), &c, true), None);
        let keys = ledger.keys();
        assert_eq!((keys[0].write, keys[0].throttled), (6.0, 1));
    }
}
