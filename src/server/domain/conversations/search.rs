//! The Conversations page's search form, read into the partition and filters one index's
//! `Query` answers.

use chrono::NaiveDate;

use super::context::CHANNELS;
use super::Status;
use crate::model::AppError;
use crate::server::domain::fields::{e164, email};
use crate::server::store::conversations::{Filters, Partition};

/// The form as submitted (every field may be empty).
#[derive(Clone, Debug, Default)]
pub struct Form {
    /// A recipient phone (E.164, spaces allowed) or email.
    pub recipient: String,
    pub company: String,
    pub project: String,
    /// The company's sending number or address (reply linking).
    pub company_number: String,
    pub channel: String,
    pub status: String,
    /// `""`, `"0"` or `"1"`.
    pub task: String,
    /// `YYYY-MM-DD`, inclusive.
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    pub partition: Partition,
    pub filters: Filters,
}

/// A phone with its spaces, dashes and parentheses removed, or an email.
pub fn recipient(raw: &str, field: &str) -> Result<String, AppError> {
    let t = raw.trim();
    if t.contains('@') {
        return email(t, field);
    }
    let compact: String = t
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.'))
        .collect();
    e164(&compact, field).map_err(|_| {
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

/// `None` when nothing was asked.
pub fn parse(form: &Form) -> Result<Option<Search>, AppError> {
    let channel = form.channel.trim().to_ascii_lowercase();
    if !channel.is_empty() && !CHANNELS.contains(&channel.as_str()) {
        return Err(AppError::invalid(
            "channel",
            "Channel is whatsapp, email or sms.",
        ));
    }
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
    let created = match (from, to) {
        (None, None) => None,
        (f, t) => Some((
            f.map(|d| format!("{d}T00:00:00.000Z"))
                .unwrap_or_else(|| "0000".into()),
            // After every time of that day ("T99" sorts after "T23:59:59.999Z").
            t.map(|d| format!("{d}T99"))
                .unwrap_or_else(|| "9999".into()),
        )),
    };
    let filters = Filters {
        status: (!status.is_empty()).then(|| status.to_string()),
        channel: (!channel.is_empty()).then(|| channel.clone()),
        task_complete,
        created,
    };
    let recipient_given = !form.recipient.trim().is_empty();
    let partition = if !form.company_number.trim().is_empty() {
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
        let project = form.project.trim();
        // Index keys: within DynamoDB's key sizes (ids are created at most 128 characters).
        crate::server::domain::limits::key_part("company", form.company.trim(), 512)?;
        if !project.is_empty() {
            crate::server::domain::limits::key_part("project", project, 512)?;
        }
        Partition::Company {
            company_id: form.company.trim().to_string(),
            project_id: (!project.is_empty()).then(|| project.to_string()),
        }
    } else if !form.project.trim().is_empty() {
        return Err(AppError::invalid(
            "company",
            "A project is searched within its company.",
        ));
    } else {
        return Ok(None);
    };
    Ok(Some(Search { partition, filters }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_choose_partitions() {
        let f = Form {
            recipient: "+44 7123 456-789".into(),
            ..Form::default()
        };
        assert_eq!(
            parse(&f).unwrap().unwrap().partition,
            Partition::Recipient("+447123456789".into())
        );
        assert!(parse(&Form::default()).unwrap().is_none());
        let bad = Form {
            company_number: "+447700900444".into(),
            ..Form::default()
        };
        assert_eq!(parse(&bad).unwrap_err().field(), Some("channel"));
        let range = Form {
            company: "ci-1".into(),
            from: "2026-11-02".into(),
            to: "2026-11-01".into(),
            ..Form::default()
        };
        assert_eq!(parse(&range).unwrap_err().field(), Some("to"));
    }
}
