//! Finding conversations: each search is one index's `Query` (the partition key the search
//! gives, the index's sort key when a filter matches it, the other filters as filter
//! expressions), paged both ways.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{decode, Conversation};
use crate::server::store::item::{n, s};
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
    /// One conversation, by its id (the table's sort key).
    pub conversation_id: Option<String>,
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

/// The query that answers a search: the index whose key condition is most specific, and
/// the search's other filters as filter expressions.
pub fn spec(store: &Store, partition: &Partition, filters: &Filters) -> Spec {
    let created = filters
        .created
        .clone()
        .map(|(a, b)| Cond::Between(s(a), s(b)));
    let key = KeyChoice::of(partition, filters, created.clone());
    let index_sk = index_sort_key(key.index);
    let sk_name = key.sk.as_ref().map(|(name, _)| *name);
    let filters = residual_filters(filters, created, index_sk, sk_name);
    let key_attrs = key_attrs(key.pk.0, index_sk);
    Spec {
        table: store.table(CONVERSATIONS.base),
        index: Some(key.index),
        pk: key.pk,
        sk: key.sk,
        filters,
        ascending: key.ascending,
        key_attrs,
        projection: Some(SUMMARY.to_vec()),
    }
}

/// The index a search reads and its key condition.
struct KeyChoice {
    index: &'static str,
    pk: (&'static str, AttributeValue),
    sk: Option<(&'static str, Cond)>,
    ascending: bool,
}

impl KeyChoice {
    fn of(partition: &Partition, filters: &Filters, created: Option<Cond>) -> KeyChoice {
        match partition {
            Partition::Recipient(pc) => KeyChoice::recipient(pc, filters, created),
            Partition::Company {
                company_id,
                project_id,
            } => KeyChoice {
                index: CONVERSATIONS_BY_COMPANY_PROJECT,
                pk: ("company_id", s(company_id)),
                sk: project_id.clone().map(|p| ("project_id", Cond::Eq(s(p)))),
                ascending: true,
            },
            Partition::CompanyNumber {
                channel,
                number,
                recipient,
            } => KeyChoice::company_number(channel, number, recipient.as_deref()),
        }
    }

    /// A recipient's conversations: the most specific LSI answers the key condition (status,
    /// then channel, then task complete; else newest first by creation); the rest filter.
    fn recipient(pc: &str, filters: &Filters, created: Option<Cond>) -> KeyChoice {
        let (index, sk, ascending) = if let Some(st) = &filters.status {
            (
                CONVERSATIONS_BY_STATUS,
                Some(("conversation_status", Cond::Eq(s(st)))),
                true,
            )
        } else if let Some(ch) = &filters.channel {
            (
                CONVERSATIONS_BY_CHANNEL,
                Some(("channel_method", Cond::Eq(s(ch)))),
                true,
            )
        } else if let Some(t) = filters.task_complete {
            (
                CONVERSATIONS_BY_TASK,
                Some(("task_complete", Cond::Eq(n(t)))),
                true,
            )
        } else {
            (
                CONVERSATIONS_BY_CREATED,
                created.map(|c| ("created_at", c)),
                false,
            )
        };
        KeyChoice {
            index,
            pk: ("primary_channel", s(pc)),
            sk,
            ascending,
        }
    }

    /// Reply linking: the channel's sparse index of company sending numbers (or addresses),
    /// narrowed to one recipient when given.
    fn company_number(channel: &str, number: &str, recipient: Option<&str>) -> KeyChoice {
        let (index, pk_name, sk_name) = match channel {
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
        KeyChoice {
            index,
            pk: (pk_name, s(number)),
            sk: recipient.map(|r| (sk_name, Cond::Eq(s(r)))),
            ascending: true,
        }
    }
}

/// The search's filters the key condition does not already answer: each one whose
/// attribute is not the index's sort key (the creation range: not the key condition's).
fn residual_filters(
    filters: &Filters,
    created: Option<Cond>,
    index_sk: &str,
    sk_name: Option<&str>,
) -> Vec<(&'static str, Cond)> {
    let mut f: Vec<(&'static str, Cond)> = Vec::new();
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
    if let Some(id) = &filters.conversation_id {
        f.push(("conversation_id", Cond::Eq(s(id))));
    }
    f
}

/// The attributes a cursor is made of: the table's keys and the index's.
fn key_attrs(pk_name: &'static str, index_sk: &'static str) -> Vec<&'static str> {
    let mut key_attrs: Vec<&'static str> = TABLE_KEYS.to_vec();
    for a in [pk_name, index_sk] {
        if !key_attrs.contains(&a) {
            key_attrs.push(a);
        }
    }
    key_attrs
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
