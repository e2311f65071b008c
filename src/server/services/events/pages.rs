//! Read models for the Events and conversation pages, and Overview's figures: the
//! [`Events`] service's reads, with every personal detail masked.

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::model::events::{EventPage, EventRow, EventStats, StateView};
use crate::model::users::Role;
use crate::model::AppError;
use crate::server::domain::audit::partition;
use crate::server::domain::redact;
use crate::server::services::conversations::reference::Refs;
use crate::server::store::audit;
use crate::server::store::cursor::Binding;
use crate::server::store::events::{self as records, EventRecord};

use super::Events;
use crate::server::store::events::outbox::Group;
use crate::server::store::events::outbox_reads::{self, Filter};

const PAGE: i32 = 50;

/// `text` (a key, a payload) with the conversation id it embeds masked, and anything else
/// personal redacted: event and action keys are built from conversation ids.
pub(crate) fn masked_in(text: &str, conversation_id: &str) -> String {
    if conversation_id.is_empty() {
        return redact::redact(text);
    }
    redact::redact(&text.replace(conversation_id, &redact::conversation_id(conversation_id)))
}

fn row(r: EventRecord, refs: &Refs) -> EventRow {
    let team = r
        .decision
        .as_deref()
        .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .and_then(|d| d.get("team").and_then(|t| t.as_str()).map(str::to_string));
    EventRow {
        event_key: masked_in(&r.event_id, &r.conversation_id),
        conversation_ref: refs.of_id(&r.conversation_id),
        conversation_id: redact::conversation_id(&r.conversation_id),
        message_id: r.source_message_id.map(|m| redact::redact(&m)),
        channel: r.channel,
        created_at: r.created_at,
        status: r.status.as_str().to_string(),
        mode: r.mode.as_str().to_string(),
        safe_mode: r.safe_mode,
        intent: r.intent,
        team,
        duplicates: r.duplicates,
        attempts: r.attempts,
    }
}

/// The conversation a page names (its reference opened, or an id typed), by the
/// partition rule (`domain::audit::partition`); `None` when none is given.
pub(crate) fn page_conversation(refs: &Refs, given: &str) -> Result<Option<String>, AppError> {
    let id = refs.given(given).into_id();
    partition::check(&id)?;
    Ok(Some(id).filter(|c| !c.is_empty()))
}

/// As [`page_conversation`], required.
pub(crate) fn required_conversation(refs: &Refs, given: &str) -> Result<String, AppError> {
    page_conversation(refs, given)?
        .ok_or_else(|| AppError::invalid("conversation", "Give a conversation id."))
}

impl Events {
    /// Recent events, newest first (today, then yesterday), or one conversation's events.
    /// A cursor for the recent list also says which day it is in: `{day, key cursor}`,
    /// sealed as one.
    pub async fn list(
        &self,
        refs: &Refs,
        conversation: &str,
        cursor: Option<&str>,
    ) -> Result<EventPage, AppError> {
        if let Some(conversation) = page_conversation(refs, conversation)? {
            let page =
                records::events_of_conversation(&self.store, &conversation, cursor, PAGE).await?;
            return Ok(EventPage {
                events: page.items.into_iter().map(|r| row(r, refs)).collect(),
                next_cursor: page.next_cursor,
                conversation_ref: refs.of_id(&conversation),
            });
        }
        let now = self.clock.now();
        let today = now.format("%Y-%m-%d").to_string();
        let cursors = self.store.cursors();
        let binding = Binding::new(["recent-events"]);
        let (day, inner) = match cursor {
            None => (today.clone(), None),
            Some(c) => {
                let v = cursors.open(&binding, c)?;
                let day = v["day"].as_str().ok_or(bad_cursor())?.to_string();
                NaiveDate::parse_from_str(&day, "%Y-%m-%d").map_err(|_| bad_cursor())?;
                (day, v["inner"].as_str().map(str::to_string))
            }
        };
        let mut page = records::events_of_day(&self.store, &day, inner.as_deref(), PAGE).await?;
        let yesterday = (now - Duration::days(1)).format("%Y-%m-%d").to_string();
        // Just after midnight today has nothing yet: the first page is yesterday's, rather
        // than "No events" above an "Older" link.
        let mut day = day;
        if page.items.is_empty() && cursor.is_none() {
            day = yesterday.clone();
            page = records::events_of_day(&self.store, &day, None, PAGE).await?;
        }
        // Today runs out: go on with yesterday (two days are "recent").
        let seal = |day: &str, inner: Option<String>| {
            cursors.seal(&binding, serde_json::json!({"day": day, "inner": inner}))
        };
        let next_cursor = match page.next_cursor {
            Some(c) => Some(seal(&day, Some(c))),
            // "Older" only when yesterday has something to show (one item read to know).
            None if day == today => {
                let peek = records::events_of_day(&self.store, &yesterday, None, 1).await?;
                (!peek.items.is_empty()).then(|| seal(&yesterday, None))
            }
            None => None,
        };
        Ok(EventPage {
            events: page.items.into_iter().map(|r| row(r, refs)).collect(),
            next_cursor,
            conversation_ref: String::new(),
        })
    }

