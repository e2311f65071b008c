//! DynamoDB Streams as AWS hands them out. DynamoDB Local keeps one open shard per table
//! and always has records ready; AWS returns empty pages while records follow, and closes
//! shards and continues them in child shards. The proxy shows each real shard, once it
//! has passed `split_after_records` records, as a parent closed at the last record seen
//! then, with two children that share what follows, each record going to one child by a
//! hash of its key (so one item's records stay in one child, in order).
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

#[derive(Default)]
struct State {
    /// Real shard → sequence number of its last record before the split.
    splits: HashMap<String, String>,
    /// Real shard → records seen and the highest sequence number.
    seen: HashMap<String, (u64, String)>,
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

/// A virtual shard: the real one (parent, or unsplit), or child `i` of it.
pub(crate) struct Virtual {
    pub(crate) real: String,
    pub(crate) child: Option<usize>,
}

pub(crate) fn parse_shard(id: &str) -> Virtual {
    if let Some((real, n)) = id.rsplit_once("-c") {
        if let Ok(i) = n.parse::<usize>() {
            if i < CHILDREN {
                return Virtual {
                    real: real.to_string(),
                    child: Some(i),
                };
            }
        }
    }
    Virtual {
        real: id.to_string(),
        child: None,
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

fn key_hash(record: &Value) -> usize {
    let mut h = DefaultHasher::new();
    record["dynamodb"]["Keys"].to_string().hash(&mut h);
    (h.finish() % CHILDREN as u64) as usize
}

impl Streams {
    pub(crate) fn split_point(&self, real: &str) -> Option<String> {
        self.0.lock().ok()?.splits.get(real).cloned()
    }

    /// Counts the records a page of `real` carried; splits the shard once it passed
    /// `after` records. True when it split now.
    pub(crate) fn observe(&self, real: &str, records: &[Value], after: u64) -> bool {
        let Ok(mut st) = self.0.lock() else {
            return false;
        };
        let entry = st.seen.entry(real.to_string()).or_default();
        for r in records {
            if let Some(seq) = r["dynamodb"]["SequenceNumber"].as_str() {
                entry.0 += 1;
                if seq_cmp(seq, &entry.1).is_gt() {
                    entry.1 = seq.to_string();
                }
            }
        }
        let (count, max) = entry.clone();
        if after > 0 && count >= after && !max.is_empty() && !st.splits.contains_key(real) {
            st.splits.insert(real.to_string(), max);
            return true;
        }
        false
    }

    /// `DescribeStream`'s answer with every split shard closed and its children added.
    pub(crate) fn describe(&self, mut answer: Value) -> Value {
        let Some(shards) = answer["StreamDescription"]["Shards"].as_array().cloned() else {
            return answer;
        };
        let mut out = Vec::new();
        for shard in shards {
            let real = shard["ShardId"].as_str().unwrap_or_default().to_string();
            match self.split_point(&real) {
                Some(at) => {
                    let mut parent = shard.clone();
                    if parent["SequenceNumberRange"]["EndingSequenceNumber"].is_null() {
                        parent["SequenceNumberRange"]["EndingSequenceNumber"] = json!(at);
                    }
                    out.push(parent);
                    for i in 0..CHILDREN {
                        out.push(json!({
                            "ShardId": child_id(&real, i),
                            "ParentShardId": real,
                            "SequenceNumberRange": {"StartingSequenceNumber": at},
                        }));
                    }
                }
                None => out.push(shard),
            }
        }
        answer["StreamDescription"]["Shards"] = Value::Array(out);
        answer
    }

    /// One page of `GetRecords` for the virtual shard of `w`, given the real page: the
    /// records that belong to it, and its next iterator (`None`: closed, read to its end).
    pub(crate) fn page(&self, w: &Wrapped, real_page: &Value) -> (Vec<Value>, Option<String>) {
        let v = parse_shard(&w.shard);
        let records = real_page["Records"].as_array().cloned().unwrap_or_default();
        let real_next = real_page["NextShardIterator"].as_str();
        let last_real = records
            .iter()
            .filter_map(|r| r["dynamodb"]["SequenceNumber"].as_str())
            .max_by(|a, b| seq_cmp(a, b))
            .map(str::to_string)
            .or_else(|| w.last.clone());
        let next = |last: Option<&str>| real_next.map(|n| wrap(&w.shard, last, n));
        match (v.child, self.split_point(&v.real)) {
            (None, Some(at)) => {
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
            (Some(i), _) => {
                let mine = records.into_iter().filter(|r| key_hash(r) == i).collect();
                (mine, next(last_real.as_deref()))
            }
            (None, None) => (records, next(last_real.as_deref())),
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
        assert_eq!((c.real.as_str(), c.child), ("shard-1", Some(1)));
        assert_eq!(parse_shard("shard-1").child, None);
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
}
