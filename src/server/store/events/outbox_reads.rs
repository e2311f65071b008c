//! Reading the outbox: what is due on one shard now (for the dispatcher), and each group
//! across its shards, paged, counted and filtered (for the Outbox page and bulk jobs).

use super::outbox::{Group, Part};
use super::ActionRecord;
use crate::server::store::fanout;
use crate::server::store::item::{decode, n, s};
use crate::server::store::query::{self, Cond, Spec, Start};
use crate::server::store::schema::{DUE_INDEX, MW_IDEMPOTENCY, OUTBOX_INDEX};
use crate::server::store::{Store, StoreError};

/// Narrows a group (dead letters by cause, any group by action type).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub cause: Option<String>,
    pub action_type: Option<String>,
    /// Within the due group: queued, claimed (in flight) or retry.
    pub status: Option<String>,
    /// One conversation's actions: only its shard is read.
    pub conversation_id: Option<String>,
    /// Those made within these milliseconds (both ends included): when their event was
    /// decided, which a resend does not change.
    pub window: Option<(i64, i64)>,
    /// Those not past their expiry at this time (seconds): TTL deletes days late.
    pub alive_at: Option<i64>,
    /// Those this resend job has not moved already (its key): a redelivery stamped by a
    /// console whose clock runs behind would otherwise be listed, and refused, every pass.
    pub not_resent_by: Option<String>,
    /// Those routed to this receiver (`default`: those without a `receiver`).
    pub receiver: Option<String>,
}

impl Filter {
    /// The partitions a list of `group` under this filter reads: one conversation's, or
    /// all.
    pub fn parts(&self, group: Group) -> Vec<Part> {
        match &self.conversation_id {
            Some(c) => Part::of_conversation(group, c),
            None => Part::all(group),
        }
    }
}

pub(super) fn spec(
    store: &Store,
    group: Group,
    part: Part,
    filter: &Filter,
    due_by: Option<i64>,
) -> Spec {
    let mut filters = Vec::new();
    if let Some(c) = &filter.cause {
        filters.push(("cause", Cond::Eq(s(c))));
    }
    if let Some(t) = &filter.action_type {
        filters.push(("action_type", Cond::Eq(s(t))));
    }
    if let Some(st) = &filter.status {
        filters.push(("status", Cond::Eq(s(st))));
    }
    if let Some(c) = &filter.conversation_id {
        filters.push(("conversation_id", Cond::Eq(s(c))));
    }
    if let Some((from, to)) = filter.window {
        let iso = |ms| {
            chrono::DateTime::from_timestamp_millis(ms)
                .map(crate::server::clock::iso)
                .unwrap_or_default()
        };
        filters.push(("created_at", Cond::Between(s(iso(from)), s(iso(to)))));
    }
    if let Some(job) = &filter.not_resent_by {
        // Also true where the attribute is absent (never resent).
        filters.push(("resend_job", Cond::Ne(s(job))));
    }
    match filter.receiver.as_deref() {
        Some("default") => filters.push(("receiver", Cond::Absent)),
        Some(r) => filters.push(("receiver", Cond::Eq(s(r)))),
        None => {}
    }
    if let Some(now) = filter.alive_at {
        filters.push(("expires_at", Cond::Between(n(now + 1), n(i64::MAX))));
    }
    // One receiver's due side effects, whenever due: its own range of the group's keys.
    let sk = match (group, filter.receiver.as_deref(), filter.window, due_by) {
        (Group::Due, Some(r), None, None) => Some(super::window::queue_of(r)),
        _ => super::window::sk_between(filter.window, due_by),
    };
    let (index, pk, shard) = match part {
        Part::Outbox(n) => (OUTBOX_INDEX, "outbox", n),
        Part::Due(n) => (DUE_INDEX, "due", n),
    };
    if matches!(part, Part::Due(_)) && filter.status.is_none() {
        // Only what is due: a console of the release before moves an action out of the
        // group without removing `due` (a rollback with `events.due_index` on), and its
        // copy here would be read, and refused by every claim, until it expires.
        use super::ActionStatus::{Claimed, Queued, Retry};
        let due = [Queued, Retry, Claimed].map(|st| s(st.as_str())).to_vec();
        filters.push(("status", Cond::In(due)));
    }
    Spec {
        table: store.table(MW_IDEMPOTENCY.base),
        index: Some(index),
        pk: (pk, s(group.partition(shard))),
        sk: sk.map(|c| ("outbox_sk", c)),
        filters,
        // Due: the next one first; held and dead: the newest first.
        ascending: group == Group::Due,
        key_attrs: vec!["event_id", pk, "outbox_sk"],
        projection: None,
    }
}

