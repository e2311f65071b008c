//! Index lag, as AWS has it: a global index is updated asynchronously, so for a while
//! after an item is written a query of the index may
//! - not see it yet (a new item);
//! - see its **old version** (an item updated in place);
//! - see a **ghost**: the item as it was, where it no longer is (deleted, or moved to
//!   another index key);
//! - count any of these (`Select=COUNT` lags as the items do).
//!
//! The proxy remembers when each item was last written and, per index partition (table,
//! index, partition key value), the version of each item its last settled answers showed.
//! For an item written within the lag, an answer then shows that remembered version
//! instead of the current one, if it satisfies the query's key condition and filter (as
//! DynamoDB evaluates them against the index's stale copy), or nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::expr;
use crate::items::identity_of;

/// How an index answer was changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Served {
    /// New items left out.
    pub(crate) hidden: u64,
    /// Items shown as they were before their latest write.
    pub(crate) old_versions: u64,
    /// Items shown where they no longer are.
    pub(crate) ghosts: u64,
}

impl Served {
    pub(crate) fn changed(&self) -> bool {
        self.hidden + self.old_versions + self.ghosts > 0
    }
}

/// One query of a global index, as the lag sees it.
pub(crate) struct IndexQuery<'a> {
    pub(crate) table: &'a str,
    /// The table's key attribute names.
    pub(crate) keys: &'a [String],
    /// The index's key attribute names (partition key, then sort key if any).
    pub(crate) index_keys: &'a [String],
    /// The request as sent upstream.
    pub(crate) request: &'a Value,
    pub(crate) lag: Duration,
    /// Only items whose JSON contains this lag (empty: every item).
    pub(crate) matching: &'a str,
}

impl IndexQuery<'_> {
    /// The index partition read (`None`: a key condition this does not read).
    fn partition(&self) -> Option<String> {
        let r = self.request;
        let pk = expr::equal_to(
            r["KeyConditionExpression"].as_str()?,
            r,
            self.index_keys.first()?,
        )?;
        Some(format!(
            "{}|{}|{pk}",
            self.table,
            r["IndexName"].as_str().unwrap_or_default()
        ))
    }

    /// Whether a stale copy is in this query's answer: its key condition and filter hold.
    fn selects(&self, item: &Value) -> bool {
        let r = self.request;
        let key = r["KeyConditionExpression"].as_str().unwrap_or_default();
        expr::holds(key, r, item) == Some(true)
            && r["FilterExpression"]
                .as_str()
                .is_none_or(|f| expr::holds(f, r, item) == Some(true))
    }

    /// Whether its answer shows whole index items (a version to remember).
    fn whole(&self) -> bool {
        self.request.get("ProjectionExpression").is_none()
            && self.request["Select"] != "SPECIFIC_ATTRIBUTES"
    }

    fn lags(&self, item: &Value) -> bool {
        self.matching.is_empty() || item.to_string().contains(self.matching)
    }

    /// Where `item` stands in the index's order (sort key, then identity).
    fn position(&self, item: &Value) -> (SortValue, String) {
        let sort = self
            .index_keys
            .get(1)
            .map(|k| SortValue::of(&item[k.as_str()]))
            .unwrap_or(SortValue::None);
        (sort, identity_of(self.table, item, self.keys))
    }

    /// Whether `a` comes before `b` in the order read.
    fn before(&self, a: &(SortValue, String), b: &(SortValue, String)) -> bool {
        let ord = a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
        if self.request["ScanIndexForward"].as_bool().unwrap_or(true) {
            ord.is_lt()
        } else {
            ord.is_gt()
        }
    }
}

/// A sort key's value, ordered as DynamoDB orders it.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum SortValue {
    None,
    N(f64),
    S(String),
}

impl SortValue {
    fn of(v: &Value) -> SortValue {
        if let Some(n) = v["N"].as_str().and_then(|n| n.parse().ok()) {
            SortValue::N(n)
        } else if let Some(s) = v["S"].as_str().or_else(|| v["B"].as_str()) {
            SortValue::S(s.to_string())
        } else {
            SortValue::None
        }
    }
}

