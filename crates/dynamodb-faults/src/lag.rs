//! Index lag: a global index is updated asynchronously, so a query of it may not yet see
//! an item written a moment ago. The proxy remembers when each item was last written and
//! leaves the recently written ones out of a global index's query answers. (AWS would show
//! an updated item's old version there; leaving it out is the harder case for a reader
//! that must not miss it.)

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::items::identity_of;

#[derive(Default)]
pub(crate) struct RecentWrites(Mutex<HashMap<String, Instant>>);

impl RecentWrites {
    /// Notes that these items were written now.
    pub(crate) fn note(&self, ids: &[String]) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        let now = Instant::now();
        if m.len() > 200_000 {
            m.retain(|_, at| now.duration_since(*at) < Duration::from_secs(60));
        }
        for id in ids {
            m.insert(id.clone(), now);
        }
    }

    fn written_within(&self, id: &str, lag: Duration) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|m| m.get(id).map(|at| at.elapsed() < lag))
            .unwrap_or(false)
    }

    /// Takes out of a query answer's `Items` those written within `lag` (of those whose
    /// JSON contains `matching`, when it is not empty); how many.
    pub(crate) fn hide(
        &self,
        table: &str,
        keys: &[String],
        answer: &mut Value,
        lag: Duration,
        matching: &str,
    ) -> u64 {
        let Some(items) = answer["Items"].as_array().cloned() else {
            return 0;
        };
        let kept: Vec<Value> = items
            .iter()
            .filter(|item| {
                if !matching.is_empty() && !item.to_string().contains(matching) {
                    return true;
                }
                !self.written_within(&identity_of(table, item, keys), lag)
            })
            .cloned()
            .collect();
        let hidden = (items.len() - kept.len()) as u64;
        if hidden > 0 {
            answer["Count"] = Value::from(kept.len());
            answer["Items"] = Value::Array(kept);
        }
        hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_item_written_a_moment_ago_is_not_in_the_index_yet() {
        let recent = RecentWrites::default();
        let keys = vec!["pk".to_string()];
        recent.note(&[identity_of("t", &json!({"pk": {"S": "a"}}), &keys)]);
        let mut answer = json!({"Count": 2, "Items": [
            {"pk": {"S": "a"}, "g": {"S": "x"}},
            {"pk": {"S": "b"}, "g": {"S": "x"}},
        ]});
        assert_eq!(
            recent.hide("t", &keys, &mut answer, Duration::from_secs(5), ""),
            1
        );
        assert_eq!(answer["Count"], 1);
        assert_eq!(answer["Items"][0]["pk"]["S"], "b");
        let mut later = json!({"Count": 1, "Items": [{"pk": {"S": "a"}}]});
        assert_eq!(recent.hide("t", &keys, &mut later, Duration::ZERO, ""), 0);
        let mut other = json!({"Count": 1, "Items": [{"pk": {"S": "a"}, "g": {"S": "y"}}]});
        let lag = Duration::from_secs(5);
        assert_eq!(
            recent.hide("t", &keys, &mut other, lag, "\"x\""),
            0,
            "another partition"
        );
    }
}
