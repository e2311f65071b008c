//! The Audit page's time filter: a day and an optional `HH:MM` range, in the reader's time
//! zone (its offset from UTC in minutes, as the browser tells it; UTC without one), turned
//! into the UTC instants the records are kept by and the UTC days (the by-day index's
//! partitions) they fall on.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, Utc};

use crate::model::AppError;

/// What the filter reads.
#[derive(Debug, PartialEq, Eq)]
pub struct Window {
    /// The UTC days the range touches, newest first (none: no day given or needed).
    pub days: Vec<String>,
    /// RFC 3339 bounds, both inclusive.
    pub between: Option<(String, String)>,
    /// The window in words, in the reader's zone ("2026-11-25, 00:00–23:59, UTC−05:00").
    pub said: Option<String>,
}

/// The filter as typed: `day` `YYYY-MM-DD`, `from` and `to` `HH:MM`, `tz` minutes east of UTC.
pub struct Typed<'a> {
    pub day: &'a str,
    pub from: &'a str,
    pub to: &'a str,
    pub tz: &'a str,
}

/// The offset, from `-840` (UTC−14:00) to `840` (UTC+14:00); empty is UTC.
fn offset(tz: &str) -> Result<i32, AppError> {
    if tz.is_empty() {
        return Ok(0);
    }
    tz.parse::<i32>()
        .ok()
        .filter(|m| (-840..=840).contains(m))
        .ok_or_else(|| {
            AppError::invalid("tz", "A time zone offset is minutes from UTC, -840 to 840.")
        })
}

/// "UTC", "UTC+05:30", "UTC−05:00".
pub fn zone_name(minutes: i32) -> String {
    if minutes == 0 {
        return "UTC".into();
    }
    let sign = if minutes < 0 { '−' } else { '+' };
    let m = minutes.abs();
    format!("UTC{sign}{:02}:{:02}", m / 60, m % 60)
}

/// A day as `YYYY-MM-DD`, four-digit year from 2000 to 9998 (chrono would also take signed
/// six-digit years, whose shifts overflow, and a year past 9999 sorts before its bounds).
fn parse_day(day: &str) -> Result<NaiveDate, AppError> {
    let wrong = || AppError::invalid("day", "A day is YYYY-MM-DD. Its year is 2000 to 9998.");
    let b = day.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape {
        return Err(wrong());
    }
    let d = NaiveDate::parse_from_str(day, "%Y-%m-%d").map_err(|_| wrong())?;
    if !(2000..=9998).contains(&d.year()) {
        return Err(wrong());
    }
    Ok(d)
}

fn time(hhmm: &str, field: &str) -> Result<NaiveTime, AppError> {
    NaiveTime::parse_from_str(hhmm, "%H:%M")
        .map_err(|_| AppError::invalid(field, "A time is HH:MM."))
}

/// As the records' sort keys spell their time (to the millisecond), so a bound compares
/// with them character by character.
fn utc(t: DateTime<Utc>) -> String {
    crate::server::clock::iso(t)
}