/// Adds `names` to a request's `ProjectionExpression`, if it has one and lacks them; the
/// names added (to take out of the answer again with [`unproject`]).
pub(crate) fn project_keys<'a>(
    request: &mut Value,
    names: impl Iterator<Item = &'a String>,
) -> Vec<String> {
    let Some(p) = request["ProjectionExpression"].as_str().map(str::to_string) else {
        return Vec::new();
    };
    let named: HashSet<String> = p
        .split(',')
        .map(|n| {
            let n = n.trim();
            request["ExpressionAttributeNames"][n]
                .as_str()
                .unwrap_or(n)
                .to_string()
        })
        .collect();
    let mut added = Vec::new();
    let mut projection = p;
    for name in names {
        if named.contains(name) || added.contains(name) {
            continue;
        }
        let placeholder = format!("#lagkey{}", added.len());
        projection.push_str(&format!(", {placeholder}"));
        request["ExpressionAttributeNames"][placeholder.as_str()] = Value::from(name.as_str());
        added.push(name.clone());
    }
    request["ProjectionExpression"] = Value::from(projection);
    added
}

/// Takes the attributes [`project_keys`] added out of an answer's items.
pub(crate) fn unproject(answer: &mut Value, added: &[String]) {
    if added.is_empty() {
        return;
    }
    for item in answer["Items"].as_array_mut().into_iter().flatten() {
        if let Some(m) = item.as_object_mut() {
            for name in added {
                m.remove(name);
            }
        }
    }
}

#[derive(Default)]
struct State {
    /// When each item (by identity) was last written.
    written: HashMap<String, Instant>,
    /// When its current run of writes began (each within the lag of the one before): a
    /// partition it is new to shows it once that is past the lag, however often it is
    /// written since.
    burst: HashMap<String, Instant>,
    /// Per index and item, its first write after the version that index remembers: a
    /// stale copy is shown only while that write is within the lag (an index trails by the
    /// lag, not by however many writes came since it was last seen).
    superseded: HashMap<(String, String), Instant>,
    /// Per index partition, the version of each item (by identity) its last settled
    /// answers showed.
    shown: HashMap<String, HashMap<String, Value>>,
    /// The partition each remembered item was last shown in (per table and index).
    shown_in: HashMap<(String, String), String>,
    /// The indexes (`table|index`) anything is remembered of.
    indexes: HashSet<String>,
}

impl State {
    /// Its run of writes began within the lag: a partition it is new to does not show it.
    fn recent(&self, id: &str, lag: Duration) -> bool {
        self.burst.get(id).is_some_and(|at| at.elapsed() < lag)
    }

    /// The version `index` remembers of it is still what that index shows.
    fn stale(&self, index: &str, id: &str, lag: Duration) -> bool {
        self.superseded
            .get(&(index.to_string(), id.to_string()))
            .is_some_and(|at| at.elapsed() < lag)
    }

    /// Remembers `item` as what `partition` of `index` shows (and no other partition).
    fn remember(&mut self, index: &str, partition: &str, id: String, item: Value) {
        self.indexes.insert(index.to_string());
        let at = (index.to_string(), id.clone());
        self.superseded.remove(&at);
        if let Some(before) = self.shown_in.insert(at, partition.to_string()) {
            if before != partition {
                self.drop_shown(&before, &id);
            }
        }
        self.shown
            .entry(partition.to_string())
            .or_default()
            .insert(id, item);
    }

    fn forget(&mut self, index: &str, partition: &str, id: &str) {
        self.drop_shown(partition, id);
        let at = (index.to_string(), id.to_string());
        self.shown_in.remove(&at);
        self.superseded.remove(&at);
    }

    fn drop_shown(&mut self, partition: &str, id: &str) {
        if let Some(m) = self.shown.get_mut(partition) {
            m.remove(id);
            if m.is_empty() {
                self.shown.remove(partition);
            }
        }
    }
}