    /// Table B for one conversation.
    pub async fn conversation_state(
        &self,
        refs: &Refs,
        conversation: &str,
    ) -> Result<StateView, AppError> {
        let conversation = &required_conversation(refs, conversation)?;
        let s = records::get_state(&self.store, conversation).await?;
        Ok(StateView {
            conversation_id: redact::conversation_id(conversation),
            conversation_ref: refs.of_id(conversation),
            exists: s.version > 0,
            version: s.version,
            updated_at: s.updated_at,
            last_intent: s.last_intent,
            last_routed_team: s.last_routed_team,
            last_routing_confidence: s.last_routing_confidence,
            last_processed_message_id: s.last_processed_message_id.map(|m| redact::redact(&m)),
            risk_flags: s.risk_flags,
            pending_flow: s.pending_flow.map(|f| {
                format!(
                    "{} (asked {}, {} message(s))",
                    f.flow_type, f.requested_at, f.attempts
                )
            }),
            last_auto_reply: s
                .last_auto_reply
                .map(|r| format!("{} at {}", r.reply_type, r.sent_at)),
            auto_replies_sent: s.auto_replies_sent,
            order_ref_last4: s.order_ref_last4.map(|l| format!("***{l}")),
            events_seen: s.events_seen,
        })
    }

    /// Overview's figures: the last hour's events and duplicates, today's suppressed side
    /// effects, the outbox, and where side effects are delivered. Whatever the traffic, a
    /// view reads a bounded number of items: the newest [`OVERVIEW_SAMPLE`] events of each
    /// day the hour touches, divided among the day's shards (a busier shard's hour is
    /// estimated from its newest, and the figures say so) and [`SUPPRESSED_CALLS`] counting
    /// read of each shard of today's audit records.
    pub async fn stats(&self, role: Role) -> Result<EventStats, AppError> {
        let now = self.clock.now();
        let from = now - Duration::hours(1);
        let from_sk = crate::server::clock::iso(from);
        let mut days = vec![now.format("%Y-%m-%d").to_string()];
        let earlier = from.format("%Y-%m-%d").to_string();
        if earlier != days[0] {
            days.push(earlier);
        }
        let (mut events, mut duplicates, mut estimated) = (0, 0, false);
        for day in &days {
            let samples =
                records::count_events_since(&self.store, day, &from_sk, OVERVIEW_SAMPLE).await?;
            for sample in &samples {
                let (e, d) = hour_from_sample(sample, &from_sk);
                events += e;
                duplicates += d;
                estimated |= !sample.exact;
            }
        }
        let deliveries = events + duplicates;
        let suppressed =
            audit::count_day_results(&self.store, &days[0], "suppressed", SUPPRESSED_CALLS).await?;
        Ok(EventStats {
            events_last_hour: events,
            per_minute: events as f64 / 60.0,
            received_last_hour: deliveries,
            duplicates_last_hour: duplicates,
            duplicate_rate_pct: (deliveries > 0)
                .then(|| duplicates as f64 * 100.0 / deliveries as f64),
            events_estimated: estimated,
            suppressed_today: suppressed.n,
            suppressed_exact: suppressed.exact,
            outbox_pending: outbox_reads::count(&self.store, Group::Due, &Filter::default())
                .await?,
            receiver: self.receiver(role).await?,
        })
    }
}