/// The window of `typed`. A day is needed for a time range, and when nothing else narrows
/// the records (`needs_day`): then it is today in the reader's zone.
pub fn window(typed: &Typed<'_>, needs_day: bool, now: DateTime<Utc>) -> Result<Window, AppError> {
    let tz = offset(typed.tz)?;
    let shift = Duration::minutes(i64::from(tz));
    let ranged = !typed.from.is_empty() || !typed.to.is_empty();
    let day = if typed.day.is_empty() {
        if !(needs_day || ranged) {
            return Ok(Window {
                days: Vec::new(),
                between: None,
                said: None,
            });
        }
        (now + shift).date_naive()
    } else {
        parse_day(typed.day)?
    };
    let from = time(
        if typed.from.is_empty() {
            "00:00"
        } else {
            typed.from
        },
        "from",
    )?;
    let to = time(
        if typed.to.is_empty() {
            "23:59"
        } else {
            typed.to
        },
        "to",
    )?;
    if from > to {
        return Err(AppError::invalid("to", "The range ends before it starts."));
    }
    // Local wall time minus the offset is UTC; `to` takes its whole minute. (The day's year
    // is checked, so neither can overflow.)
    let start = day.and_time(from).and_utc() - shift;
    let end = day.and_time(to).and_utc() - shift + Duration::milliseconds(59_999);
    let mut days = vec![end.format("%Y-%m-%d").to_string()];
    let first = start.format("%Y-%m-%d").to_string();
    if first != days[0] {
        days.push(first);
    }
    Ok(Window {
        days,
        between: Some((utc(start), utc(end))),
        said: Some(format!(
            "{day}, {}–{}, {}",
            from.format("%H:%M"),
            to.format("%H:%M"),
            zone_name(tz)
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn typed<'a>(day: &'a str, from: &'a str, to: &'a str, tz: &'a str) -> Typed<'a> {
        Typed { day, from, to, tz }
    }

    #[test]
    fn a_new_york_day_is_two_utc_days() {
        let w = window(
            &typed("2026-11-25", "", "", "-300"),
            false,
            at("2026-11-26T12:00:00Z"),
        )
        .unwrap();
        assert_eq!(w.days, ["2026-11-26", "2026-11-25"]);
        assert_eq!(
            w.between,
            Some((
                "2026-11-25T05:00:00.000Z".into(),
                "2026-11-26T04:59:59.999Z".into()
            ))
        );
        assert_eq!(
            w.said.as_deref(),
            Some("2026-11-25, 00:00–23:59, UTC−05:00")
        );
    }

    #[test]
    fn a_range_in_the_readers_zone_and_today_is_the_readers_today() {
        // 02:00 UTC on the 26th is still the 25th in New York.
        let now = at("2026-11-26T02:00:00Z");
        let w = window(&typed("", "09:00", "17:30", "-300"), false, now).unwrap();
        assert_eq!(w.days, ["2026-11-25"]);
        assert_eq!(
            w.between,
            Some((
                "2026-11-25T14:00:00.000Z".into(),
                "2026-11-25T22:30:59.999Z".into()
            ))
        );
        let india = window(&typed("2026-11-25", "00:00", "04:00", "330"), false, now).unwrap();
        assert_eq!(india.days, ["2026-11-24"]);
        assert_eq!(
            india.said.as_deref(),
            Some("2026-11-25, 00:00–04:00, UTC+05:30")
        );
    }

    #[test]
    fn without_an_offset_the_day_is_utc_and_nothing_needed_reads_every_day() {
        let now = at("2026-11-26T02:00:00Z");
        let w = window(&typed("", "", "", ""), true, now).unwrap();
        assert_eq!(w.days, ["2026-11-26"]);
        assert!(w.said.unwrap().ends_with("UTC"));
        assert_eq!(
            window(&typed("", "", "", "60"), false, now)
                .unwrap()
                .days
                .len(),
            0
        );
    }

    #[test]
    fn what_cannot_be_a_window_is_the_readers_mistake() {
        let now = at("2026-11-26T02:00:00Z");
        for (t, field) in [
            (typed("2026-13-01", "", "", ""), "day"),
            (typed("2026-11-25", "9", "", ""), "from"),
            (typed("2026-11-25", "10:00", "09:00", ""), "to"),
            (typed("2026-11-25", "", "", "-900"), "tz"),
            (typed("2026-11-25", "", "", "east"), "tz"),
            (typed("+262142-12-31", "", "", "-840"), "day"),
            (typed("-262143-01-01", "", "", "840"), "day"),
            (typed("9999-12-31", "", "", "-300"), "day"),
            (typed("1999-12-31", "", "", ""), "day"),
            (typed("2026-1-05", "", "", ""), "day"),
        ] {
            match window(&t, false, now) {
                Err(AppError::Invalid { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
