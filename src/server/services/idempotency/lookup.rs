//! Finding keys the way support asks: by the raw `Idempotency-Key` a client sent, by the
//! `X-Correlation-Id` it logged, or by a key's id, naming the API key that sent it.

use chrono::Duration;

use super::{hmac_sha256, hour_key, Engine};
use crate::model::idempotency::KeySummary;
use crate::model::AppError;
use crate::server::ids::hex;
use crate::server::services::idempotency::health::summary;
use crate::server::store::idempotency::{self as store, KeyItem, ALL_SCOPES};

impl Engine {
    /// What a key keeps of a correlation id: its HMAC under a subkey of the secret, so a
    /// client's id (free text: it could hold anything) is never stored, yet an exact id
    /// finds its keys.
    pub fn correlation_hash(&self, correlation_id: &str) -> String {
        hex(&hmac_sha256(
            &self.subkey("correlation-id"),
            correlation_id.as_bytes(),
        ))
    }

    /// The keys a machine client's raw `Idempotency-Key` stands for: the key is bound to
    /// the API key that sent it (`principals`: the SHA-256 of each API key that client has
    /// had) and to the route, so every route seen in the last 7 days is tried, in one read.
    pub async fn find_raw_key(
        &self,
        raw: &str,
        principals: &[String],
    ) -> Result<Vec<KeySummary>, AppError> {
        let raw = raw.trim();
        if !(1..=255).contains(&raw.len()) {
            return Err(AppError::invalid(
                "raw",
                "An Idempotency-Key is 1 to 255 visible ASCII characters.",
            ));
        }
        if let Err(e) = self.flush_stats().await {
            tracing::warn!(error = %e, "could not write idempotency counters before reading them");
        }
        let now = self.clock.now();
        let from = hour_key(now - Duration::days(7));
        let mut routes: Vec<String> = store::read_stats(&self.store, ALL_SCOPES, &from)
            .await?
            .into_iter()
            .flat_map(|b| b.scopes)
            .filter(|s| s.starts_with("http:"))
            .collect();
        routes.sort();
        routes.dedup();
        let ids: Vec<String> = routes
            .iter()
            .flat_map(|route| {
                principals.iter().map(move |p| {
                    let inputs = super::KeyInputs::new().id("principal", p).id("key", raw);
                    KeyItem::id_for("api", route, &self.key_hash("api", route, &inputs))
                })
            })
            .collect();
        let mut found: Vec<KeySummary> = store::get_many(&self.store, &ids)
            .await?
            .into_iter()
            .map(|k| summary(k, now, false))
            .collect();
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(found)
    }

    /// The keys of the REST requests that carried `correlation_id` (`X-Correlation-Id`),
    /// newest first: a client's log line leads to what became of its request.
    pub async fn find_by_correlation(
        &self,
        correlation_id: &str,
    ) -> Result<Vec<KeySummary>, AppError> {
        let id = correlation_id.trim();
        if !super::is_correlation_id(id) {
            return Err(AppError::invalid(
                "correlation_id",
                "A correlation id is 1 to 64 visible ASCII characters.",
            ));
        }
        let now = self.clock.now();
        Ok(
            store::by_correlation(&self.store, &self.correlation_hash(id), 20)
                .await?
                .into_iter()
                .map(|k| summary(k, now, false))
                .collect(),
        )
    }

    /// One key, with its stored answer as it is (see [`detail_for_role`]), naming the API
    /// key that sent it from `api_keys` (`(hash, name)`).
    pub async fn key_summary(
        &self,
        id: &str,
        api_keys: &[(String, String)],
    ) -> Result<KeySummary, AppError> {
        let item = store::get(&self.store, id)
            .await?
            .ok_or(AppError::NotFound)?;
        let api_key = super::links::api_key_name(&item, api_keys);
        Ok(KeySummary {
            api_key,
            ..summary(item, self.clock.now(), true)
        })
    }
}
