//! The inbox's writes: configuration, publish jobs, message copies with their counters,
//! reads — each a transaction whose conditions make a repeat change nothing.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use serde::Serialize;

use super::{
    get, item, publication_sk, read_shard_pk, stats_sk, table, tenant_pk, Job, Kind, MessageItem,
    Publication, PublicationStatus, Receipt, Taxonomy, ALL, READ_SHARDS, READ_SHARD_SK,
    REGISTRY_PK,
};
use crate::server::store::item::{n, s};
use crate::server::store::tx::{self, Outcome};
use crate::server::store::{Store, StoreError};

/// Writes a settings-like item (tenant settings, inbox config) and registers the tenant.
pub async fn put_config<T: Serialize>(
    store: &Store,
    tenant: &str,
    v: &T,
    keep_until: i64,
) -> Result<(), StoreError> {
    let registry = HashMap::from([
        ("pk".to_string(), s(REGISTRY_PK)),
        ("sk".to_string(), s(tenant)),
        ("kind".to_string(), s(Kind::Tenant.as_str())),
        ("expiredat".to_string(), n(keep_until)),
    ]);
    let actions = vec![
        put(store, item(store, v)?, None)?,
        put(store, registry, None)?,
    ];
    tx::transact(store, actions).await?;
    Ok(())
}

/// The condition of a put that must not replace an item.
const NEW_ONLY: &str = "attribute_not_exists(pk)";

fn put(
    store: &Store,
    item: HashMap<String, AttributeValue>,
    condition: Option<&str>,
) -> Result<TransactWriteItem, StoreError> {
    let p = Put::builder()
        .table_name(table(store))
        .set_item(Some(item))
        .set_condition_expression(condition.map(str::to_string))
        .build()
        .map_err(|e| StoreError::corrupt("inbox put", e))?;
    Ok(TransactWriteItem::builder().put(p).build())
}

/// How much a change moves the counters.
#[derive(Clone, Copy, Debug)]
pub struct Delta {
    pub published: i64,
    pub read: i64,
}

impl Delta {
    /// One message copy delivered.
    pub const PUBLISHED: Delta = Delta {
        published: 1,
        read: 0,
    };
    /// One message read.
    pub const READ: Delta = Delta {
        published: 0,
        read: 1,
    };
}

/// Whose counters a stats item holds (docs/inbox.md lists these on every stats record).
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    pub tenant_key: &'a str,
    pub inbox_key: &'a str,
    pub uid: &'a str,
}

/// `ADD published :p, read :r` on a stats item, creating it with its kind and owner if
/// needed.
pub(crate) fn bump(
    store: &Store,
    pk: &str,
    owner: Owner<'_>,
    category: &str,
    d: Delta,
    keep_until: i64,
) -> Result<TransactWriteItem, StoreError> {
    let mut adds = Vec::new();
    let mut u = Update::builder()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(stats_sk(category)))
        .expression_attribute_values(":k", s(Kind::Stats.as_str()))
        .expression_attribute_values(":e", n(keep_until))
        .expression_attribute_values(":tk", s(owner.tenant_key))
        .expression_attribute_values(":ik", s(owner.inbox_key))
        .expression_attribute_values(":uid", s(owner.uid));
    if d.published != 0 {
        adds.push("published :p");
        u = u.expression_attribute_values(":p", n(d.published));
    }
    if d.read != 0 {
        adds.push("#r :r");
        u = u
            .expression_attribute_names("#r", "read")
            .expression_attribute_values(":r", n(d.read));
    }
    let u = u
        .update_expression(format!(
            "ADD {} SET kind = :k, expiredat = :e, tenant_key = :tk, inbox_key = :ik, #uid = :uid",
            adds.join(", ")
        ))
        .expression_attribute_names("#uid", "uid")
        .build()
        .map_err(|e| StoreError::corrupt("inbox stats", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// The counters a message copy or a read receipt counts in: those of its partition `pk`
/// (`c#*` and, if it has one, its category's), held for `owner`.
#[derive(Clone, Copy, Debug)]
pub struct CountedIn<'a> {
    pub pk: &'a str,
    pub owner: Owner<'a>,
    pub category: Option<&'a str>,
}

/// The stats updates for one message (or read) counted in `at`.
pub(crate) fn bumps(
    store: &Store,
    at: CountedIn<'_>,
    d: Delta,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut out = vec![bump(store, at.pk, at.owner, ALL, d, keep_until)?];
    if let Some(c) = at.category {
        out.push(bump(store, at.pk, at.owner, c, d, keep_until)?);
    }
    Ok(out)
}

impl<'a> CountedIn<'a> {
    fn of(
        pk: &'a str,
        tenant_key: &'a str,
        inbox_key: &'a str,
        uid: &'a str,
        taxonomy: &'a Taxonomy,
    ) -> CountedIn<'a> {
        CountedIn {
            pk,
            owner: Owner {
                tenant_key,
                inbox_key,
                uid,
            },
            category: taxonomy.category.as_deref(),
        }
    }
}