#[derive(Default)]
pub(crate) struct RecentWrites(Mutex<State>);

impl RecentWrites {
    /// Notes that these items were written now (`lag`: the indexes' lag).
    pub(crate) fn note(&self, ids: &[String], lag: Duration) {
        let Ok(mut guard) = self.0.lock() else {
            return;
        };
        let st = &mut *guard;
        let now = Instant::now();
        if st.written.len() > 200_000 {
            let keep = Duration::from_secs(60).max(lag);
            st.written.retain(|_, at| now.duration_since(*at) < keep);
            let written = &st.written;
            st.burst.retain(|id, _| written.contains_key(id));
            st.superseded.retain(|(_, id), _| written.contains_key(id));
        }
        for id in ids {
            let continuing = st
                .written
                .get(id)
                .is_some_and(|at| now.duration_since(*at) < lag);
            if !continuing {
                st.burst.insert(id.clone(), now);
            }
            st.written.insert(id.clone(), now);
            for index in &st.indexes {
                let at = (index.clone(), id.clone());
                if st.shown_in.contains_key(&at) {
                    st.superseded.entry(at).or_insert(now);
                }
            }
        }
    }

    /// Changes a query answer's `Items`, `Count` (and, when ghosts fill a page past its
    /// limit, `LastEvaluatedKey`) into what a lagging index would answer.
    pub(crate) fn serve(&self, q: &IndexQuery, answer: &mut Value) -> Served {
        let mut served = Served::default();
        let Some(items) = answer["Items"].as_array().cloned() else {
            return served;
        };
        let Ok(mut guard) = self.0.lock() else {
            return served;
        };
        let st = &mut *guard;
        if st.shown_in.len() > 200_000 {
            st.shown.clear();
            st.shown_in.clear();
            st.superseded.clear();
        }
        let partition = q.partition();
        let index = format!(
            "{}|{}",
            q.table,
            q.request["IndexName"].as_str().unwrap_or_default()
        );
        let mut present = HashSet::new();
        // Each item with its place in the index (from the whole item: a projected one may
        // lack the sort key).
        let mut kept: Vec<((SortValue, String), Value)> = Vec::with_capacity(items.len());
        // Old versions whose place in the index differs from the current one's: shown at
        // their own place, on the page whose range holds it.
        let mut elsewhere = Vec::new();
        // Whether the answer changed (an item left out for an old version shown elsewhere
        // changes it even when that old version is on another page).
        let mut rewritten = false;
        for item in items {
            let id = identity_of(q.table, &item, q.keys);
            present.insert(id.clone());
            if q.lags(&item) && st.recent(&id, q.lag) {
                let old = partition
                    .as_ref()
                    .and_then(|p| st.shown.get(p))
                    .and_then(|m| m.get(&id))
                    .cloned();
                match old {
                    Some(old) if st.stale(&index, &id, q.lag) => {
                        // What the index holds of it is the old copy: shown where it
                        // stands, if the query takes it.
                        rewritten = true;
                        if !q.selects(&old) {
                            served.hidden += 1;
                            continue;
                        }
                        let shown = expr::project(&old, q.request);
                        if q.position(&old) != q.position(&item) {
                            elsewhere.push((q.position(&old), shown));
                        } else {
                            if shown != item {
                                served.old_versions += 1;
                            }
                            kept.push((q.position(&old), shown));
                        }
                    }
                    // Written again and again: the index shows a version within the lag.
                    Some(_) => kept.push((q.position(&item), item)),
                    None => {
                        rewritten = true;
                        served.hidden += 1;
                    }
                }
                continue;
            }
            // Settled: this is what the index shows from now on.
            if let (Some(p), true) = (&partition, q.whole()) {
                st.remember(&index, p, id, item.clone());
            }
            kept.push((q.position(&item), item));
        }
        // What this partition showed before and no longer holds: a ghost while its write
        // is within the lag; gone for good once it settled.
        let Some(partition) = partition else {
            return finish(answer, kept, served, rewritten);
        };
        let start = q.request.get("ExclusiveStartKey").map(|k| q.position(k));
        let end = answer.get("LastEvaluatedKey").map(|k| q.position(k));
        let in_page = |at: &(SortValue, String)| {
            start.as_ref().is_none_or(|s| q.before(s, at))
                && end.as_ref().is_none_or(|e| !q.before(e, at))
        };
        let mut gone = Vec::new();
        let mut ghosts = Vec::new();
        for (id, old) in st.shown.get(&partition).into_iter().flatten() {
            if present.contains(id) || !q.selects(old) {
                continue;
            }
            let at = q.position(old);
            if !in_page(&at) {
                continue;
            }
            if q.lags(old) && st.stale(&index, id, q.lag) {
                ghosts.push((at, expr::project(old, q.request), true));
            } else {
                gone.push(id.clone());
            }
        }
        for id in &gone {
            st.forget(&index, &partition, id);
        }
        ghosts.extend(
            elsewhere
                .into_iter()
                .filter(|(at, _)| in_page(at))
                .map(|(at, old)| (at, old, false)),
        );
        // In the order read, so that a page cut at its limit keeps the first.
        ghosts.sort_by(|a, b| {
            if q.before(&a.0, &b.0) {
                std::cmp::Ordering::Less
            } else if q.before(&b.0, &a.0) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        let unkeyed_page = q.index_keys.len() < 2 && end.is_some();
        for (at, old, ghost) in ghosts {
            if unkeyed_page {
                break;
            }
            let i = kept
                .iter()
                .position(|(k, _)| q.before(&at, k))
                .unwrap_or(kept.len());
            kept.insert(i, (at, old));
            if ghost {
                served.ghosts += 1;
            } else {
                served.old_versions += 1;
            }
        }
        // Past the page's limit: it ends at its last item, and the next starts after it.
        if let Some(room) = q.request["Limit"].as_u64().map(|l| l as usize) {
            if kept.len() > room {
                kept.truncate(room);
                if let Some((_, last)) = kept.last() {
                    let mut key = serde_json::Map::new();
                    for name in q.keys.iter().chain(q.index_keys) {
                        if let Some(v) = last.get(name.as_str()) {
                            key.insert(name.clone(), v.clone());
                        }
                    }
                    answer["LastEvaluatedKey"] = Value::Object(key);
                }
            }
        }
        finish(answer, kept, served, rewritten)
    }
}

fn finish(
    answer: &mut Value,
    kept: Vec<((SortValue, String), Value)>,
    served: Served,
    rewritten: bool,
) -> Served {
    if rewritten || served.changed() {
        answer["Count"] = Value::from(kept.len());
        answer["Items"] = Value::Array(kept.into_iter().map(|(_, v)| v).collect());
    }
    served
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(request: &Value, lag: Duration) -> (Vec<String>, Vec<String>, Value, Duration) {
        (
            vec!["pk".to_string()],
            vec!["g".to_string(), "s".to_string()],
            request.clone(),
            lag,
        )
    }

    impl RecentWrites {
        fn note_now(&self, ids: &[String]) {
            self.note(ids, Duration::from_secs(5));
        }
    }

    fn serve(recent: &RecentWrites, request: &Value, answer: &mut Value, lag_s: u64) -> Served {
        let (keys, index_keys, request, lag) = query(request, Duration::from_secs(lag_s));
        recent.serve(
            &IndexQuery {
                table: "t",
                keys: &keys,
                index_keys: &index_keys,
                request: &request,
                lag,
                matching: "",
            },
            answer,
        )
    }

    fn of_g(g: &str) -> Value {
        json!({"TableName": "t", "IndexName": "g-index", "KeyConditionExpression": "g = :g",
               "ExpressionAttributeValues": {":g": {"S": g}}})
    }

    fn item(pk: &str, g: &str, s: u64, v: &str) -> Value {
        json!({"pk": {"S": pk}, "g": {"S": g}, "s": {"N": s.to_string()}, "v": {"S": v}})
    }

    fn pks(answer: &Value) -> Vec<String> {
        answer["Items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!(
                    "{}:{}",
                    i["pk"]["S"].as_str().unwrap(),
                    i["v"]["S"].as_str().unwrap()
                )
            })
            .collect()
    }

