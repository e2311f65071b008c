//! When a failed delivery is tried again: a schedule of pauses after the first attempt
//! (by default Svix's: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — eight attempts over
//! about 28 hours), each stretched or shrunk by up to a tenth at random so that actions that
//! failed together do not come back together, and never sooner than the receiver's
//! `Retry-After`.

use std::time::Duration;

/// The pauses between attempts; its length is the number of retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

pub const DEFAULT: &str = "5s,5m,30m,2h,5h,10h,10h";

impl RetrySchedule {
    /// `5s,5m,30m,2h` (units s, m, h, d; `ms` for tests).
    pub fn parse(text: &str) -> Result<RetrySchedule, String> {
        let pauses = text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(pause)
            .collect::<Result<Vec<_>, _>>()?;
        if pauses.len() > 20 {
            return Err("at most 20 retries".into());
        }
        Ok(RetrySchedule(pauses))
    }

    /// Attempts in all, the first included.
    pub fn attempts(&self) -> u32 {
        self.0.len() as u32 + 1
    }

    /// The pause before attempt `next` (2 for the first retry), or `None` when the schedule
    /// is spent. `jitter` is a number in `0..1` (random in production); `retry_after` is
    /// what the receiver asked for.
    pub fn pause(&self, next: u32, jitter: f64, retry_after: Option<Duration>) -> Option<Duration> {
        let base = *self.0.get(next.checked_sub(2)? as usize)?;
        let factor = 0.9 + 0.2 * jitter.clamp(0.0, 1.0);
        let jittered = base.mul_f64(factor);
        Some(retry_after.map_or(jittered, |r| jittered.max(r)))
    }
}

impl Default for RetrySchedule {
    fn default() -> Self {
        RetrySchedule::parse(DEFAULT).unwrap_or_else(|_| unreachable!("the default parses"))
    }
}

fn pause(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text}: give a unit (s, m, h or d)"))?;
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().map_err(|_| format!("{text}: not a number"))?;
    let secs = match unit {
        "ms" => return Ok(Duration::from_millis(n)),
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("{text}: the unit is s, m, h or d")),
    };
    Ok(Duration::from_secs(secs))
}

/// A receiver's `Retry-After`: seconds (an HTTP date is rare from webhooks and ignored).
pub fn retry_after(header: Option<&str>) -> Option<Duration> {
    header?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_svixs_schedule_with_jitter() {
        let s = RetrySchedule::default();
        assert_eq!(s.attempts(), 8);
        assert_eq!(s.pause(2, 0.5, None), Some(Duration::from_secs(5)));
        assert_eq!(s.pause(3, 0.5, None), Some(Duration::from_secs(300)));
        assert_eq!(s.pause(8, 0.5, None), Some(Duration::from_secs(36_000)));
        assert_eq!(s.pause(9, 0.5, None), None);
        assert_eq!(s.pause(2, 0.0, None), Some(Duration::from_millis(4500)));
        assert_eq!(s.pause(2, 1.0, None), Some(Duration::from_millis(5500)));
        assert_eq!(
            s.pause(2, 0.5, Some(Duration::from_secs(60))),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn schedules_parse_and_refuse_nonsense() {
        assert_eq!(
            RetrySchedule::parse("100ms, 1s,2m").unwrap().0,
            [
                Duration::from_millis(100),
                Duration::from_secs(1),
                Duration::from_secs(120)
            ]
        );
        assert!(RetrySchedule::parse("5").is_err());
        assert!(RetrySchedule::parse("5w").is_err());
        assert_eq!(RetrySchedule::parse("").unwrap().attempts(), 1);
        assert_eq!(retry_after(Some(" 30 ")), Some(Duration::from_secs(30)));
        assert_eq!(retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
    }
}
