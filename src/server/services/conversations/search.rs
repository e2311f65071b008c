//! The Conversations page's search form, read into the partition and filters one index's
//! `Query` answers.

use chrono::NaiveDate;

use super::Status;
use crate::model::conversations::SearchQuery;
use crate::model::AppError;
use crate::server::contract::conversations::LookupQuery;
use crate::server::domain::conversations::contact::{e164, email, ChannelMethod};
use crate::server::domain::limits;
use crate::server::store::conversations::{Filters, Partition};
use crate::server::store::query::Start;

#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    pub partition: Partition,
    pub filters: Filters,
}

/// A phone as typed, without its spaces, dashes, dots and parentheses.
pub fn compact_phone(raw: &str) -> String {
    raw.trim()
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.'))
        .collect()
}

/// A phone with its spaces, dashes and parentheses removed, or an email.
pub fn recipient(raw: &str, field: &str) -> Result<String, AppError> {
    let t = raw.trim();
    if t.contains('@') {
        return email(t, field);
    }
    e164(&compact_phone(t), field).map_err(|_| {
        AppError::invalid(
            field,
            "Enter the recipient's phone in international form (+447123456789) or their email.",
        )
    })
}

fn day(raw: &str, field: &str) -> Result<Option<NaiveDate>, AppError> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(None);
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .map(Some)
        .map_err(|_| AppError::invalid(field, "Dates are YYYY-MM-DD."))
}

/// Where the page starts: after its `after` cursor, else before its `before` cursor.
pub fn start(query: &SearchQuery) -> Start<'_> {
    let after = query.after.as_deref().filter(|c| !c.is_empty());
    let before = query.before.as_deref().filter(|c| !c.is_empty());
    match (after, before) {
        (Some(a), _) => Start::After(a),
        (None, Some(b)) => Start::Before(b),
        (None, None) => Start::First,
    }
}

/// `None` when nothing was asked. The filters are checked before the partition, so a bad
/// filter is named first.
pub fn parse(form: &SearchQuery) -> Result<Option<Search>, AppError> {
    let filters = filters(form)?;
    let channel = filters.channel.clone().unwrap_or_default();
    Ok(partition(form, channel)?.map(|partition| Search { partition, filters }))
}

/// The form's filters: channel, status, task complete and the creation dates.
fn filters(form: &SearchQuery) -> Result<Filters, AppError> {
    let channel = match form.channel.trim() {
        "" => String::new(),
        c => ChannelMethod::parse(c, "channel")
            .map_err(|_| AppError::invalid("channel", "Channel is whatsapp, email or sms."))?
            .as_str()
            .to_string(),
    };
    let status = form.status.trim();
    if !status.is_empty() {
        Status::parse(status).map_err(|_| AppError::invalid("status", "Unknown status."))?;
    }
    let task_complete = match form.task.trim() {
        "" => None,
        "0" => Some(0),
        "1" => Some(1),
        _ => return Err(AppError::invalid("task", "Task complete is 0 or 1.")),
    };
    let conversation_id = form.conversation.trim();
    Ok(Filters {
        status: (!status.is_empty()).then(|| status.to_string()),
        channel: (!channel.is_empty()).then_some(channel),
        task_complete,
        created: created(form)?,
        conversation_id: (!conversation_id.is_empty()).then(|| conversation_id.to_string()),
    })
}

/// The inclusive `created_at` bounds of the form's dates, when either is given.
fn created(form: &SearchQuery) -> Result<Option<(String, String)>, AppError> {
    let from = day(&form.from, "from")?;
    let to = day(&form.to, "to")?;
    if let (Some(f), Some(t)) = (from, to) {
        if f > t {
            return Err(AppError::invalid(
                "to",
                "The end date is before the start date.",
            ));
        }
    }
    Ok(match (from, to) {
        (None, None) => None,
        (f, t) => Some((
            f.map(|d| format!("{d}T00:00:00.000Z"))
                .unwrap_or_else(|| "0000".into()),
            // After every time of that day ("T99" sorts after "T23:59:59.999Z").
            t.map(|d| format!("{d}T99"))
                .unwrap_or_else(|| "9999".into()),
        )),
    })
}

/// The partition the form asks about, most specific first: a conversation id, a company
/// number (with the channel it belongs to), a recipient, a company (and project). `None`:
/// none was given.
fn partition(form: &SearchQuery, channel: String) -> Result<Option<Partition>, AppError> {
    let recipient_given = !form.recipient.trim().is_empty();
    let partition = if !form.conversation.trim().is_empty() {
        conversation(form.conversation.trim())?
    } else if !form.company_number.trim().is_empty() {
        if channel.is_empty() {
            return Err(AppError::invalid(
                "channel",
                "Choose the channel the company number belongs to.",
            ));
        }
        let number = if channel == "email" {
            email(form.company_number.trim(), "company_number")?
        } else {
            recipient(&form.company_number, "company_number")?
        };
        let r = recipient_given
            .then(|| recipient(&form.recipient, "recipient"))
            .transpose()?;
        Partition::CompanyNumber {
            channel,
            number,
            recipient: r,
        }
    } else if recipient_given {
        Partition::Recipient(recipient(&form.recipient, "recipient")?)
    } else if !form.company.trim().is_empty() {
        company(form.company.trim(), form.project.trim())?
    } else if !form.project.trim().is_empty() {
        return Err(AppError::invalid(
            "company",
            "A project is searched within its company.",
        ));
    } else {
        return Ok(None);
    };
    Ok(Some(partition))
}