/// Where a message copy counts: its partition (a user's, or the public one).
fn message_counts(m: &MessageItem) -> CountedIn<'_> {
    CountedIn::of(&m.pk, &m.tenant_key, &m.inbox_key, &m.uid, &m.taxonomy)
}

/// Where a read receipt counts: the reader's partition.
fn receipt_counts(r: &Receipt) -> CountedIn<'_> {
    CountedIn::of(&r.pk, &r.tenant_key, &r.inbox_key, &r.uid, &r.taxonomy)
}

/// A new message copy or read receipt (refused if its key exists) with the counters it
/// moves by `d`.
fn put_counted<T: Serialize>(
    store: &Store,
    new: &T,
    at: CountedIn<'_>,
    d: Delta,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut out = vec![put(store, item(store, new)?, Some(NEW_ONLY))?];
    out.extend(bumps(store, at, d, keep_until)?);
    Ok(out)
}

pub enum JobStart {
    New,
    /// A publish with this key started before: resume with its message id.
    Resume(Job),
}

/// Records the job and its publication together, unless the job exists.
pub async fn start_job(
    store: &Store,
    tenant: &str,
    job: &Job,
    publication: &Publication,
) -> Result<JobStart, StoreError> {
    let actions = vec![
        put(store, item(store, job)?, Some(NEW_ONLY))?,
        put(store, item(store, publication)?, None)?,
    ];
    match tx::transact(store, actions).await? {
        Outcome::Done => Ok(JobStart::New),
        Outcome::Refused(_) => {
            let found: Job = get(store, &tenant_pk(tenant), &job.sk)
                .await?
                .ok_or_else(|| StoreError::corrupt(&table(store), "job vanished"))?;
            Ok(JobStart::Resume(found))
        }
    }
}

pub enum Written {
    Done,
    /// Some actions' conditions failed (their indexes); nothing was written.
    Refused(Vec<usize>),
}

/// Runs one transaction (conflicts and throttles retried by [`tx::transact`]) and says
/// how it ended.
pub(crate) async fn transact(
    store: &Store,
    actions: Vec<TransactWriteItem>,
) -> Result<Written, StoreError> {
    Ok(match tx::transact(store, actions).await? {
        Outcome::Done => Written::Done,
        Outcome::Refused(r) => Written::Refused(r.into_iter().map(|(i, _)| i).collect()),
    })
}

/// The actions that deliver one message copy and count it.
pub fn deliver(
    store: &Store,
    m: &MessageItem,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    put_counted(store, m, message_counts(m), Delta::PUBLISHED, keep_until)
}

pub async fn finish_publication(
    store: &Store,
    tenant: &str,
    inbox: &str,
    id: &str,
) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(tenant_pk(tenant)))
        .key("sk", s(publication_sk(inbox, id)))
        .update_expression("SET #st = :p")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_names("#st", "status")
        .expression_attribute_values(":p", s(PublicationStatus::Published.as_str()));
    tx::retrying(|| async {
        req.clone()
            .send()
            .await
            .map_err(StoreError::request("UpdateItem"))
    })
    .await?;
    Ok(())
}

