//! A list kept as one versioned item in `settings-<env>` (a kill switch's pending approvals,
//! its schedule): read strongly consistent, written whole as version `expected + 1` only
//! if the stored version is still `expected`, together with what the write does.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::audit::versioned_put;
use super::item;
use super::schema::SETTINGS;
use super::tx::Writes;
use super::{Store, StoreError};

#[derive(Serialize, Deserialize)]
struct ListItem<T> {
    pk: String,
    #[serde(default = "Vec::new")]
    entries: Vec<T>,
    version: u64,
    expires_at: i64,
}

/// The list under `pk` and its version; empty (version 0) when never set or expired.
pub async fn load<T: DeserializeOwned>(
    store: &Store,
    pk: &str,
    now: DateTime<Utc>,
) -> Result<(Vec<T>, u64), StoreError> {
    let stored: Option<ListItem<T>> = item::get(store, SETTINGS.base, "pk", pk).await?;
    Ok(match stored {
        Some(i) if i.expires_at > now.timestamp() => (i.entries, i.version),
        _ => (Vec::new(), 0),
    })
}

/// The write of `entries` under `pk` as version `expected + 1`, only if the stored version
/// is still `expected`; first among the writes it is committed with.
pub fn save<T: Serialize>(
    store: &Store,
    pk: &str,
    entries: Vec<T>,
    expected: u64,
    now: DateTime<Utc>,
    ttl_days: i64,
) -> Result<Writes, StoreError> {
    let stored = ListItem {
        pk: pk.to_string(),
        entries,
        version: expected + 1,
        expires_at: (now + chrono::Duration::days(ttl_days)).timestamp(),
    };
    Ok(Writes::new(vec![versioned_put(
        store,
        SETTINGS.base,
        &stored,
        expected,
        now,
    )?]))
}