/// The partition holding a conversation id (`company#project#request#recipient`, as the
/// Channel Router makes them): its recipient's when the id ends in a phone number, which
/// reads a handful of items; else its company and project's. The id itself is a filter.
fn conversation(id: &str) -> Result<Partition, AppError> {
    limits::key_part("conversation", id, 1_000)?;
    let parts: Vec<&str> = id.split('#').collect();
    let last = parts.last().copied().unwrap_or_default();
    if last.len() >= 8 && last.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(tel) = e164(&format!("+{last}"), "conversation") {
            return Ok(Partition::Recipient(tel));
        }
    }
    match parts.as_slice() {
        [company, project, _, ..] if !company.is_empty() && !project.is_empty() => {
            self::company(company, project)
        }
        _ => Err(AppError::invalid(
            "conversation",
            "A conversation id looks like ci-aaa-001#pi-aaa-001#req123#447123456789.",
        )),
    }
}

/// A company's (or one of its projects') partition.
fn company(company: &str, project: &str) -> Result<Partition, AppError> {
    // Index keys: within DynamoDB's key sizes (ids are created at most 128 characters).
    limits::key_part("company", company, 512)?;
    if !project.is_empty() {
        limits::key_part("project", project, 512)?;
    }
    Ok(Partition::Company {
        company_id: company.to_string(),
        project_id: (!project.is_empty()).then(|| project.to_string()),
    })
}

/// The partition of a reply-linking lookup (`GET /api/v1/conversations/lookup`): the
/// channel, the company's sending number and the recipient are all required.
pub fn lookup(q: LookupQuery) -> Result<Partition, AppError> {
    let channel = q.channel.unwrap_or_default().to_ascii_lowercase();
    if !matches!(channel.as_str(), "whatsapp" | "sms" | "email") {
        return Err(AppError::invalid(
            "channel",
            "channel is whatsapp, sms or email.",
        ));
    }
    let number = q
        .company_number
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| AppError::invalid("company_number", "company_number is required."))?;
    let number = recipient(&number, "company_number")?;
    let who = q
        .recipient
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| AppError::invalid("recipient", "recipient is required."))?;
    let who = recipient(&who, "recipient")?;
    Ok(Partition::CompanyNumber {
        channel,
        number,
        recipient: Some(who),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_choose_partitions() {
        let f = SearchQuery {
            recipient: "+44 7123 456-789".into(),
            ..SearchQuery::default()
        };
        assert_eq!(
            parse(&f).unwrap().unwrap().partition,
            Partition::Recipient("+447123456789".into())
        );
        assert!(parse(&SearchQuery::default()).unwrap().is_none());
        let bad = SearchQuery {
            company_number: "+447700900444".into(),
            ..SearchQuery::default()
        };
        assert_eq!(parse(&bad).unwrap_err().field(), Some("channel"));
        let range = SearchQuery {
            company: "ci-1".into(),
            from: "2026-11-02".into(),
            to: "2026-11-01".into(),
            ..SearchQuery::default()
        };
        assert_eq!(parse(&range).unwrap_err().field(), Some("to"));
        let by_id = |id: &str| {
            parse(&SearchQuery {
                conversation: id.into(),
                ..SearchQuery::default()
            })
        };
        let s = by_id("ci-aaa-001#pi-aaa-001#req1#447123456789")
            .unwrap()
            .unwrap();
        assert_eq!(s.partition, Partition::Recipient("+447123456789".into()));
        assert_eq!(
            s.filters.conversation_id.as_deref(),
            Some("ci-aaa-001#pi-aaa-001#req1#447123456789")
        );
        assert_eq!(
            by_id("ci-aaa-001#pi-aaa-001#req1#jane")
                .unwrap()
                .unwrap()
                .partition,
            Partition::Company {
                company_id: "ci-aaa-001".into(),
                project_id: Some("pi-aaa-001".into()),
            }
        );
        assert_eq!(by_id("req1").unwrap_err().field(), Some("conversation"));
    }

    #[test]
    fn lookups_need_a_channel_a_company_number_and_a_recipient() {
        let q = |channel: &str, number: &str, recipient: &str| LookupQuery {
            channel: Some(channel.into()),
            company_number: Some(number.into()),
            recipient: Some(recipient.into()),
        };
        assert_eq!(
            lookup(q("WhatsApp", "+44 7700 900101", "+447700900555")).unwrap(),
            Partition::CompanyNumber {
                channel: "whatsapp".into(),
                number: "+447700900101".into(),
                recipient: Some("+447700900555".into()),
            }
        );
        let field = |q| lookup(q).unwrap_err().field().map(str::to_string);
        assert_eq!(
            field(q("fax", "+447700900101", "x")),
            Some("channel".into())
        );
        assert_eq!(field(q("sms", " ", "x")), Some("company_number".into()));
        assert_eq!(
            field(q("sms", "+447700900101", "")),
            Some("recipient".into())
        );
    }
}
