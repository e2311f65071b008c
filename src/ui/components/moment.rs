//! A moment in time as the console shows it everywhere, one format: `2026-11-24 08:01:02
//! UTC` from the server (the same text on the server and in the browser, so hydration
//! agrees), turned into the reader's own time zone, to the second and with the zone's
//! name (`Nov 24, 2026, 3:01:02 AM EST`), by `public/local-time.js` once the page is
//! shown; the exact UTC time on hover and, when given, how long ago.

use leptos::prelude::*;

/// `iso` is RFC 3339 (UTC); `ago` is the server's "5 min ago", or empty.
#[component]
pub fn Moment(
    #[prop(into)] iso: String,
    #[prop(into, default = String::new())] ago: String,
) -> impl IntoView {
    let short = short_utc(&iso);
    let ago = (!ago.is_empty())
        .then(|| view! { <span class="block text-xs text-slate-500">{ago}</span> });
    view! {
        <time datetime=iso.clone() title=iso data-local="">{short}</time>
        {ago}
    }
}

/// Milliseconds since the epoch as RFC 3339 (UTC, to the second), for [`Moment`]. Written
/// out field by field (chrono's formatter would weigh on every page, docs/page-weight.md).
pub fn iso_of_ms(ms: i64) -> String {
    use chrono::{Datelike, Timelike};
    let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
        return String::new();
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A stored value that may be a moment: as a [`Moment`] when it is one (RFC 3339), else
/// as the text it is.
pub fn time_or_text(value: String) -> AnyView {
    let b = value.as_bytes();
    let moment = b.len() >= 19 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':';
    if moment {
        view! { <Moment iso=value /> }.into_any()
    } else {
        value.into_any()
    }
}

/// `2026-11-24T08:01:02.123Z` → `2026-11-24 08:01:02 UTC`; anything else as it is.
pub fn short_utc(iso: &str) -> String {
    match (iso.get(..10), iso.get(11..19)) {
        (Some(day), Some(time)) if iso.ends_with('Z') || iso.ends_with("+00:00") => {
            format!("{day} {time} UTC")
        }
        _ => iso.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::short_utc;

    #[test]
    fn milliseconds_read_as_rfc_3339() {
        assert_eq!(super::iso_of_ms(1_764_144_062_123), "2025-11-26T08:01:02Z");
    }

    #[test]
    fn utc_times_read_to_the_second() {
        assert_eq!(
            short_utc("2026-11-24T08:01:02.123Z"),
            "2026-11-24 08:01:02 UTC"
        );
        assert_eq!(
            short_utc("2026-11-24T08:01:02+00:00"),
            "2026-11-24 08:01:02 UTC"
        );
        assert_eq!(short_utc("yesterday"), "yesterday");
    }
}