fn decode_all(items: Vec<query::Item>, table: &str) -> Result<Vec<ActionRecord>, StoreError> {
    items.into_iter().map(|i| decode(i, table)).collect()
}

/// Up to `limit` actions of `part` due by `now_ms` to `receiver` (`None`: `default`),
/// including in-flight ones whose claim ran out, the longest waiting first, from `after`
/// (a cursor this returned), and the cursor of the next page. The index is eventually
/// consistent: every claim is conditioned on the item itself. One read from `due-index`
/// lacks its message and attempts (a claim returns the whole item).
pub async fn due(
    store: &Store,
    receiver: Option<&str>,
    part: Part,
    now_ms: i64,
    limit: usize,
    after: Option<&str>,
) -> Result<(Vec<ActionRecord>, Option<String>), StoreError> {
    let mut spec = spec(store, Group::Due, part, &Filter::default(), Some(now_ms));
    if let Some(r) = receiver {
        spec.sk = Some(("outbox_sk", super::window::due_of(r, now_ms)));
    }
    if matches!(part, Part::Due(_)) {
        // In flight: a claim there keeps its key. Every due action's lease is 0 or past
        // but an in-flight one's, whose console may still be sending it.
        spec.filters
            .push(("lease_until_ms", query::Cond::Lt(n(now_ms))));
    }
    let start = after.map_or(Start::First, Start::After);
    let page = match query::page(store, &spec, start, limit).await {
        // Added by this release and still being built: nothing is written there until
        // `events.due_index` is on, which waits for it (`startup::serve`).
        Err(e) if building(&e) => return Ok((Vec::new(), None)),
        page => page?,
    };
    Ok((decode_all(page.items, &spec.table)?, page.next))
}

/// A read of `due-index` while AWS still builds it (the release that adds it is rolling
/// out): its partitions are read as empty.
fn building(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Busy {
            cause: crate::server::store::Busy::IndexBuilding,
            ..
        }
    )
}

/// A count of one partition, `due-index`'s counted as empty while it is built (and not
/// exact).
pub(super) async fn count_part(
    store: &Store,
    part: Part,
    spec: &Spec,
    max_calls: usize,
) -> Result<query::Count, StoreError> {
    match query::count(store, spec, max_calls, None).await {
        Err(e) if matches!(part, Part::Due(_)) && building(&e) => {
            Ok(query::Count { n: 0, exact: false })
        }
        c => c,
    }
}

/// The first `limit` actions of one partition of a group that entered it before
/// `before_ms` (a bulk job's page: what it moves leaves the group, so it reads from the
/// start each time; what entered after the job began — a redriven one that failed again —
/// is not its).
pub async fn list_shard(
    store: &Store,
    group: Group,
    part: Part,
    filter: &Filter,
    limit: usize,
    before_ms: i64,
) -> Result<Vec<ActionRecord>, StoreError> {
    let mut spec = spec(store, group, part, filter, Some(before_ms - 1));
    // Oldest first: what a job moved leaves the front, so each pass finds the next matches
    // at once instead of reading past the whole group to reach them.
    spec.ascending = true;
    // A filter that matches rarely may find nothing in a page's reads: read on to the end of
    // the shard rather than take an empty page for "nothing left".
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let start = cursor.as_deref().map_or(Start::First, Start::After);
        let page = query::page(store, &spec, start, limit.max(1) - found.len()).await?;
        found.extend(decode_all(page.items, &spec.table)?);
        match page.next {
            Some(next) if found.len() < limit.max(1) => cursor = Some(next),
            _ => return Ok(found),
        }
    }
}

/// A page of a group across its shards, in the group's order, and the cursor of the next.
/// The cursor holds each shard's position (where it goes on, or spent), sealed once.
pub async fn list(
    store: &Store,
    group: Group,
    filter: &Filter,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<ActionRecord>, Option<String>), StoreError> {
    // One binding for the whole group: the first partition's query differs from the
    // others' by its partition (and index) only.
    let binding = spec(store, group, Part::Outbox(0), filter, None).binding();
    let shards_of = |parts: Vec<Part>| -> Vec<fanout::Shard> {
        parts
            .into_iter()
            .map(|part| fanout::Shard::new(part.id(), spec(store, group, part, filter, None)))
            .collect()
    };
    let shards = shards_of(parts_to_read(store, group, filter).await?);
    let page = match fanout::page(store, &shards, "outbox_sk", &binding, cursor, size).await {
        // `due-index` still being built: `outbox-index`'s partitions alone.
        Err(e) if building(&e) => {
            let old = filter
                .parts(group)
                .into_iter()
                .filter(|p| matches!(p, Part::Outbox(_)));
            let shards = shards_of(old.collect());
            fanout::page(store, &shards, "outbox_sk", &binding, cursor, size).await?
        }
        page => page?,
    };
    let table = store.table(MW_IDEMPOTENCY.base);
    let items = decode_all(page.items.into_iter().map(|(_, i)| i).collect(), &table)?;
    Ok((items, page.next))
}

