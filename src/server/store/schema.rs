//! Every table the product needs, and the bootstrap that creates them. Re-running the
//! bootstrap changes nothing; a table that lacks an index or TTL gets it added.

use std::time::Duration;

use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, LocalSecondaryIndex,
    Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};

use super::{Store, StoreError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrType {
    S,
    N,
}

#[derive(Clone, Copy, Debug)]
pub struct KeyAttr {
    pub name: &'static str,
    pub ty: AttrType,
}

const fn s(name: &'static str) -> KeyAttr {
    KeyAttr {
        name,
        ty: AttrType::S,
    }
}

const fn n(name: &'static str) -> KeyAttr {
    KeyAttr {
        name,
        ty: AttrType::N,
    }
}

#[derive(Debug)]
pub struct IndexSpec {
    pub name: &'static str,
    pub pk: KeyAttr,
    pub sk: Option<KeyAttr>,
}

#[derive(Debug)]
pub struct TableSpec {
    /// The name without prefix and environment.
    pub base: &'static str,
    pub pk: KeyAttr,
    pub sk: Option<KeyAttr>,
    pub gsis: &'static [IndexSpec],
    pub lsis: &'static [IndexSpec],
    /// Epoch-seconds attribute DynamoDB's TTL deletes by.
    pub ttl_attr: &'static str,
    /// New and old images, for consumers of deletions.
    pub stream: bool,
}

/// Kill switches and other console settings: one item each.
pub const SETTINGS: TableSpec = TableSpec {
    base: "settings",
    pk: s("pk"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

pub const EVENTS_BY_DAY_INDEX: &str = "event-day-index";
pub const EVENTS_BY_CONVERSATION_INDEX: &str = "conversation-events-index";
pub const OUTBOX_INDEX: &str = "outbox-index";

/// Design doc 1, Table A: one record per inbound event and per side effect. Sparse
/// indexes: only event records carry `event_day`/`created_sk` (recent events, a
/// conversation's events), only side effects waiting for pickup carry `outbox`.
pub const MW_IDEMPOTENCY: TableSpec = TableSpec {
    base: "rp_mw_idempotency",
    pk: s("event_id"),
    sk: None,
    gsis: &[
        IndexSpec {
            name: EVENTS_BY_DAY_INDEX,
            pk: s("event_day"),
            sk: Some(s("created_sk")),
        },
        IndexSpec {
            name: EVENTS_BY_CONVERSATION_INDEX,
            pk: s("conversation_id"),
            sk: Some(s("created_sk")),
        },
        IndexSpec {
            name: OUTBOX_INDEX,
            pk: s("outbox"),
            sk: Some(s("outbox_sk")),
        },
    ],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// Design doc 1, Table B: minimal per-conversation state.
pub const MW_CONVERSATION_STATE: TableSpec = TableSpec {
    base: "rp_mw_conversation_state",
    pk: s("conversation_id"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

pub const AUDIT_BY_TYPE_INDEX: &str = "action-type-index";
pub const AUDIT_BY_DAY_INDEX: &str = "audit-day-index";

/// Design doc 1, Table C: what was done, by whom, never with raw text. The two indexes
/// answer "by action type" and "by time range" without a Scan.
pub const MW_AUDIT_ACTIONS: TableSpec = TableSpec {
    base: "rp_mw_audit_actions",
    pk: s("conversation_id"),
    sk: Some(s("ts_action_id")),
    gsis: &[
        IndexSpec {
            name: AUDIT_BY_TYPE_INDEX,
            pk: s("action_type"),
            sk: Some(s("ts_action_id")),
        },
        IndexSpec {
            name: AUDIT_BY_DAY_INDEX,
            pk: s("audit_day"),
            sk: Some(s("ts_action_id")),
        },
    ],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// Console users. A user not seen for a year expires.
pub const USERS: TableSpec = TableSpec {
    base: "users",
    pk: s("name"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// Sessions, keyed by the SHA-256 of the session id (the id itself is never stored).
pub const SESSIONS: TableSpec = TableSpec {
    base: "sessions",
    pk: s("id_hash"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// Failed sign-ins per user name, whether or not the user exists.
pub const LOGIN_ATTEMPTS: TableSpec = TableSpec {
    base: "login_attempts",
    pk: s("name"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// API keys for machine clients, keyed by the SHA-256 of the key.
pub const API_KEYS: TableSpec = TableSpec {
    base: "api_keys",
    pk: s("key_hash"),
    sk: None,
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

pub const IDEMPOTENCY_WATCH_INDEX: &str = "watch-index";

/// Design doc 4: one item per (tenant, scope, key_hash), keyed `tenant#scope#key_hash`.
/// The sparse `watch-index` holds only `started` (by when they go stale) and `failed`
/// (by when they failed) keys, so the monitoring page lists them without a Scan.
pub const IDEMPOTENCY_KEYS: TableSpec = TableSpec {
    base: "idempotency_keys",
    pk: s("id"),
    sk: None,
    gsis: &[IndexSpec {
        name: IDEMPOTENCY_WATCH_INDEX,
        pk: s("watch"),
        sk: Some(n("watch_at")),
    }],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// The engine's own health: per-scope counters in hourly buckets (`scope`, `hour`), plus
/// the `#all` partition that lists which scopes were active in each hour.
pub const IDEMPOTENCY_STATS: TableSpec = TableSpec {
    base: "idempotency_stats",
    pk: s("scope"),
    sk: Some(s("hour")),
    gsis: &[],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

pub const CONVERSATIONS_BY_COMPANY_PROJECT: &str = "company-id-project-id-index";
pub const CONVERSATIONS_BY_WHATSAPP: &str = "company-whatsapp-number-recipient-tel-index";
pub const CONVERSATIONS_BY_SMS: &str = "company-sms-number-recipient-tel-index";
pub const CONVERSATIONS_BY_EMAIL: &str = "company-email-recipient-email-index";
pub const CONVERSATIONS_BY_CREATED: &str = "created-at-index";
pub const CONVERSATIONS_BY_TASK: &str = "task-complete-index";
pub const CONVERSATIONS_BY_STATUS: &str = "conversation-status-index";
pub const CONVERSATIONS_BY_CHANNEL: &str = "channel-method-index";

/// Design doc 2: one item per conversation, under the recipient's phone or email. The
/// reply-linking GSIs are sparse (their `gsi_*` keys exist only when their source does);
/// the LSIs answer per-recipient filters.
pub const CONVERSATIONS: TableSpec = TableSpec {
    base: "conversations",
    pk: s("primary_channel"),
    sk: Some(s("conversation_id")),
    gsis: &[
        IndexSpec {
            name: CONVERSATIONS_BY_COMPANY_PROJECT,
            pk: s("company_id"),
            sk: Some(s("project_id")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_WHATSAPP,
            pk: s("gsi_company_whatsapp_number"),
            sk: Some(s("gsi_recipient_tel")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_SMS,
            pk: s("gsi_company_sms_number"),
            sk: Some(s("gsi_recipient_tel")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_EMAIL,
            pk: s("gsi_company_email"),
            sk: Some(s("gsi_recipient_email")),
        },
    ],
    lsis: &[
        IndexSpec {
            name: CONVERSATIONS_BY_CREATED,
            pk: s("primary_channel"),
            sk: Some(s("created_at")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_TASK,
            pk: s("primary_channel"),
            sk: Some(n("task_complete")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_STATUS,
            pk: s("primary_channel"),
            sk: Some(s("conversation_status")),
        },
        IndexSpec {
            name: CONVERSATIONS_BY_CHANNEL,
            pk: s("primary_channel"),
            sk: Some(s("channel_method")),
        },
    ],
    ttl_attr: "ttl",
    stream: false,
};

/// Design doc 3: the single-table inbox. Its stream (new and old images) lets the consumer
/// bring counters down when messages and receipts are removed.
pub const INBOX: TableSpec = TableSpec {
    base: "inbox",
    pk: s("pk"),
    sk: Some(s("sk")),
    gsis: &[],
    lsis: &[],
    ttl_attr: "expiredat",
    stream: true,
};

pub const MEASUREMENTS_BY_OUTCOME: &str = "outcome-index";

/// Design doc 5: measurements, their idempotency and ordering records, and the audit of
/// every attempt (sparse `outcome-index`: audit records only, by outcome and time).
pub const MEASUREMENTS: TableSpec = TableSpec {
    base: "measurements",
    pk: s("PK"),
    sk: Some(s("SK")),
    gsis: &[IndexSpec {
        name: MEASUREMENTS_BY_OUTCOME,
        pk: s("audit_outcome"),
        sk: Some(s("SK")),
    }],
    lsis: &[],
    ttl_attr: "ttl",
    stream: false,
};

pub const ALL: &[&TableSpec] = &[
    &SETTINGS,
    &MW_IDEMPOTENCY,
    &MW_CONVERSATION_STATE,
    &MW_AUDIT_ACTIONS,
    &USERS,
    &SESSIONS,
    &LOGIN_ATTEMPTS,
    &API_KEYS,
    &IDEMPOTENCY_KEYS,
    &IDEMPOTENCY_STATS,
    &CONVERSATIONS,
    &INBOX,
    &MEASUREMENTS,
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    /// What was added to an existing table.
    Updated(Vec<String>),
    Unchanged,
}

/// Creates or completes every table; returns what it did to each.
pub async fn bootstrap(store: &Store) -> Result<Vec<(String, Outcome)>, StoreError> {
    let mut report = Vec::new();
    for spec in ALL {
        let outcome = ensure_table(store, spec).await?;
        report.push((store.table(spec.base), outcome));
    }
    Ok(report)
}

async fn ensure_table(store: &Store, spec: &TableSpec) -> Result<Outcome, StoreError> {
    let name = store.table(spec.base);
    let mut changes = Vec::new();
    let created = match describe(store, &name).await? {
        Some(desc) => {
            check_keys(&name, spec, &desc)?;
            for gsi in spec.gsis {
                let exists = desc
                    .global_secondary_indexes()
                    .iter()
                    .any(|g| g.index_name() == Some(gsi.name));
                if !exists {
                    add_gsi(store, &name, spec, gsi).await?;
                    changes.push(format!("index {}", gsi.name));
                }
            }
            false
        }
        None => create(store, &name, spec).await?,
    };
    wait_active(store, &name).await?;
    if ensure_ttl(store, &name, spec.ttl_attr).await? && !created {
        changes.push(format!("TTL on {}", spec.ttl_attr));
    }
    Ok(if created {
        Outcome::Created
    } else if changes.is_empty() {
        Outcome::Unchanged
    } else {
        Outcome::Updated(changes)
    })
}

async fn describe(store: &Store, name: &str) -> Result<Option<TableDescription>, StoreError> {
    match store
        .client()
        .describe_table()
        .table_name(name)
        .send()
        .await
    {
        Ok(out) => Ok(out.table),
        Err(e) => match e.into_service_error() {
            DescribeTableError::ResourceNotFoundException(_) => Ok(None),
            other => Err(StoreError::service("DescribeTable", &other)),
        },
    }
}

fn check_keys(name: &str, spec: &TableSpec, desc: &TableDescription) -> Result<(), StoreError> {
    let want: Vec<(&str, KeyType)> = std::iter::once((spec.pk.name, KeyType::Hash))
        .chain(spec.sk.map(|k| (k.name, KeyType::Range)))
        .collect();
    let have: Vec<(&str, KeyType)> = desc
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type().clone()))
        .collect();
    if want != have {
        return Err(StoreError::Schema {
            table: name.to_string(),
            detail: format!("expected {want:?}, found {have:?}"),
        });
    }
    Ok(())
}

fn key_schema(pk: KeyAttr, sk: Option<KeyAttr>) -> Result<Vec<KeySchemaElement>, StoreError> {
    let mut keys = vec![KeySchemaElement::builder()
        .attribute_name(pk.name)
        .key_type(KeyType::Hash)
        .build()
        .map_err(build_err)?];
    if let Some(sk) = sk {
        keys.push(
            KeySchemaElement::builder()
                .attribute_name(sk.name)
                .key_type(KeyType::Range)
                .build()
                .map_err(build_err)?,
        );
    }
    Ok(keys)
}

fn attribute_definitions(spec: &TableSpec) -> Result<Vec<AttributeDefinition>, StoreError> {
    let mut attrs: Vec<KeyAttr> = vec![spec.pk];
    attrs.extend(spec.sk);
    for index in spec.gsis.iter().chain(spec.lsis) {
        attrs.push(index.pk);
        attrs.extend(index.sk);
    }
    let mut defs: Vec<AttributeDefinition> = Vec::new();
    for attr in attrs {
        if defs.iter().any(|d| d.attribute_name() == attr.name) {
            continue;
        }
        defs.push(
            AttributeDefinition::builder()
                .attribute_name(attr.name)
                .attribute_type(scalar(attr.ty))
                .build()
                .map_err(build_err)?,
        );
    }
    Ok(defs)
}

fn scalar(ty: AttrType) -> ScalarAttributeType {
    match ty {
        AttrType::S => ScalarAttributeType::S,
        AttrType::N => ScalarAttributeType::N,
    }
}

fn project_all() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Schema {
        table: String::new(),
        detail: e.to_string(),
    }
}

/// Returns false when someone else created the table between our describe and create.
async fn create(store: &Store, name: &str, spec: &TableSpec) -> Result<bool, StoreError> {
    let mut req = store
        .client()
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(spec.pk, spec.sk)?))
        .set_attribute_definitions(Some(attribute_definitions(spec)?));
    for gsi in spec.gsis {
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(gsi.name)
                .set_key_schema(Some(key_schema(gsi.pk, gsi.sk)?))
                .projection(project_all())
                .build()
                .map_err(build_err)?,
        );
    }
    for lsi in spec.lsis {
        req = req.local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name(lsi.name)
                .set_key_schema(Some(key_schema(lsi.pk, lsi.sk)?))
                .projection(project_all())
                .build()
                .map_err(build_err)?,
        );
    }
    if spec.stream {
        req = req.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(build_err)?,
        );
    }
    match req.send().await {
        Ok(_) => Ok(true),
        Err(e) => {
            let e = e.into_service_error();
            if e.is_resource_in_use_exception() {
                Ok(false)
            } else {
                Err(StoreError::Request {
                    op: "CreateTable",
                    detail: aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
                })
            }
        }
    }
}

async fn add_gsi(
    store: &Store,
    name: &str,
    spec: &TableSpec,
    gsi: &IndexSpec,
) -> Result<(), StoreError> {
    store
        .client()
        .update_table()
        .table_name(name)
        .set_attribute_definitions(Some(attribute_definitions(spec)?))
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder()
                .create(
                    CreateGlobalSecondaryIndexAction::builder()
                        .index_name(gsi.name)
                        .set_key_schema(Some(key_schema(gsi.pk, gsi.sk)?))
                        .projection(project_all())
                        .build()
                        .map_err(build_err)?,
                )
                .build(),
        )
        .send()
        .await
        .map_err(StoreError::request("UpdateTable"))?;
    wait_active(store, name).await
}

/// Waits for the table and all its indexes to be usable.
async fn wait_active(store: &Store, name: &str) -> Result<(), StoreError> {
    for _ in 0..600 {
        if let Some(desc) = describe(store, name).await? {
            let table_ready = desc.table_status() == Some(&TableStatus::Active);
            let indexes_ready = desc
                .global_secondary_indexes()
                .iter()
                .all(|g| g.index_status() == Some(&IndexStatus::Active));
            if table_ready && indexes_ready {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(StoreError::Schema {
        table: name.to_string(),
        detail: "did not become ACTIVE within 60 s".into(),
    })
}

/// Returns true when TTL had to be turned on.
async fn ensure_ttl(store: &Store, name: &str, attr: &str) -> Result<bool, StoreError> {
    let current = store
        .client()
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    let desc = current.time_to_live_description();
    let on = matches!(
        desc.and_then(|d| d.time_to_live_status()),
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
    ) && desc.and_then(|d| d.attribute_name()) == Some(attr);
    if on {
        return Ok(false);
    }
    store
        .client()
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(attr)
                .build()
                .map_err(build_err)?,
        )
        .send()
        .await
        .map_err(StoreError::request("UpdateTimeToLive"))?;
    Ok(true)
}

/// TTL status per table, for tests and `bootstrap --check`.
pub async fn ttl_attribute(store: &Store, name: &str) -> Result<Option<String>, StoreError> {
    let out = store
        .client()
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(StoreError::request("DescribeTimeToLive"))?;
    Ok(out
        .time_to_live_description()
        .filter(|d| d.time_to_live_status() == Some(&TimeToLiveStatus::Enabled))
        .and_then(|d| d.attribute_name())
        .map(str::to_string))
}

/// Names of a table's global secondary indexes, for tests.
pub async fn index_names(store: &Store, name: &str) -> Result<Vec<String>, StoreError> {
    Ok(describe(store, name)
        .await?
        .map(|d| {
            d.global_secondary_indexes()
                .iter()
                .filter_map(|g| g.index_name().map(str::to_string))
                .chain(
                    d.local_secondary_indexes()
                        .iter()
                        .filter_map(|l| l.index_name().map(str::to_string)),
                )
                .collect()
        })
        .unwrap_or_default())
}
