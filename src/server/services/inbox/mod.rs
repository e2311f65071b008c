//! The inbox (docs/inbox.md): tenants and inboxes, publishing to users or everyone with
//! exact counters, feeds that merge a user's messages with the public ones, and reads
//! counted once however often they are sent.

mod deliver;
pub mod drafts;
pub mod feed;
pub mod pages;
pub mod publish;
pub mod verify;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::model::AppError;
use crate::server::clock::iso;
use crate::server::contract::inbox as contract;
use crate::server::crash_points::{CrashPoints, Never};
use crate::server::domain::fields;
use crate::server::domain::inbox::keys::{CategoryKey, InboxKey, TenantKey};
use crate::server::store::inbox::{self as store, InboxConfig, Kind, TenantSettings, SETTINGS_SK};
use crate::server::store::Store;

/// A lifetime like `30d` or `12h`, from 1 hour to 3650 days.
pub fn parse_ttl(raw: &str, field: &str) -> Result<Duration, AppError> {
    let t = raw.trim();
    let bad = || {
        AppError::invalid(
            field,
            format!("{field} is a lifetime like 30d or 12h (1h to 3650d)."),
        )
    };
    let (num, hours_per_unit) = match (t.strip_suffix('d'), t.strip_suffix('h')) {
        (Some(num), _) => (num, 24),
        (_, Some(num)) => (num, 1),
        _ => return Err(bad()),
    };
    let n: i64 = num.parse().map_err(|_| bad())?;
    let hours = n
        .checked_mul(hours_per_unit)
        .filter(|h| (1..=3650 * 24).contains(h))
        .ok_or_else(bad)?;
    Ok(Duration::hours(hours))
}

/// A time-sortable message id: the publish time in milliseconds in base 36 (9 digits,
/// good until the year 5188), then 8 random base-36 digits.
pub fn message_id(now: DateTime<Utc>) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut ms = now.timestamp_millis().max(0) as u64;
    let mut time = [b'0'; 9];
    for slot in time.iter_mut().rev() {
        *slot = DIGITS[(ms % 36) as usize];
        ms /= 36;
    }
    let mut rnd = [0u8; 8];
    getrandom::fill(&mut rnd).unwrap_or_default();
    let suffix: String = rnd
        .iter()
        .map(|b| DIGITS[(*b as usize) % 36] as char)
        .collect();
    format!("{}{suffix}", String::from_utf8_lossy(&time))
}

/// The inbox service (`state.inbox`). Cheap to clone.
#[derive(Clone)]
pub struct Inbox {
    pub store: Store,
    pub settings_days: i64,
    /// Where this console would die: never, but in the tests that say so.
    crash_points: Arc<dyn CrashPoints>,
}

impl Inbox {
    pub fn new(store: Store, settings_days: i64) -> Inbox {
        Inbox {
            store,
            settings_days,
            crash_points: Arc::new(Never),
        }
    }

    /// This service, dying where `points` say (a test's console).
    pub fn with_crash_points(&self, points: Arc<dyn CrashPoints>) -> Inbox {
        Inbox {
            crash_points: points,
            ..self.clone()
        }
    }

    fn keep_until(&self, now: DateTime<Utc>) -> i64 {
        (now + Duration::days(self.settings_days)).timestamp()
    }

    /// Creates or replaces a tenant's settings.
    pub async fn put_tenant(
        &self,
        tenant: &TenantKey,
        body: contract::TenantSettings,
        now: DateTime<Utc>,
    ) -> Result<TenantSettings, AppError> {
        let ttl = fields::text("ttl", body.ttl, 16)?.unwrap_or_else(|| "30d".into());
        parse_ttl(&ttl, "ttl")?;
        let s = TenantSettings {
            pk: store::tenant_pk(tenant),
            sk: SETTINGS_SK.into(),
            kind: Kind::TenantSettings,
            title: fields::text("title", body.title, 200)?.unwrap_or_else(|| tenant.to_string()),
            ttl,
            tenant_key: tenant.to_string(),
            updated_at: iso(now),
            expiredat: self.keep_until(now),
        };
        store::put_config(&self.store, tenant, &s, self.keep_until(now)).await?;
        Ok(s)
    }

