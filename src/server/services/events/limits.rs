//! The receiver's limits (docs/events.md, "Limits"): the rate with its burst and the
//! requests at once that every console together keeps to, as an admin's form sends them
//! and in words for the receiver card.

use crate::model::outbox::ReceiverLimits;
use crate::model::AppError;
use crate::server::config::check_limits;

/// The limits saved with the receiver, if any console could keep them (the only writer
/// checks them; an item changed by hand may not be), else the server's `settings`.
pub(super) fn kept(saved: Option<ReceiverLimits>, settings: ReceiverLimits) -> ReceiverLimits {
    match saved.map(|l| (l, check_limits(&l))) {
        Some((l, Ok(()))) => l,
        Some((_, Err(e))) => {
            tracing::warn!(
                field = e.field,
                "the receiver's saved limits are refused; the settings' apply"
            );
            settings
        }
        None => settings,
    }
}

/// The limits a form sent, each a whole number (`None`: the form has none, so they stay
/// as they were).
pub fn of_form(
    rate: Option<String>,
    burst: Option<String>,
    concurrency: Option<String>,
) -> Result<Option<ReceiverLimits>, AppError> {
    if rate.is_none() && burst.is_none() && concurrency.is_none() {
        return Ok(None);
    }
    let number = |field: &'static str, v: Option<String>| {
        v.unwrap_or_default().trim().parse::<i64>().map_err(|_| {
            AppError::invalid(
                field,
                format!("The {field} must be a whole number (0: none)."),
            )
        })
    };
    Ok(Some(ReceiverLimits {
        rate: number("rate", rate)?,
        burst: number("burst", burst)?,
        concurrency: number("concurrency", concurrency)?,
    }))
}

/// The receiver's limits in words (docs/events.md, "Rate limit", "Concurrency limit").
pub(super) fn words(l: &ReceiverLimits) -> String {
    let rate =
        (l.rate > 0).then(|| format!("{} requests a second (a burst of {})", l.rate, l.burst()));
    let slots = (l.concurrency > 0).then(|| format!("{} at once", l.concurrency));
    match (rate, slots) {
        (None, None) => String::new(),
        (Some(r), Some(s)) => format!("Every console together: at most {r} and {s}."),
        (Some(one), None) | (None, Some(one)) => {
            format!("Every console together: at most {one}.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::words;
    use crate::model::outbox::ReceiverLimits;

    #[test]
    fn the_limits_in_words_name_each_one_set() {
        let with = |rate, concurrency| ReceiverLimits {
            rate,
            burst: 0,
            concurrency,
        };
        assert_eq!(words(&with(0, 0)), "");
        assert_eq!(
            words(&with(10, 3)),
            "Every console together: at most 10 requests a second (a burst of 10) and 3 at once."
        );
        assert_eq!(
            words(&with(0, 3)),
            "Every console together: at most 3 at once."
        );
    }
}
