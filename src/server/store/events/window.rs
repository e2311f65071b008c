//! The outbox index's sort-key bounds for a list by time (docs/events.md, "Resend a time
//! window"): entered a group by a time, and not before a window of decisions began.

use crate::server::store::item::s;
use crate::server::store::query::Cond;

/// The sort-key condition: entered the group by `due_by` (every key before the next
/// millisecond's), and, with a `window`, not before it began (an action enters a group
/// after it was made). A window that began after `due_by` matches nothing (never a
/// reversed range, which DynamoDB refuses).
pub(super) fn sk_between(window: Option<(i64, i64)>, due_by: Option<i64>) -> Option<Cond> {
    let key = |ms: i64| s(format!("{:013}", ms.max(0)));
    match (window, due_by) {
        (None, None) => None,
        (None, Some(by)) => Some(Cond::Lt(key(by.saturating_add(1)))),
        (Some((from, _)), by) => {
            // No key equals a bare time (keys are `<time>#<key>`): these bounds hold every
            // key from `from` (less the clocks' skew: the console that delivered may run
            // behind the one that decided) up to the end of `by`.
            let end = by.map_or(LAST_MS, |b| b.saturating_add(1));
            let from = from.saturating_sub(CLOCK_SKEW_MS);
            Some(Cond::Between(key(from.min(end)), key(end)))
        }
    }
}

/// The sort-key condition of a named receiver's due actions (`<receiver>#<time>#<key>`):
/// its own range, due by `due_by`.
pub(super) fn due_of(receiver: &str, due_by: i64) -> Cond {
    let end = due_by.saturating_add(1).clamp(0, LAST_MS);
    Cond::Between(
        s(format!("{receiver}#")),
        s(format!("{receiver}#{end:013}")),
    )
}

/// The sort-key condition of every due action of `receiver`, whenever it is due: a named
/// receiver's range, or `default`'s keys, which start with a digit (`<time>#<key>`).
pub(super) fn queue_of(receiver: &str) -> Cond {
    if receiver == crate::model::outbox::ReceiverName::DEFAULT {
        return Cond::Lt(s(":"));
    }
    Cond::Between(s(format!("{receiver}#")), s(format!("{receiver}#:")))
}

/// How far behind another console's clock a console's may run, at most, as the window's
/// reads allow for it.
const CLOCK_SKEW_MS: i64 = 300_000;

/// The last millisecond a 13-digit sort key holds.
const LAST_MS: i64 = 9_999_999_999_999;
