//! A user's feed (their messages and the public ones, newest first, expired ones never
//! shown), their counts, and reading: each read is counted once, however many times and
//! however concurrently it is sent.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::Inbox;
use crate::model::inbox::{Counts, FeedItem, FeedPage};
use crate::model::AppError;
use crate::server::domain::inbox::keys::{InboxKey, MessageKey, TenantKey, UserKey};
use crate::server::store::cursor::Binding;
use crate::server::store::inbox::{
    self as store, Kind, MessageItem, Receipt, Written, ALL, KEEP_DAYS,
};
use crate::server::store::Store;

pub const PAGE_SIZE: usize = 20;

/// One message of one reader, by key.
struct Reading {
    tenant: String,
    inbox: String,
    uid: String,
    user_pk: String,
    /// The message's sort key (in the user's partition and the public one alike).
    sk: String,
}

/// What a feed's cursors are bound to: the one user's feed of one inbox.
fn feed_binding(tenant: &str, inbox: &str, uid: &str) -> Binding {
    Binding::new(["inbox-feed", tenant, inbox, uid])
}

/// The message id a feed's cursor holds (sealed: 17 letters and digits), or none.
fn feed_cursor(
    store: &Store,
    binding: &Binding,
    cursor: Option<&str>,
) -> Result<Option<String>, AppError> {
    let Some(c) = cursor.filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let refused = || AppError::invalid("cursor", "This cursor is not one a feed gave.");
    let id = store.cursors().open(binding, c).map_err(|_| refused())?;
    match id.as_str() {
        Some(id) if id.len() == 17 && id.chars().all(|ch| ch.is_ascii_alphanumeric()) => {
            Ok(Some(id.to_string()))
        }
        _ => Err(refused()),
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Marked {
    Now,
    Already,
}

fn item(m: &MessageItem, public: bool, read: bool) -> FeedItem {
    FeedItem {
        id: m.id.clone(),
        public,
        title: m.message.title.clone(),
        body: m.message.body.clone(),
        cta_uri: m.message.cta_uri.clone(),
        category: m.taxonomy.category.clone(),
        received_ms: m.received,
        expires_s: m.expiredat,
        read,
    }
}

impl Inbox {
    /// One page of `uid`'s feed after `cursor` (a message id), newest first.
    pub async fn feed(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        uid: &UserKey,
        cursor: Option<&str>,
        size: usize,
        now: DateTime<Utc>,
    ) -> Result<FeedPage, AppError> {
        let binding = feed_binding(tenant, inbox, uid);
        let cursor = feed_cursor(&self.store, &binding, cursor)?;
        let user_pk = store::user_pk(tenant, uid, inbox);
        let public_pk = store::public_pk(tenant, inbox);
        let (merged, more) = self
            .newest(
                &user_pk,
                &public_pk,
                cursor.as_deref(),
                size,
                now.timestamp(),
            )
            .await?;
        let public_ids: Vec<String> = merged
            .iter()
            .filter(|(_, p)| *p)
            .map(|(m, _)| m.id.clone())
            .collect();
        let read_public = store::receipts(&self.store, &user_pk, &public_ids).await?;
        let items: Vec<FeedItem> = merged
            .iter()
            .map(|(m, public)| {
                let read = if *public {
                    read_public.contains(&m.id)
                } else {
                    m.readat.is_some()
                };
                item(m, *public, read)
            })
            .collect();
        let next = if more {
            let seal = |id: &String| self.store.cursors().seal(&binding, id.as_str().into());
            items.last().map(|i| seal(&i.id))
        } else {
            None
        };
        Ok(FeedPage { items, next })
    }

    /// The `size` newest live messages below `cursor` of the user's partition and the
    /// public one, merged newest first (`true`: public); and whether there are more.
    async fn newest(
        &self,
        user_pk: &str,
        public_pk: &str,
        cursor: Option<&str>,
        size: usize,
        now_s: i64,
    ) -> Result<(Vec<(MessageItem, bool)>, bool), AppError> {
        let (mine, more_mine) = store::messages(&self.store, user_pk, cursor, now_s, size).await?;
        let (public, more_public) =
            store::messages(&self.store, public_pk, cursor, now_s, size).await?;
        let mut merged: Vec<(MessageItem, bool)> = mine
            .into_iter()
            .map(|m| (m, false))
            .chain(public.into_iter().map(|m| (m, true)))
            .collect();
        merged.sort_by(|a, b| b.0.id.cmp(&a.0.id));
        let more = merged.len() > size || more_mine || more_public;
        merged.truncate(size);
        Ok((merged, more))
    }

    /// Totals for `uid`: their messages and the public ones, read, unread, unread per
    /// category (from the counters, never by counting messages).
    pub async fn counts(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        uid: &UserKey,
    ) -> Result<Counts, AppError> {
        let mine = store::stats(&self.store, &store::user_pk(tenant, uid, inbox)).await?;
        let public = store::stats(&self.store, &store::public_pk(tenant, inbox)).await?;
        let get = |list: &[store::Stats], sk: &str| {
            list.iter()
                .find(|s| s.sk == sk)
                .map_or((0, 0), |s| (s.published, s.read))
        };
        let all = store::stats_sk(ALL);
        let (my_published, read) = get(&mine, &all);
        let (public_published, _) = get(&public, &all);
        // Per category: my copies and the public ones, less what I read.
        let mut categories: BTreeMap<String, i64> = BTreeMap::new();
        for (s, mine_too) in mine
            .iter()
            .map(|s| (s, true))
            .chain(public.iter().map(|s| (s, false)))
        {
            if s.sk == all {
                continue;
            }
            let unread = if mine_too {
                s.published - s.read
            } else {
                s.published
            };
            *categories
                .entry(s.sk.trim_start_matches("c#").to_string())
                .or_default() += unread;
        }
        let total = my_published + public_published;
        Ok(Counts {
            total,
            read,
            unread: (total - read).max(0),
            unread_by_category: categories.into_iter().map(|(k, v)| (k, v.max(0))).collect(),
            public_published,
        })
    }

    /// Marks one message read for `uid`: once, whoever else is marking it at the same time.
    pub async fn mark_read(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        uid: &UserKey,
        id: &MessageKey,
        now: DateTime<Utc>,
    ) -> Result<Marked, AppError> {
        let r = Reading {
            user_pk: store::user_pk(tenant, uid, inbox),
            sk: store::message_sk(id),
            tenant: tenant.to_string(),
            inbox: inbox.to_string(),
            uid: uid.to_string(),
        };
        let keep = (now + Duration::days(KEEP_DAYS)).timestamp();
        for _ in 0..5 {
            if let Some(marked) = self.try_mark(&r, now, keep).await? {
                if marked == Marked::Now {
                    crate::server::metrics::inbox_read();
                }
                return Ok(marked);
            }
        }
        Err(AppError::InProgress {
            retry_after_secs: 1,
        })
    }

    /// One try: what the reader's partition holds under the message's key decides how the
    /// read is written (the user's copy, or a receipt of the public one), in one
    /// transaction. `None`: someone marked it first (or it expired); read again to tell
    /// which.
    async fn try_mark(
        &self,
        r: &Reading,
        now: DateTime<Utc>,
        keep: i64,
    ) -> Result<Option<Marked>, AppError> {
        let found = store::get::<Value>(&self.store, &r.user_pk, &r.sk).await?;
        let kind = found
            .as_ref()
            .and_then(|v| v["kind"].as_str())
            .and_then(Kind::parse);
        let actions = match (found, kind) {
            // An expired message is gone for its reader, read or not.
            (Some(v), _)
                if v["expiredat"]
                    .as_i64()
                    .is_some_and(|e| e <= now.timestamp()) =>
            {
                return Err(AppError::NotFound)
            }
            (Some(_), Some(Kind::Receipt)) => return Ok(Some(Marked::Already)),
            (Some(v), Some(Kind::Message)) => {
                let m: MessageItem = serde_json::from_value(v)
                    .map_err(|e| crate::server::telemetry::internal(&e))?;
                if m.readat.is_some() {
                    return Ok(Some(Marked::Already));
                }
                let now_ms = now.timestamp_millis();
                store::mark_user_message(&self.store, &m, &r.tenant, now_ms, keep)?
            }
            _ => {
                let (m, receipt) = self.public_read(r, now).await?;
                store::mark_public_message(&self.store, &m, &receipt, &r.tenant, keep)?
            }
        };
        Ok(match store::transact(&self.store, actions).await? {
            Written::Done => Some(Marked::Now),
            Written::Refused(_) => None,
        })
    }

    /// The live public message `r` names and the reader's receipt of it; not found when
    /// there is none.
    async fn public_read(
        &self,
        r: &Reading,
        now: DateTime<Utc>,
    ) -> Result<(MessageItem, Receipt), AppError> {
        let public_pk = store::public_pk(&r.tenant, &r.inbox);
        let Some(m) = store::get::<MessageItem>(&self.store, &public_pk, &r.sk).await? else {
            return Err(AppError::NotFound);
        };
        if m.expiredat <= now.timestamp() {
            return Err(AppError::NotFound);
        }
        let receipt = Receipt {
            pk: r.user_pk.clone(),
            sk: r.sk.clone(),
            kind: Kind::Receipt,
            taxonomy: m.taxonomy.clone(),
            readat: now.timestamp_millis(),
            // A receipt lives as long as its message.
            expiredat: m.expiredat,
            tenant_key: r.tenant.clone(),
            inbox_key: r.inbox.clone(),
            uid: r.uid.clone(),
        };
        Ok((m, receipt))
    }

    /// Marks every unread message of `uid`'s feed read; returns how many it marked.
    pub async fn mark_all_read(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        uid: &UserKey,
        now: DateTime<Utc>,
    ) -> Result<usize, AppError> {
        let mut marked = 0;
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .feed(tenant, inbox, uid, cursor.as_deref(), 100, now)
                .await?;
            for m in page.items.iter().filter(|m| !m.read) {
                let id = MessageKey::parse(&m.id)?;
                if self.mark_read(tenant, inbox, uid, &id, now).await? == Marked::Now {
                    marked += 1;
                }
            }
            match page.next {
                Some(c) => cursor = Some(c),
                None => return Ok(marked),
            }
        }
    }
}
