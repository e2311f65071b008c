//! DynamoDB Streams as AWS hands them out. DynamoDB Local keeps one open shard per table
//! and always has records ready; AWS returns empty pages while records follow, and closes
//! shards and continues them in child shards. The proxy shows each shard, once it has
//! passed `split_after_records` records, as a parent closed at the last record seen then,
//! with two children that share what follows, each record going to one child by a hash of
//! its key (so one item's records stay in one child, in order). Children split the same
//! way (`<real>-c0-c1` is the second child of the first child), each level hashing the key
//! with its own salt.
//!
//! Iterators are wrapped (`dfx1|<shard>|<last sequence seen>|<real iterator>`) so the
//! proxy knows which virtual shard a page is for and where the reader is.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde_json::{json, Value};

const PREFIX: &str = "dfx1|";
const CHILDREN: usize = 2;
/// How many levels of children a shard splits into at most (AWS's shards split again and
/// again; two levels are what a reader must get right).
const MAX_DEPTH: usize = 2;

#[derive(Default)]
struct State {
    /// Shard (real or virtual) → sequence number of its last record before the split.
    splits: HashMap<String, String>,
    /// Shard (real or virtual) → records seen and the highest sequence number.
    seen: HashMap<String, (u64, String)>,
    /// Shard (real or virtual) → the last sequence number trimmed away: its trim horizon
    /// starts after it.
    trimmed: HashMap<String, String>,
}

#[derive(Default)]
pub(crate) struct Streams(Mutex<State>);

/// Sequence numbers are decimal strings of any length.
pub(crate) fn seq_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn child_id(real: &str, i: usize) -> String {
    format!("{real}-c{i}")
}

/// A virtual shard: the real one (`path` empty), or a descendant of it (the child index
/// at each level, from the real shard down).
pub(crate) struct Virtual {
    pub(crate) real: String,
    pub(crate) path: Vec<usize>,
}

impl Virtual {
    /// The shard this one continues, when it is a child.
    pub(crate) fn parent(&self) -> Option<String> {
        let (_, up) = self.path.split_last()?;
        Some(up.iter().fold(self.real.clone(), |id, i| child_id(&id, *i)))
    }
}

pub(crate) fn parse_shard(id: &str) -> Virtual {
    let mut rest = id;
    let mut path = Vec::new();
    while let Some((head, n)) = rest.rsplit_once("-c") {
        match n.parse::<usize>() {
            Ok(i) if i < CHILDREN && n.len() == 1 => {
                path.push(i);
                rest = head;
            }
            _ => break,
        }
    }
    path.reverse();
    Virtual {
        real: rest.to_string(),
        path,
    }
}

pub(crate) struct Wrapped {
    pub(crate) shard: String,
    pub(crate) last: Option<String>,
    pub(crate) real: String,
}

pub(crate) fn wrap(shard: &str, last: Option<&str>, real: &str) -> String {
    format!("{PREFIX}{shard}|{}|{real}", last.unwrap_or("-"))
}

pub(crate) fn unwrap(iterator: &str) -> Option<Wrapped> {
    let rest = iterator.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(3, '|');
    let shard = parts.next()?.to_string();
    let last = parts.next()?;
    let real = parts.next()?.to_string();
    Some(Wrapped {
        shard,
        last: (last != "-").then(|| last.to_string()),
        real,
    })
}

fn key_hash(record: &Value, level: usize) -> usize {
    let mut h = DefaultHasher::new();
    level.hash(&mut h);
    record["dynamodb"]["Keys"].to_string().hash(&mut h);
    (h.finish() % CHILDREN as u64) as usize
}

/// Whether a record of the real shard goes to the virtual shard at `path`.
pub(crate) fn belongs(record: &Value, path: &[usize]) -> bool {
    path.iter()
        .enumerate()
        .all(|(level, i)| key_hash(record, level) == *i)
}

impl Streams {
    pub(crate) fn split_point(&self, real: &str) -> Option<String> {
        self.0.lock().ok()?.splits.get(real).cloned()
    }

    /// Everything of `shard` up to `seq` is trimmed away (a reader was told so).
    pub(crate) fn trim(&self, shard: &str, seq: &str) {
        if let Ok(mut st) = self.0.lock() {
            let e = st.trimmed.entry(shard.to_string()).or_default();
            if seq_cmp(seq, e).is_gt() {
                *e = seq.to_string();
            }
        }
    }

    /// Where `shard`'s trim horizon starts: after this sequence number (none: its start).
    pub(crate) fn trimmed(&self, shard: &str) -> Option<String> {
        self.0.lock().ok()?.trimmed.get(shard).cloned()
    }