    fn id(pk: &str) -> String {
        identity_of("t", &json!({"pk": {"S": pk}}), &["pk".to_string()])
    }

    #[test]
    fn an_item_written_a_moment_ago_is_not_in_the_index_yet() {
        let recent = RecentWrites::default();
        recent.note_now(&[id("a")]);
        let mut answer =
            json!({"Count": 2, "Items": [item("a", "x", 1, "1"), item("b", "x", 2, "1")]});
        let served = serve(&recent, &of_g("x"), &mut answer, 5);
        assert_eq!(served.hidden, 1);
        assert_eq!(answer["Count"], 1);
        assert_eq!(pks(&answer), ["b:1"]);
        let mut later = json!({"Count": 1, "Items": [item("a", "x", 1, "1")]});
        assert!(!serve(&recent, &of_g("x"), &mut later, 0).changed());
    }

    #[test]
    fn an_item_updated_in_place_shows_its_old_version_and_a_moved_one_stays_as_a_ghost() {
        let recent = RecentWrites::default();
        // Settled: the index shows a, b and c in partition x.
        let mut first = json!({"Count": 3, "Items": [
            item("a", "x", 1, "1"), item("b", "x", 2, "1"), item("c", "x", 3, "1")]});
        assert!(!serve(&recent, &of_g("x"), &mut first, 5).changed());
        // a is updated in place, b moves to partition y, c is deleted.
        recent.note_now(&[id("a"), id("b"), id("c")]);
        let mut now = json!({"Count": 1, "Items": [item("a", "x", 1, "2")]});
        let served = serve(&recent, &of_g("x"), &mut now, 5);
        assert_eq!(
            served,
            Served {
                hidden: 0,
                old_versions: 1,
                ghosts: 2
            }
        );
        assert_eq!(pks(&now), ["a:1", "b:1", "c:1"], "in the index's order");
        assert_eq!(now["Count"], 3);
        // In partition y, b is new: not there yet.
        let mut y = json!({"Count": 1, "Items": [item("b", "y", 2, "2")]});
        assert_eq!(serve(&recent, &of_g("y"), &mut y, 5).hidden, 1);
        // Once settled, each is where and as it is, and the ghosts are forgotten.
        let mut settled = json!({"Count": 1, "Items": [item("a", "x", 1, "2")]});
        assert!(!serve(&recent, &of_g("x"), &mut settled, 0).changed());
        let mut again = json!({"Count": 1, "Items": [item("a", "x", 1, "2")]});
        assert!(!serve(&recent, &of_g("x"), &mut again, 5).changed());
    }