/// Marks a user message read: `readat` only if absent, with the counters, in one
/// transaction.
pub fn mark_user_message(
    store: &Store,
    m: &MessageItem,
    tenant: &str,
    now_ms: i64,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let now_s = now_ms / 1000;
    let set = Update::builder()
        .table_name(table(store))
        .key("pk", s(&m.pk))
        .key("sk", s(&m.sk))
        .update_expression("SET readat = :now")
        .condition_expression(
            "attribute_exists(pk) AND attribute_not_exists(readat) AND expiredat > :s",
        )
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":s", n(now_s))
        .build()
        .map_err(|e| StoreError::corrupt("inbox read", e))?;
    let mut out = vec![TransactWriteItem::builder().update(set).build()];
    out.extend(bumps(store, message_counts(m), Delta::READ, keep_until)?);
    out.push(count_publication_read(store, tenant, m)?);
    Ok(out)
}

/// Marks a public message read for one user: their receipt only if absent, with the
/// counters, in one transaction.
///
/// The public message itself is not part of the transaction (the caller has just read
/// it, live): every reader of a broadcast would otherwise hold that one item, and on AWS
/// concurrent readers would cancel each other (`TransactionConflict`). A message that
/// expires between that read and this write leaves a receipt that expires with it; the
/// stream consumer then counts both removals, so the counters stay exact.
pub fn mark_public_message(
    store: &Store,
    m: &MessageItem,
    receipt: &Receipt,
    tenant: &str,
    keep_until: i64,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut out = put_counted(
        store,
        receipt,
        receipt_counts(receipt),
        Delta::READ,
        keep_until,
    )?;
    out.push(count_publication_read(store, tenant, m)?);
    Ok(out)
}

/// One read of a publication, counted in one of its [`READ_SHARDS`] counter items (each
/// its own partition), picked at random: the readers of one broadcast, all at once, then
/// rarely write the same item. The count is the sum of the shards.
fn count_publication_read(
    store: &Store,
    tenant: &str,
    m: &MessageItem,
) -> Result<TransactWriteItem, StoreError> {
    let mut b = [0u8; 4];
    let shard = getrandom::fill(&mut b).map_or(0, |_| u32::from_le_bytes(b) % READ_SHARDS);
    let u = Update::builder()
        .table_name(table(store))
        .key("pk", s(read_shard_pk(tenant, &m.inbox_key, &m.id, shard)))
        .key("sk", s(READ_SHARD_SK))
        .update_expression("ADD #r :one SET kind = :k, expiredat = :e")
        .expression_attribute_names("#r", "read")
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":k", s(Kind::ReadShard.as_str()))
        // Lives as long as the publication it counts for.
        .expression_attribute_values(":e", n(m.expiredat + 86_400))
        .build()
        .map_err(|e| StoreError::corrupt("inbox publication", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// The benchmark's baseline for a read: a bare `SET readat` on one item, without the
/// condition, the counters or the transaction a real read has.
pub async fn set_readat_unguarded(
    store: &Store,
    pk: &str,
    sk: &str,
    ms: i64,
) -> Result<(), StoreError> {
    store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(sk))
        .update_expression("SET readat = :r")
        .expression_attribute_values(":r", n(ms))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

/// A partition counter a recount can set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    Published,
    Read,
}

impl Counter {
    pub fn attribute(self) -> &'static str {
        match self {
            Counter::Published => "published",
            Counter::Read => "read",
        }
    }
}

/// Sets one counter of partition `pk` (category `category`, `*` for all) from `from` to
/// `to`: a recount's repair, made only if the counter still says `from` (true). False: it
/// moved since the recount read it (or its item is gone), and is left as it is.
pub async fn repair_counter(
    store: &Store,
    pk: &str,
    category: &str,
    counter: Counter,
    from: i64,
    to: i64,
) -> Result<bool, StoreError> {
    // The counters' item must be there (a recount never makes one).
    let condition = if from == 0 {
        "attribute_exists(pk) AND (attribute_not_exists(#f) OR #f = :from)"
    } else {
        "#f = :from"
    };
    let out = store
        .client()
        .update_item()
        .table_name(table(store))
        .key("pk", s(pk))
        .key("sk", s(stats_sk(category)))
        .update_expression("SET #f = :to")
        .condition_expression(condition)
        .expression_attribute_names("#f", counter.attribute())
        .expression_attribute_values(":from", n(from))
        .expression_attribute_values(":to", n(to))
        .send()
        .await;
    match out {
        Ok(_) => Ok(true),
        Err(e) => match e.into_service_error() {
            aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_) => {
                Ok(false)
            }
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}