/// The newest events the Overview reads of each day, at most.
pub const OVERVIEW_SAMPLE: usize = 5000;
/// Counting reads of each of today's audit shards for the suppressed records, at most
/// (each looks at 100 records: 6,500 in all, about 240 read units).
pub const SUPPRESSED_CALLS: usize = 1;

/// The last hour's events and duplicates of one shard from what was read: as read when it
/// was all of the hour, else at the rate the sample shows (its events over the span from
/// its oldest to its newest, not to now: the index lags, and a clock ahead would shrink the
/// span) over the part of the hour it did not read (from `from_sk`, the hour's start, to
/// its oldest), added to it.
fn hour_from_sample(read: &records::EventSample, from_sk: &str) -> (u64, u64) {
    if read.exact || read.events < 2 {
        return (read.events, read.duplicates);
    }
    let time = |sk: Option<&str>| {
        sk.and_then(|sk| sk.split('#').next())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc).timestamp_millis())
    };
    let (Some(newest), Some(oldest), Some(start)) = (
        time(read.newest_sk.as_deref()),
        time(read.oldest_sk.as_deref()),
        time(Some(from_sk)),
    ) else {
        return (read.events, read.duplicates);
    };
    let span = newest - oldest;
    let unread = oldest - start;
    if span <= 0 || unread <= 0 {
        return (read.events, read.duplicates);
    }
    // `events - 1` gaps span the sample.
    let per_ms = (read.events - 1) as f64 / span as f64;
    let more = (per_ms * unread as f64).round() as u64;
    let dup_per_event = read.duplicates as f64 / read.events as f64;
    (
        read.events + more,
        read.duplicates + (dup_per_event * more as f64).round() as u64,
    )
}

fn bad_cursor() -> AppError {
    AppError::invalid(
        "cursor",
        "This page link is not valid any more; start again from the first page.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_of_the_newest_events_is_scaled_to_the_hour() {
        let sample = |exact, newest: &str, oldest: &str| records::EventSample {
            events: 5001,
            duplicates: 50,
            exact,
            newest_sk: Some(format!("{newest}#e-2")),
            oldest_sk: Some(format!("{oldest}#e-1")),
        };
        let hour_start = "2026-12-06T11:00:00.000Z";
        // 5,001 events in 30 s (a lagging index: the newest is 10 s old): 10,000 a minute;
        // the 59 min 20 s before them add 593,333.
        let (events, duplicates) = hour_from_sample(
            &sample(
                false,
                "2026-12-06T11:59:50.000Z",
                "2026-12-06T11:59:20.000Z",
            ),
            hour_start,
        );
        assert_eq!(events, 5001 + 593_333);
        assert_eq!(duplicates, 50 + 5932);
        // All of the hour was read: as read.
        assert_eq!(
            hour_from_sample(
                &sample(true, "2026-12-06T11:59:50.000Z", "2026-12-06T11:59:20.000Z"),
                hour_start
            ),
            (5001, 50)
        );
        // A time that does not read: the sample as read, never a guess.
        assert_eq!(
            hour_from_sample(&sample(false, "x", "2026-12-06T11:59:20.000Z"), hour_start),
            (5001, 50)
        );
    }
}