    #[test]
    fn a_ghost_lands_only_on_the_page_whose_range_holds_it() {
        let recent = RecentWrites::default();
        let mut whole = json!({"Count": 3, "Items": [
            item("a", "x", 1, "1"), item("b", "x", 5, "1"), item("c", "x", 9, "1")]});
        serve(&recent, &of_g("x"), &mut whole, 5);
        recent.note_now(&[id("c")]);
        // The first page ends at b (sort 5): c (9) belongs to the next.
        let mut page = json!({"Count": 2, "Items": [item("a", "x", 1, "1"), item("b", "x", 5, "1")],
                              "LastEvaluatedKey": item("b", "x", 5, "1")});
        assert!(!serve(&recent, &of_g("x"), &mut page, 5).changed());
        let mut next = of_g("x");
        next["ExclusiveStartKey"] = item("b", "x", 5, "1");
        let mut rest = json!({"Count": 0, "Items": []});
        assert_eq!(serve(&recent, &next, &mut rest, 5).ghosts, 1);
        assert_eq!(pks(&rest), ["c:1"]);
        // Read backwards, the ghost still lands in order.
        let mut back = of_g("x");
        back["ScanIndexForward"] = json!(false);
        let mut b = json!({"Count": 2, "Items": [item("b", "x", 5, "1"), item("a", "x", 1, "1")]});
        serve(&recent, &back, &mut b, 0);
        let mut whole_back = json!({"Count": 3, "Items": [
            item("c", "x", 9, "1"), item("b", "x", 5, "1"), item("a", "x", 1, "1")]});
        serve(&recent, &back, &mut whole_back, 0);
        recent.note_now(&[id("b")]);
        let mut without_b =
            json!({"Count": 2, "Items": [item("c", "x", 9, "1"), item("a", "x", 1, "1")]});
        assert_eq!(serve(&recent, &back, &mut without_b, 5).ghosts, 1);
        assert_eq!(pks(&without_b), ["c:1", "b:1", "a:1"]);
    }

