//! Alerts' states (docs/operations.md, "Alerts"): one item per alert in `settings-<env>`
//! (`alert#<id>`), and one item listing the firing ones (`alerts-firing`, an attribute per
//! alert) for the Overview page. A state change is one transaction conditioned on the state
//! it leaves: of all the consoles that judge the same change, exactly one records it, and
//! only that one announces it.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use super::item::{self, n, s};
use super::schema::SETTINGS;
use super::{tx, Store, StoreError};

const FIRING_PK: &str = "alerts-firing";

/// Where an alert stands, as the last recorded change left it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct AlertItem {
    pub pk: String,
    /// `firing` or `resolved`.
    pub state: String,
    /// How many times it has fired: its messages' ids carry it.
    pub episode: i64,
    /// When the state began (RFC 3339).
    pub since: String,
    pub summary: String,
    /// Whether this state's message went out.
    pub announced: bool,
    /// When the console announcing it claimed the announcement (ms).
    pub claim_at_ms: i64,
    pub expires_at: i64,
}

pub use crate::model::alerts::FiringAlert as Firing;

fn pk(id: &str) -> String {
    format!("alert#{id}")
}

fn attr(id: &str) -> String {
    format!("a:{id}")
}

pub async fn get(store: &Store, id: &str) -> Result<Option<AlertItem>, StoreError> {
    item::get(store, SETTINGS.base, "pk", &pk(id)).await
}

/// Every firing alert.
pub async fn firing(store: &Store) -> Result<Vec<Firing>, StoreError> {
    let table = store.table(SETTINGS.base);
    let out = store
        .client()
        .get_item()
        .table_name(&table)
        .key("pk", s(FIRING_PK))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    let mut found = Vec::new();
    for (k, v) in out.item.unwrap_or_default() {
        if k.starts_with("a:") {
            if let AttributeValue::M(m) = v {
                found.push(item::decode::<Firing>(m, &table)?);
            }
        }
    }
    found.sort_by(|a, b| a.since.cmp(&b.since).then(a.id.cmp(&b.id)));
    Ok(found)
}

/// A change to record: the alert's new state and, for the Overview, its entry.
pub struct Change<'a> {
    pub id: &'a str,
    /// `firing` or `resolved`.
    pub to: &'a str,
    /// The episode the stored item must be in (resolving), or had (firing: the next one).
    pub episode: i64,
    pub since: &'a str,
    pub summary: &'a str,
    pub link: &'a str,
    pub now_ms: i64,
    pub expires_at: i64,
}

/// Records `change` if the stored state is the one it leaves (firing: none or resolved;
/// resolved: firing in `episode`). True: this console recorded it and announces it.
pub async fn record(store: &Store, change: &Change<'_>) -> Result<bool, StoreError> {
    let table = store.table(SETTINGS.base);
    let firing = change.to == "firing";
    let mut alert = Update::builder()
        .table_name(&table)
        .key("pk", s(pk(change.id)))
        .update_expression(
            "SET #state = :to, episode = :episode, since = :since, summary = :summary, \
             announced = :no, claim_at_ms = :now, expires_at = :exp",
        )
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":to", s(change.to))
        .expression_attribute_values(":episode", n(change.episode))
        .expression_attribute_values(":since", s(change.since))
        .expression_attribute_values(":summary", s(change.summary))
        .expression_attribute_values(":no", AttributeValue::Bool(false))
        .expression_attribute_values(":now", n(change.now_ms))
        .expression_attribute_values(":exp", n(change.expires_at));
    alert = if firing {
        alert
            .condition_expression(
                "attribute_not_exists(pk) OR (#state = :resolved AND episode = :prev)",
            )
            .expression_attribute_values(":resolved", s("resolved"))
            .expression_attribute_values(":prev", n(change.episode - 1))
    } else {
        alert
            .condition_expression("#state = :firing AND episode = :episode")
            .expression_attribute_values(":firing", s("firing"))
    };
    let alert = alert.build().map_err(|e| StoreError::corrupt(&table, e))?;
    let list = firing_list_update(&table, change, firing)?;
    let outcome = tx::transact(
        store,
        vec![
            TransactWriteItem::builder().update(alert).build(),
            TransactWriteItem::builder().update(list).build(),
        ],
    )
    .await?;
    Ok(outcome.refused_at(0).is_none())
}

/// The Overview's list of firing alerts, as `change` leaves it.
fn firing_list_update(
    table: &str,
    change: &Change<'_>,
    firing: bool,
) -> Result<Update, StoreError> {
    // The list lives as long as any alert may fire.
    let list_expires = change.expires_at.max(change.now_ms / 1000 + 3650 * 86_400);
    let list = Update::builder()
        .table_name(table)
        .key("pk", s(FIRING_PK))
        .expression_attribute_names("#a", attr(change.id))
        .expression_attribute_values(":exp", n(list_expires));
    let list = if firing {
        let entry = Firing {
            id: change.id.to_string(),
            summary: change.summary.to_string(),
            since: change.since.to_string(),
            link: change.link.to_string(),
        };
        let entry =
            serde_dynamo::to_attribute_value(&entry).map_err(|e| StoreError::corrupt(table, e))?;
        list.update_expression("SET #a = :entry, expires_at = :exp")
            .expression_attribute_values(":entry", entry)
    } else {
        list.update_expression("SET expires_at = :exp REMOVE #a")
    };
    list.build().map_err(|e| StoreError::corrupt(table, e))
}

/// Takes over an announcement that was claimed at `claimed_at_ms` and never made (its
/// console died, or the channel failed). True: this console makes it now.
pub async fn reclaim(store: &Store, item: &AlertItem, now_ms: i64) -> Result<bool, StoreError> {
    let table = store.table(SETTINGS.base);
    let req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("pk", s(&item.pk))
        .update_expression("SET claim_at_ms = :now")
        .condition_expression(
            "claim_at_ms = :was AND announced = :no AND #state = :state AND episode = :episode",
        )
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":was", n(item.claim_at_ms))
        .expression_attribute_values(":no", AttributeValue::Bool(false))
        .expression_attribute_values(":state", s(&item.state))
        .expression_attribute_values(":episode", n(item.episode));
    conditional(req.send().await)
}

/// Records that the message of `state` in `episode` went out.
pub async fn announced(
    store: &Store,
    id: &str,
    state: &str,
    episode: i64,
) -> Result<bool, StoreError> {
    let table = store.table(SETTINGS.base);
    let req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("pk", s(pk(id)))
        .update_expression("SET announced = :yes")
        .condition_expression("#state = :state AND episode = :episode")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":yes", AttributeValue::Bool(true))
        .expression_attribute_values(":state", s(state))
        .expression_attribute_values(":episode", n(episode));
    conditional(req.send().await)
}

fn conditional<T, R: std::fmt::Debug + Send + Sync + 'static>(
    sent: Result<T, aws_sdk_dynamodb::error::SdkError<UpdateItemError, R>>,
) -> Result<bool, StoreError> {
    match sent {
        Ok(_) => Ok(true),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}
