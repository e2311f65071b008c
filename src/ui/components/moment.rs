//! A moment in time as the console shows it everywhere, one format: `2026-11-24 08:01:02
//! UTC` from the server (the same text on the server and in the browser, so hydration
//! agrees), turned into the reader's own time zone, to the second and with the zone's
//! name (`Nov 24, 2026, 3:01:02 AM EST`), by `public/local-time.js` once the page is
//! shown; the exact UTC time on hover and, when given, how long ago. The script changes
//! only the text (the same text node), so hydration is unaffected, and it does so on the
//! first page and on every page shown after it (a `MutationObserver`); without it the UTC
//! text stays.

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

/// The UTC calendar fields of a time in milliseconds since the epoch: year, month (1–12),
/// day, hour, minute, second (H. Hinnant's civil-from-days; chrono would weigh on every
/// page, docs/page-weight.md).
pub fn utc_fields(ms: i64) -> (i64, i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Milliseconds since the epoch as RFC 3339 (UTC, to the second), for [`Moment`].
pub fn iso_of_ms(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = utc_fields(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// An RFC 3339 time (`2026-11-24T08:01:02.123Z`, `…+02:00`) as milliseconds since the
/// epoch. Read field by field: chrono's parser would weigh on the page (docs/page-weight.md).
pub fn ms_of_iso(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    let shape = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if b.len() < 20
        || shape.iter().any(|(i, c)| b[*i] != *c)
        || !matches!(b[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // The fraction, to the millisecond.
    let mut i = 19;
    let mut ms = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                ms = ms * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            ms *= 10;
        }
    }
    let offset_min = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && b[i + 3] == b':' => {
            let m = num(i + 1, 2)? * 60 + num(i + 4, 2)?;
            if *sign == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    // Days from the civil date (H. Hinnant's algorithm), proleptic Gregorian.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + ms)
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

#[cfg(all(test, feature = "ssr"))]
mod parse_tests {
    use super::ms_of_iso;

    #[test]
    fn an_rfc3339_time_reads_as_chrono_reads_it() {
        for ts in [
            "2026-11-24T08:01:02Z",
            "2026-11-24T08:01:02.5Z",
            "2026-11-24T08:01:02.123456789Z",
            "2024-02-29T23:59:59.999+02:00",
            "1969-12-31T23:59:59-05:30",
            "2000-03-01T00:00:00z",
        ] {
            let want = chrono::DateTime::parse_from_rfc3339(ts).map(|t| t.timestamp_millis());
            assert_eq!(ms_of_iso(ts), want.ok(), "{ts}");
        }
        for bad in [
            "",
            "2026-11-24",
            "2026-13-24T08:01:02Z",
            "2026-11-24T08:01:02",
            "2026-11-24T08:01:02.Z",
            "2026-11-24T08:01:02+0200",
            "x026-11-24T08:01:02Z",
        ] {
            assert_eq!(ms_of_iso(bad), None, "{bad}");
        }
    }
}