    #[test]
    fn a_stale_copy_is_shown_only_where_the_query_selects_it() {
        let recent = RecentWrites::default();
        let mut whole =
            json!({"Count": 2, "Items": [item("a", "x", 1, "1"), item("b", "x", 5, "1")]});
        serve(&recent, &of_g("x"), &mut whole, 5);
        recent.note_now(&[id("a"), id("b")]);
        // Read with a filter the old copies fail (`v = 2`) and a sort range that leaves b
        // out: neither is shown, and b is not forgotten for it.
        let mut filtered = of_g("x");
        filtered["KeyConditionExpression"] = json!("g = :g AND s < :s");
        filtered["FilterExpression"] = json!("v = :v");
        filtered["ExpressionAttributeValues"][":s"] = json!({"N": "3"});
        filtered["ExpressionAttributeValues"][":v"] = json!({"S": "2"});
        let mut answer = json!({"Count": 1, "Items": [item("a", "x", 1, "2")]});
        let served = serve(&recent, &filtered, &mut answer, 5);
        assert_eq!(
            served,
            Served {
                hidden: 1,
                old_versions: 0,
                ghosts: 0
            }
        );
        assert_eq!(pks(&answer), Vec::<String>::new());
        let mut plain = json!({"Count": 0, "Items": []});
        assert_eq!(serve(&recent, &of_g("x"), &mut plain, 5).ghosts, 2);
        // A projection shows the stale copy's projected attributes only.
        let mut projected = of_g("x");
        projected["ProjectionExpression"] = json!("pk, v");
        let mut p = json!({"Count": 0, "Items": []});
        serve(&recent, &projected, &mut p, 5);
        assert_eq!(p["Items"][0], json!({"pk": {"S": "a"}, "v": {"S": "1"}}));
    }

    #[test]
    fn an_old_version_stands_at_its_own_place_and_only_within_the_lag() {
        let recent = RecentWrites::default();
        let mut whole =
            json!({"Count": 2, "Items": [item("a", "x", 1, "1"), item("b", "x", 5, "1")]});
        serve(&recent, &of_g("x"), &mut whole, 5);
        // a's sort key moves from 1 to 9: its old copy stays at 1, the new one is not at 9.
        recent.note_now(&[id("a")]);
        let mut now =
            json!({"Count": 2, "Items": [item("b", "x", 5, "1"), item("a", "x", 9, "2")]});
        let served = serve(&recent, &of_g("x"), &mut now, 5);
        assert_eq!(
            served,
            Served {
                hidden: 0,
                old_versions: 1,
                ghosts: 0
            }
        );
        assert_eq!(pks(&now), ["a:1", "b:1"]);
        // A page past 5 holds neither.
        let mut after_b = of_g("x");
        after_b["ExclusiveStartKey"] = item("b", "x", 5, "1");
        let mut rest = json!({"Count": 1, "Items": [item("a", "x", 9, "2")]});
        serve(&recent, &after_b, &mut rest, 5);
        assert_eq!(pks(&rest), Vec::<String>::new());
        // Written again and again: once its first write since the copy is past the lag,
        // the index shows what is there, however recent the last write.
        std::thread::sleep(Duration::from_millis(1_100));
        recent.note_now(&[id("a")]);
        let (keys, index_keys, request, _) = query(&of_g("x"), Duration::ZERO);
        let q = IndexQuery {
            table: "t",
            keys: &keys,
            index_keys: &index_keys,
            request: &request,
            lag: Duration::from_millis(1_000),
            matching: "",
        };
        let mut later =
            json!({"Count": 2, "Items": [item("b", "x", 5, "1"), item("a", "x", 9, "3")]});
        assert!(!recent.serve(&q, &mut later).changed());
        assert_eq!(pks(&later), ["b:1", "a:3"]);
    }