/// How many actions a group holds (filtered), across its partitions, reading at most a
/// few thousand per partition.
pub async fn count(store: &Store, group: Group, filter: &Filter) -> Result<u64, StoreError> {
    Ok(tally(store, group, filter).await?.n)
}

/// [`count`], and whether it read every shard to its end (`exact`).
pub async fn tally(
    store: &Store,
    group: Group,
    filter: &Filter,
) -> Result<query::Count, StoreError> {
    let specs: Vec<(Part, Spec)> = parts_to_read(store, group, filter)
        .await?
        .into_iter()
        .map(|part| (part, spec(store, group, part, filter, None)))
        .collect();
    // Side by side: the due group has well over a hundred partitions.
    let counts = futures_util::future::try_join_all(
        specs
            .iter()
            .map(|(part, s)| count_part(store, *part, s, 10)),
    )
    .await?;
    Ok(counts
        .into_iter()
        .fold(query::Count { n: 0, exact: true }, |t, c| query::Count {
            n: t.n + c.n,
            exact: t.exact && c.exact,
        }))
}

/// How many actions of the due group are in each status (`queued`, `claimed`, `retry`),
/// across its partitions: one read of each for every status, at most 10 calls a partition.
pub async fn due_by_status(
    store: &Store,
) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
    let specs: Vec<(Part, Spec)> = parts_to_read(store, Group::Due, &Filter::default())
        .await?
        .into_iter()
        .map(|part| {
            (
                part,
                spec(store, Group::Due, part, &Filter::default(), None),
            )
        })
        .collect();
    let counts = futures_util::future::try_join_all(specs.iter().map(|(part, s)| async move {
        match query::count_by(store, s, "status", 10).await {
            Err(e) if matches!(part, Part::Due(_)) && building(&e) => {
                Ok((Default::default(), false))
            }
            c => c,
        }
    }))
    .await?;
    let mut by = std::collections::BTreeMap::new();
    for (part, _) in counts {
        for (status, n) in part {
            *by.entry(status).or_insert(0) += n;
        }
    }
    Ok(by)
}

/// Copies of `due-index` a look at which of its partitions hold anything reads at most.
const LOOK_AT_MOST: i32 = 500;

/// The `due-index` shards that hold anything now, when the whole index is at most
/// [`LOOK_AT_MOST`] copies: one `Scan` call of its keys (a few read units). `None` when it
/// holds more (every shard is read then). Where `events.due_index` is off, or traffic is
/// light, a list or a count reads the few shards in use instead of all 128.
pub async fn due_shards_in_use(store: &Store) -> Result<Option<Vec<u32>>, StoreError> {
    let table = store.table(MW_IDEMPOTENCY.base);
    let page = store
        .client()
        .scan()
        .table_name(&table)
        .index_name(DUE_INDEX)
        .projection_expression("#d")
        .expression_attribute_names("#d", "due")
        .limit(LOOK_AT_MOST)
        .send()
        .await
        .map_err(StoreError::request("Scan"));
    let page = match page {
        Err(e) if building(&e) => return Ok(Some(Vec::new())),
        page => page?,
    };
    if page.last_evaluated_key.is_some_and(|k| !k.is_empty()) {
        return Ok(None);
    }
    let shards: std::collections::BTreeSet<u32> = page
        .items
        .unwrap_or_default()
        .iter()
        .filter_map(|item| {
            item.get("due")
                .and_then(|v| v.as_s().ok())
                .and_then(|p| p.rsplit_once('#'))
                .and_then(|(_, n)| n.parse::<u32>().ok())
        })
        .collect();
    Ok(Some(shards.into_iter().collect()))
}

/// The partitions a list or a count of `group` under `filter` reads: one conversation's;
/// or every partition of `outbox-index`'s, and those of `due-index` that hold anything
/// ([`due_shards_in_use`]).
pub async fn parts_to_read(
    store: &Store,
    group: Group,
    filter: &Filter,
) -> Result<Vec<Part>, StoreError> {
    if group != Group::Due || filter.conversation_id.is_some() {
        return Ok(filter.parts(group));
    }
    Ok(match due_shards_in_use(store).await? {
        Some(shards) => (0..super::outbox::SHARDS)
            .map(Part::Outbox)
            .chain(shards.into_iter().map(Part::Due))
            .collect(),
        None => Part::all(group),
    })
}