    /// Creates or replaces an inbox's configuration.
    pub async fn put_inbox(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        body: contract::InboxSettings,
        now: DateTime<Utc>,
    ) -> Result<InboxConfig, AppError> {
        let mut ttl = BTreeMap::new();
        for (k, s) in body.ttl.unwrap_or_default() {
            let field = format!("ttl.{k}");
            // Kept as checked (trimmed): "promo " and "promo" are one category.
            let k = match k.as_str() {
                "default" => k,
                _ => CategoryKey::parse_as(&k, &field)?.into_string(),
            };
            parse_ttl(&s, &field)?;
            ttl.insert(k, s.trim().to_string());
        }
        ttl.entry("default".into()).or_insert_with(|| "30d".into());
        let c = InboxConfig {
            pk: store::tenant_pk(tenant),
            sk: store::inbox_sk(inbox),
            kind: Kind::InboxConfig,
            title: fields::text("title", body.title, 200)?.unwrap_or_else(|| inbox.to_string()),
            description: fields::text("description", body.description, 1000)?.unwrap_or_default(),
            ttl,
            tenant_key: tenant.to_string(),
            inbox_key: inbox.to_string(),
            updated_at: iso(now),
            expiredat: self.keep_until(now),
        };
        store::put_config(&self.store, tenant, &c, self.keep_until(now)).await?;
        Ok(c)
    }

    pub async fn tenant(&self, tenant: &TenantKey) -> Result<Option<TenantSettings>, AppError> {
        Ok(store::get(&self.store, &store::tenant_pk(tenant), SETTINGS_SK).await?)
    }

    pub async fn inbox(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
    ) -> Result<Option<InboxConfig>, AppError> {
        Ok(store::get(
            &self.store,
            &store::tenant_pk(tenant),
            &store::inbox_sk(inbox),
        )
        .await?)
    }

    /// How long a message of `category` lives in this inbox: its type's TTL, else the
    /// inbox default, else the tenant's, else 30 days.
    pub async fn lifetime(
        &self,
        tenant: &TenantKey,
        inbox: &InboxKey,
        category: Option<&str>,
    ) -> Result<Duration, AppError> {
        if let Some(c) = self.inbox(tenant, inbox).await? {
            let t = category
                .and_then(|cat| c.ttl.get(cat))
                .or_else(|| c.ttl.get("default"));
            if let Some(t) = t {
                return parse_ttl(t, "ttl");
            }
        }
        if let Some(s) = self.tenant(tenant).await? {
            return parse_ttl(&s.ttl, "ttl");
        }
        Ok(Duration::days(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes() {
        assert_eq!(parse_ttl("7d", "t").unwrap(), Duration::days(7));
        assert_eq!(parse_ttl("12h", "t").unwrap(), Duration::hours(12));
        assert_eq!(parse_ttl("3650d", "t").unwrap(), Duration::days(3650));
        // Found by the fuzzer: a multi-byte last character, and numbers past any duration.
        for bad in [
            "0d",
            "7",
            "d",
            "3651d",
            "1.5d",
            "7w",
            "7\u{20d39}",
            "\u{80}",
            "",
            "-1h",
        ] {
            assert!(parse_ttl(bad, "t").is_err(), "{bad}");
        }
        for huge in [i64::MAX.to_string() + "d", i64::MIN.to_string() + "h"] {
            assert!(parse_ttl(&huge, "t").is_err(), "{huge}");
        }
    }

    #[test]
    fn message_ids_sort_by_time() {
        let t = Utc::now();
        let a = message_id(t);
        let b = message_id(t + Duration::milliseconds(1));
        let c = message_id(t + Duration::days(400));
        assert_eq!(a.len(), 17);
        assert!(a < b && b < c, "{a} {b} {c}");
    }
}