    /// Counts the records a page of `shard` (real or virtual) carried; splits the shard
    /// once it passed `after` records. True when it split now.
    pub(crate) fn observe(&self, shard: &str, records: &[Value], after: u64) -> bool {
        let Ok(mut st) = self.0.lock() else {
            return false;
        };
        let entry = st.seen.entry(shard.to_string()).or_default();
        for r in records {
            if let Some(seq) = r["dynamodb"]["SequenceNumber"].as_str() {
                entry.0 += 1;
                if seq_cmp(seq, &entry.1).is_gt() {
                    entry.1 = seq.to_string();
                }
            }
        }
        let (count, max) = entry.clone();
        let shallow = parse_shard(shard).path.len() < MAX_DEPTH;
        if after > 0
            && shallow
            && count >= after
            && !max.is_empty()
            && !st.splits.contains_key(shard)
        {
            st.splits.insert(shard.to_string(), max);
            return true;
        }
        false
    }

    /// `shard` as `DescribeStream` lists it (`listed`: its own entry), closed if it split,
    /// followed by its descendants.
    fn expand(&self, shard: &str, mut listed: Value, out: &mut Vec<Value>) {
        let split = self.split_point(shard);
        if let Some(at) = &split {
            if listed["SequenceNumberRange"]["EndingSequenceNumber"].is_null() {
                listed["SequenceNumberRange"]["EndingSequenceNumber"] = json!(at);
            }
        }
        out.push(listed);
        if let Some(at) = split {
            for i in 0..CHILDREN {
                let child = child_id(shard, i);
                let entry = json!({
                    "ShardId": child,
                    "ParentShardId": shard,
                    "SequenceNumberRange": {"StartingSequenceNumber": at},
                });
                self.expand(&child, entry, out);
            }
        }
    }

    /// `DescribeStream`'s answer with every split shard closed and its children added.
    pub(crate) fn describe(&self, mut answer: Value) -> Value {
        let Some(shards) = answer["StreamDescription"]["Shards"].as_array().cloned() else {
            return answer;
        };
        let mut out = Vec::new();
        for shard in shards {
            let real = shard["ShardId"].as_str().unwrap_or_default().to_string();
            self.expand(&real, shard, &mut out);
        }
        answer["StreamDescription"]["Shards"] = Value::Array(out);
        answer
    }

