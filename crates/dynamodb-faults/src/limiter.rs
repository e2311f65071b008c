//! The per-item write limit: a token bucket per item (table and key), refilled at the
//! limit's rate, holding at most one second's worth. It also remembers the item written
//! most often within one second, throttled or not, for the report.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

struct Bucket {
    tokens: f64,
    refilled: Instant,
    window_start: Instant,
    in_window: u32,
}

#[derive(Default)]
struct State {
    buckets: HashMap<String, Bucket>,
    hottest: Option<(String, u32)>,
}

#[derive(Default)]
pub(crate) struct Limiter(Mutex<State>);

impl Limiter {
    /// Counts one write of each item, and says which of them are over `per_s` (0: no
    /// limit). Nothing is taken from any bucket unless every item may be written: a
    /// throttled request consumes no capacity.
    pub(crate) fn admit(&self, ids: &[String], per_s: u32) -> Vec<usize> {
        let Ok(mut st) = self.0.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        if st.buckets.len() > 200_000 {
            st.buckets
                .retain(|_, b| now.duration_since(b.window_start).as_secs() < 10);
        }
        let rate = f64::from(per_s);
        let mut over = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let b = st.buckets.entry(id.clone()).or_insert(Bucket {
                tokens: rate,
                refilled: now,
                window_start: now,
                in_window: 0,
            });
            if per_s > 0 {
                let elapsed = now.duration_since(b.refilled).as_secs_f64();
                b.tokens = (b.tokens + elapsed * rate).min(rate);
                b.refilled = now;
                if b.tokens < 1.0 {
                    over.push(i);
                }
            }
        }
        let mut hottest = st.hottest.clone();
        for id in ids {
            let Some(b) = st.buckets.get_mut(id) else {
                continue;
            };
            if over.is_empty() && per_s > 0 {
                b.tokens -= 1.0;
            }
            if now.duration_since(b.window_start).as_secs_f64() >= 1.0 {
                b.window_start = now;
                b.in_window = 0;
            }
            b.in_window += 1;
            if hottest.as_ref().is_none_or(|(_, n)| b.in_window > *n) {
                hottest = Some((id.clone(), b.in_window));
            }
        }
        st.hottest = hottest;
        over
    }

    pub(crate) fn hottest(&self) -> Option<(String, u32)> {
        self.0.lock().ok()?.hottest.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_past_its_rate_is_throttled_and_a_throttled_write_takes_no_capacity() {
        let l = Limiter::default();
        let hot = vec!["t|pk=1".to_string()];
        assert!(l.admit(&hot, 2).is_empty());
        assert!(l.admit(&hot, 2).is_empty());
        assert_eq!(l.admit(&hot, 2), vec![0]);
        let both = vec!["t|pk=2".to_string(), "t|pk=1".to_string()];
        assert_eq!(
            l.admit(&both, 2),
            vec![1],
            "the cold item is fine, the hot one is not"
        );
        assert!(
            l.admit(&both[..1], 2).is_empty(),
            "the refused request took nothing"
        );
        assert_eq!(
            l.hottest().map(|h| h.1),
            Some(4),
            "attempts within the second, throttled ones too"
        );
        assert!(l.admit(&hot, 0).is_empty(), "0: no limit");
    }
}