    #[test]
    fn ghosts_past_a_pages_limit_end_it_and_the_next_page_starts_after_them() {
        let recent = RecentWrites::default();
        let mut whole = json!({"Count": 3, "Items": [
            item("a", "x", 1, "1"), item("b", "x", 5, "1"), item("c", "x", 9, "1")]});
        serve(&recent, &of_g("x"), &mut whole, 5);
        recent.note_now(&[id("b")]);
        let mut limited = of_g("x");
        limited["Limit"] = json!(2);
        let mut page = json!({"Count": 2, "Items": [item("a", "x", 1, "1"), item("c", "x", 9, "1")],
                              "LastEvaluatedKey": item("c", "x", 9, "1")});
        assert_eq!(serve(&recent, &limited, &mut page, 5).ghosts, 1);
        assert_eq!(pks(&page), ["a:1", "b:1"]);
        assert_eq!(page["LastEvaluatedKey"]["pk"]["S"], "b");
        assert_eq!(page["LastEvaluatedKey"]["s"]["N"], "5");
    }

    #[test]
    fn an_index_that_settled_does_not_make_another_show_an_older_copy() {
        let recent = RecentWrites::default();
        let lag = Duration::from_millis(1_000);
        let (keys, index_keys, _, _) = query(&of_g("x"), lag);
        let on = |index: &str| {
            let mut r = of_g("x");
            r["IndexName"] = json!(index);
            r
        };
        let (one, two) = (on("one-index"), on("two-index"));
        let served = |request: &Value, answer: &mut Value| {
            recent.serve(
                &IndexQuery {
                    table: "t",
                    keys: &keys,
                    index_keys: &index_keys,
                    request,
                    lag,
                    matching: "",
                },
                answer,
            )
        };
        for r in [&one, &two] {
            let mut a = json!({"Count": 1, "Items": [item("a", "x", 1, "1")]});
            served(r, &mut a);
        }
        recent.note(&[id("a")], lag);
        std::thread::sleep(Duration::from_millis(1_100));
        // The second index settles on version 2; then a is written again.
        let mut settled = json!({"Count": 1, "Items": [item("a", "x", 1, "2")]});
        assert!(!served(&two, &mut settled).changed());
        recent.note(&[id("a")], lag);
        // The first index's copy (1) was overwritten more than the lag ago: it shows what
        // is there, not 1.
        let mut first = json!({"Count": 1, "Items": [item("a", "x", 1, "3")]});
        assert!(!served(&one, &mut first).changed());
        assert_eq!(pks(&first), ["a:3"]);
    }

    #[test]
    fn only_matching_items_lag() {
        let recent = RecentWrites::default();
        recent.note_now(&[id("a")]);
        let mut answer = json!({"Count": 1, "Items": [item("a", "x", 1, "1")]});
        let (keys, index_keys, request, lag) = query(&of_g("x"), Duration::from_secs(5));
        let q = IndexQuery {
            table: "t",
            keys: &keys,
            index_keys: &index_keys,
            request: &request,
            lag,
            matching: "\"y\"",
        };
        assert!(
            !recent.serve(&q, &mut answer).changed(),
            "another partition"
        );
    }
}
