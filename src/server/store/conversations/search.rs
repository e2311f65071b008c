//! Finding conversations: each search is one index's `Query` (the partition key the search
//! gives, the index's sort key when a filter matches it, the other filters as filter
//! expressions), paged both ways.

use super::{decode, Conversation};
use crate::server::store::items::{n, s};
use crate::server::store::query::{self, Cond, Count, Spec, Start};
use crate::server::store::schema::{
    CONVERSATIONS, CONVERSATIONS_BY_CHANNEL, CONVERSATIONS_BY_COMPANY_PROJECT,
    CONVERSATIONS_BY_CREATED, CONVERSATIONS_BY_EMAIL, CONVERSATIONS_BY_SMS,
    CONVERSATIONS_BY_STATUS, CONVERSATIONS_BY_TASK, CONVERSATIONS_BY_WHATSAPP,
};
use crate::server::store::{Store, StoreError};

/// Which partition a search reads: each is one index's partition key.
#[derive(Clone, Debug, PartialEq)]
pub enum Partition {
    /// The recipient's phone or email: the table's own partition (and its LSIs).
    Recipient(String),
    Company {
        company_id: String,
        project_id: Option<String>,
    },
    /// The reply-linking indexes: the company's sending number or address for a channel.
    CompanyNumber {
        channel: String,
        number: String,
        recipient: Option<String>,
    },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filters {
    pub status: Option<String>,
    pub channel: Option<String>,
    pub task_complete: Option<i64>,
    /// Inclusive ISO bounds on `created_at`.
    pub created: Option<(String, String)>,
}

/// What a results table shows; never the messages themselves.
const SUMMARY: &[&str] = &[
    "recipient_tel",
    "recipient_email",
    "company_id",
    "project_id",
    "company_name",
    "project_name",
    "channel_method",
    "conversation_status",
    "request_id",
    "created_at",
    "updated_at",
    "task_complete",
    "recipient_first_name",
    "recipient_last_name",
    "comms_consent",
    "function_call",
    "hand_off_to_human",
    "ttl",
    "message_count",
];

const TABLE_KEYS: [&str; 2] = ["primary_channel", "conversation_id"];

/// The query that answers a search, and the index it uses (`None`: the table).
pub fn spec(store: &Store, partition: &Partition, filters: &Filters) -> Spec {
    let mut f: Vec<(&'static str, Cond)> = Vec::new();
    let created = filters
        .created
        .clone()
        .map(|(a, b)| Cond::Between(s(a), s(b)));
    let (index, pk, sk, ascending) = match partition {
        Partition::Recipient(pc) => {
            // The most specific LSI answers the key condition; the rest filter.
            let pk = ("primary_channel", s(pc));
            if let Some(st) = &filters.status {
                (
                    CONVERSATIONS_BY_STATUS,
                    pk,
                    Some(("conversation_status", Cond::Eq(s(st)))),
                    true,
                )
            } else if let Some(ch) = &filters.channel {
                (
                    CONVERSATIONS_BY_CHANNEL,
                    pk,
                    Some(("channel_method", Cond::Eq(s(ch)))),
                    true,
                )
            } else if let Some(t) = filters.task_complete {
                (
                    CONVERSATIONS_BY_TASK,
                    pk,
                    Some(("task_complete", Cond::Eq(n(t)))),
                    true,
                )
            } else {
                (
                    CONVERSATIONS_BY_CREATED,
                    pk,
                    created.clone().map(|c| ("created_at", c)),
                    false,
                )
            }
        }
        Partition::Company {
            company_id,
            project_id,
        } => (
            CONVERSATIONS_BY_COMPANY_PROJECT,
            ("company_id", s(company_id)),
            project_id.clone().map(|p| ("project_id", Cond::Eq(s(p)))),
            true,
        ),
        Partition::CompanyNumber {
            channel,
            number,
            recipient,
        } => {
            let (index, pk_name, sk_name) = match channel.as_str() {
                "sms" => (
                    CONVERSATIONS_BY_SMS,
                    "gsi_company_sms_number",
                    "gsi_recipient_tel",
                ),
                "email" => (
                    CONVERSATIONS_BY_EMAIL,
                    "gsi_company_email",
                    "gsi_recipient_email",
                ),
                _ => (
                    CONVERSATIONS_BY_WHATSAPP,
                    "gsi_company_whatsapp_number",
                    "gsi_recipient_tel",
                ),
            };
            (
                index,
                (pk_name, s(number)),
                recipient.clone().map(|r| (sk_name, Cond::Eq(s(r)))),
                true,
            )
        }
    };
    let sk_name = sk.as_ref().map(|(name, _)| *name);
    let index_sk = index_sort_key(index);
    if let Some(st) = &filters.status {
        if index_sk != "conversation_status" {
            f.push(("conversation_status", Cond::Eq(s(st))));
        }
    }
    if let Some(ch) = &filters.channel {
        if index_sk != "channel_method" {
            f.push(("channel_method", Cond::Eq(s(ch))));
        }
    }
    if let Some(t) = filters.task_complete {
        if index_sk != "task_complete" {
            f.push(("task_complete", Cond::Eq(n(t))));
        }
    }
    if let Some(c) = created {
        if sk_name != Some("created_at") {
            f.push(("created_at", c));
        }
    }
    let mut key_attrs: Vec<&'static str> = TABLE_KEYS.to_vec();
    for a in [pk.0, index_sk] {
        if !key_attrs.contains(&a) {
            key_attrs.push(a);
        }
    }
    Spec {
        table: store.table(CONVERSATIONS.base),
        index: Some(index),
        pk,
        sk,
        filters: f,
        ascending,
        key_attrs,
        projection: Some(SUMMARY.to_vec()),
    }
}

fn index_sort_key(index: &str) -> &'static str {
    match index {
        CONVERSATIONS_BY_STATUS => "conversation_status",
        CONVERSATIONS_BY_CHANNEL => "channel_method",
        CONVERSATIONS_BY_TASK => "task_complete",
        CONVERSATIONS_BY_CREATED => "created_at",
        CONVERSATIONS_BY_COMPANY_PROJECT => "project_id",
        CONVERSATIONS_BY_EMAIL => "gsi_recipient_email",
        _ => "gsi_recipient_tel",
    }
}

pub struct Found {
    pub rows: Vec<Conversation>,
    pub next: Option<String>,
    pub prev: Option<String>,
    pub index: &'static str,
}

pub async fn search(
    store: &Store,
    partition: &Partition,
    filters: &Filters,
    start: Start<'_>,
    size: usize,
) -> Result<Found, StoreError> {
    let spec = spec(store, partition, filters);
    let page = query::page(store, &spec, start, size).await?;
    let rows = page
        .items
        .into_iter()
        .map(|i| decode(&spec.table, i))
        .collect::<Result<_, _>>()?;
    Ok(Found {
        rows,
        next: page.next,
        prev: page.prev,
        index: spec.index.unwrap_or("table"),
    })
}

/// Counts the matches: every one for a narrow search, the first 1,000 for a broad one
/// (a company can have hundreds of thousands; "1,000+" says enough).
pub async fn count(
    store: &Store,
    partition: &Partition,
    filters: &Filters,
    narrow: bool,
) -> Result<Count, StoreError> {
    let (calls, per_call) = if narrow { (4, None) } else { (1, Some(1000)) };
    query::count(store, &spec(store, partition, filters), calls, per_call).await
}
