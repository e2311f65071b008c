//! A search's results page: the rows as the Conversations page shows them (masked), how
//! long ago each was created, and the count when it is cheap to learn.

use chrono::{DateTime, Utc};

use super::directory::Resolved;
use super::reference::Refs;
use super::search;
use super::view::{company_of, mask_contact, masked_name, project_of, PAGE_SIZE};
use super::Conversations;
use crate::model::conversations::{ConversationRow, SearchPage, SearchQuery};
use crate::model::AppError;
use crate::server::store::conversations::{self as store, Conversation, Partition};

impl Conversations {
    /// One page of a search (from its cursor), at `now`, and its count when that is cheap:
    /// a recipient's conversations are few (counted exactly); a company's may be many (one
    /// read of at most 1,000 items). A company may be typed by name: the directory says
    /// which, or that several names match.
    pub async fn search_page(
        &self,
        refs: &Refs,
        query: &SearchQuery,
        now: DateTime<Utc>,
    ) -> Result<SearchPage, AppError> {
        let mut query = query.clone();
        let company = match self.company_of_search(&query, now).await? {
            Resolved::Several(companies) => {
                return Ok(SearchPage {
                    searched: true,
                    companies,
                    ..SearchPage::default()
                })
            }
            Resolved::One(c) => {
                query.company = c.company_id.clone();
                Some(c)
            }
            Resolved::Unknown => None,
        };
        let Some(s) = search::parse(&query)? else {
            return Ok(SearchPage::default());
        };
        let start = search::start(&query);
        let found = store::search(&self.store, &s.partition, &s.filters, start, PAGE_SIZE).await?;
        let narrow = is_narrow(&s.partition);
        let count = store::count(&self.store, &s.partition, &s.filters, narrow).await?;
        Ok(SearchPage {
            searched: true,
            rows: found.rows.iter().map(|c| row(c, refs, now)).collect(),
            next: found.next,
            prev: found.prev,
            index: found.index.to_string(),
            count: Some(count.n),
            count_exact: count.exact,
            recipient: None,
            company,
            companies: Vec::new(),
            newest_first: matches!(s.partition, Partition::Recipient(_)),
        })
    }

    /// The company a search names, when it names one by its company alone (a recipient, a
    /// conversation or a company number come first).
    async fn company_of_search(
        &self,
        query: &SearchQuery,
        now: DateTime<Utc>,
    ) -> Result<Resolved, AppError> {
        let other = [&query.conversation, &query.recipient, &query.company_number];
        if query.company.trim().is_empty() || other.iter().any(|v| !v.trim().is_empty()) {
            return Ok(Resolved::Unknown);
        }
        self.directory
            .resolve(&query.company, now.timestamp())
            .await
    }
}

pub fn row(c: &Conversation, refs: &Refs, now: DateTime<Utc>) -> ConversationRow {
    ConversationRow {
        r: refs.encode(&c.primary_channel, &c.conversation_id),
        conversation_id: crate::server::domain::redact::conversation_id(&c.conversation_id),
        recipient: mask_contact(&c.primary_channel),
        name: masked_name(c),
        company: company_of(c),
        project: project_of(c),
        channel: c.channel_method.clone(),
        status: c.conversation_status.as_str().to_string(),
        task_complete: c.task_complete == 1,
        hand_off: c.hand_off_to_human,
        messages: c.message_count,
        created_at: c.created_at.clone(),
        created_ago: ago(&c.created_at, now),
    }
}

/// How long before `now` an RFC 3339 time was, in words ("just now", "5 min ago",
/// "3 h ago", "2 days ago"); empty when it does not parse.
pub fn ago(iso: &str, now: DateTime<Utc>) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(iso) else {
        return String::new();
    };
    let secs = (now - t.with_timezone(&Utc)).num_seconds();
    match secs {
        s if s < 60 => "just now".into(),
        s if s < 3_600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3_600),
        s if s < 2 * 86_400 => "yesterday".into(),
        s => format!("{} days ago", s / 86_400),
    }
}

/// A search's results: narrow when the partition is one recipient's, so its count is exact.
fn is_narrow(partition: &Partition) -> bool {
    matches!(
        partition,
        Partition::Recipient(_)
            | Partition::CompanyNumber {
                recipient: Some(_),
                ..
            }
    )
}