    /// One page of `GetRecords` for the virtual shard of `w`, given the real page: the
    /// records that belong to it, and its next iterator (`None`: closed, read to its end).
    pub(crate) fn page(&self, w: &Wrapped, real_page: &Value) -> (Vec<Value>, Option<String>) {
        let v = parse_shard(&w.shard);
        let records: Vec<Value> = real_page["Records"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| belongs(r, &v.path))
            .collect();
        let real_next = real_page["NextShardIterator"].as_str();
        let last_real = records
            .iter()
            .filter_map(|r| r["dynamodb"]["SequenceNumber"].as_str())
            .max_by(|a, b| seq_cmp(a, b))
            .map(str::to_string)
            .or_else(|| w.last.clone());
        let next = |last: Option<&str>| real_next.map(|n| wrap(&w.shard, last, n));
        match self.split_point(&w.shard) {
            Some(at) => {
                let mine: Vec<Value> = records
                    .iter()
                    .filter(|r| {
                        r["dynamodb"]["SequenceNumber"]
                            .as_str()
                            .is_some_and(|s| seq_cmp(s, &at).is_le())
                    })
                    .cloned()
                    .collect();
                let done = last_real
                    .as_deref()
                    .is_some_and(|l| seq_cmp(l, &at).is_ge());
                if done {
                    (mine, None)
                } else {
                    (mine, next(last_real.as_deref()))
                }
            }
            None => (records, next(last_real.as_deref())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: &str, key: &str) -> Value {
        json!({"eventName": "REMOVE", "dynamodb": {"SequenceNumber": seq, "Keys": {"pk": {"S": key}}}})
    }

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert!(seq_cmp("000123", "99").is_gt());
        assert!(seq_cmp("10", "9").is_gt());
        assert!(seq_cmp("0010", "10").is_eq());
    }

    #[test]
    fn iterators_keep_real_ones_with_bars_in_them() {
        let w = wrap("shard-1", Some("42"), "arn:x|001|abc");
        let u = unwrap(&w).unwrap();
        assert_eq!(
            (u.shard.as_str(), u.last.as_deref(), u.real.as_str()),
            ("shard-1", Some("42"), "arn:x|001|abc")
        );
        assert!(
            unwrap("arn:x|001").is_none(),
            "a real iterator passes as it is"
        );
        let c = parse_shard("shard-1-c1");
        assert_eq!((c.real.as_str(), c.path.clone()), ("shard-1", vec![1]));
        assert_eq!(c.parent().as_deref(), Some("shard-1"));
        assert!(parse_shard("shard-1").path.is_empty());
        let g = parse_shard("shardId-0001-c5f3e2a1-c0-c1");
        assert_eq!(
            (g.real.as_str(), g.path.clone()),
            ("shardId-0001-c5f3e2a1", vec![0, 1])
        );
        assert_eq!(g.parent().as_deref(), Some("shardId-0001-c5f3e2a1-c0"));
    }

    #[test]
    fn a_split_parent_ends_at_its_split_point_and_the_children_share_the_rest() {
        let s = Streams::default();
        assert!(!s.observe("sh", &[record("1", "a"), record("2", "b")], 3));
        assert!(
            s.observe("sh", &[record("3", "c")], 3),
            "splits at the third record"
        );
        assert!(!s.observe("sh", &[record("4", "d")], 3), "once");
        let page = json!({"Records": [record("3", "c"), record("4", "d"), record("5", "e")], "NextShardIterator": "real-next"});
        let parent = unwrap(&wrap("sh", Some("2"), "real")).unwrap();
        let (mine, next) = s.page(&parent, &page);
        assert_eq!(mine.len(), 1, "only what came before the split");
        assert!(next.is_none(), "closed once read past its end");
        let mut seen = 0;
        for i in 0..CHILDREN {
            let child = unwrap(&wrap(&child_id("sh", i), Some("3"), "real")).unwrap();
            let (mine, next) = s.page(&child, &page);
            assert!(next.is_some());
            seen += mine.len();
        }
        assert_eq!(
            seen, 3,
            "each record in exactly one child (the child's reader starts after the split)"
        );
        let described = s.describe(json!({"StreamDescription": {"Shards": [{"ShardId": "sh", "SequenceNumberRange": {"StartingSequenceNumber": "1"}}]}}));
        let shards = described["StreamDescription"]["Shards"].as_array().unwrap();
        assert_eq!(shards.len(), 3);
        assert_eq!(
            shards[0]["SequenceNumberRange"]["EndingSequenceNumber"],
            "3"
        );
        assert_eq!(shards[1]["ParentShardId"], "sh");
    }

    #[test]
    fn a_child_splits_again_and_its_children_share_its_records() {
        let s = Streams::default();
        assert!(s.observe("sh", &[record("1", "a")], 1));
        let child = child_id("sh", 0);
        let page = |keys: &[(&str, &str)]| json!({"Records": keys.iter().map(|(q, k)| record(q, k)).collect::<Vec<_>>(), "NextShardIterator": "n"});
        let w = unwrap(&wrap(&child, Some("1"), "real")).unwrap();
        let all: Vec<(String, String)> =
            (2..40).map(|i| (i.to_string(), format!("k{i}"))).collect();
        let refs: Vec<(&str, &str)> = all.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (mine, _) = s.page(&w, &page(&refs));
        assert!(
            !mine.is_empty() && mine.len() < all.len(),
            "the child gets its share"
        );
        assert!(
            s.observe(&child, &mine, 3),
            "and splits after its own records"
        );
        let described = s.describe(json!({"StreamDescription": {"Shards": [{"ShardId": "sh", "SequenceNumberRange": {"StartingSequenceNumber": "1"}}]}}));
        let ids: Vec<&str> = described["StreamDescription"]["Shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ShardId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["sh", "sh-c0", "sh-c0-c0", "sh-c0-c1", "sh-c1"]);
        // Past the child's split, its records go to its two children, each to one.
        let later: Vec<(String, String)> = (100..160)
            .map(|i| (i.to_string(), format!("k{i}")))
            .collect();
        let refs: Vec<(&str, &str)> = later
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let of_child: usize = {
            let w = unwrap(&wrap(&child, Some("99"), "real")).unwrap();
            // The closed child shows nothing past its split.
            s.page(&w, &page(&refs)).0.len()
        };
        assert_eq!(of_child, 0);
        let mut seen = 0;
        for i in 0..CHILDREN {
            let w = unwrap(&wrap(&child_id(&child, i), Some("99"), "real")).unwrap();
            seen += s.page(&w, &page(&refs)).0.len();
        }
        let w = unwrap(&wrap(&child_id("sh", 1), Some("99"), "real")).unwrap();
        seen += s.page(&w, &page(&refs)).0.len();
        assert_eq!(seen, later.len(), "every record in exactly one open shard");
    }
}
