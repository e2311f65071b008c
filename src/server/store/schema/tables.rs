//! The tables and their indexes, one constant each; `ALL` is what the bootstrap creates.

use super::{n, s, IndexSpec, Projected, TableSpec};

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
pub const DUE_INDEX: &str = "due-index";

/// What `due-index` holds of a side effect: all but its message and its trace (which no
/// list shows and no claim needs), so that a copy costs one write unit until its attempts
/// (shown in the Outbox's lists) grow past 1 KB. A claim changes only attributes held here
/// (in place: it keeps its key) and never `tries`.
pub const DUE_INDEX_HOLDS: &[&str] = &[
    "kind",
    "action_type",
    "target",
    "conversation_id",
    "source_event",
    "status",
    "result",
    "created_at",
    "updated_at",
    "expires_at",
    "attempts",
    "claim_nonce",
    "lease_until_ms",
    "next_at_ms",
    "receiver",
    "after",
    "cause",
    "unknown",
    "held_reason",
    "round_start",
    "resend_job",
    "tries",
];

/// Table A of the helpdesk events (docs/events.md; docs/data-model.md,
/// "rp_mw_idempotency (Table A)"): one record per inbound event and per side effect.
/// Sparse indexes: only event records carry `event_day`/`created_sk` (recent events, a
/// conversation's events), only side effects in an outbox group carry `outbox` (or, due
/// ones written by this release with `events.due_index` on, `due`).
pub const MW_IDEMPOTENCY: TableSpec = TableSpec {
    base: "rp_mw_idempotency",
    pk: s("event_id"),
    sk: None,
    gsis: &[
        IndexSpec {
            name: EVENTS_BY_DAY_INDEX,
            pk: s("event_day"),
            sk: Some(s("created_sk")),
            projection: Projected::All,
        },
        IndexSpec {
            name: EVENTS_BY_CONVERSATION_INDEX,
            pk: s("conversation_id"),
            sk: Some(s("created_sk")),
            projection: Projected::All,
        },
        IndexSpec {
            name: OUTBOX_INDEX,
            pk: s("outbox"),
            sk: Some(s("outbox_sk")),
            projection: Projected::All,
        },
        IndexSpec {
            name: DUE_INDEX,
            pk: s("due"),
            sk: Some(s("outbox_sk")),
            projection: Projected::Include(DUE_INDEX_HOLDS),
        },
    ],
    lsis: &[],
    ttl_attr: "expires_at",
    stream: false,
};

/// Table B of the helpdesk events (docs/events.md; docs/data-model.md,
/// "rp_mw_conversation_state (Table B)"): minimal per-conversation state.
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

/// Table C of the helpdesk events (docs/events.md; docs/data-model.md,
/// "rp_mw_audit_actions (Table C)"): what was done, by whom, never with raw text. The two
/// indexes answer "by action type" and "by time range" without a Scan.
pub const MW_AUDIT_ACTIONS: TableSpec = TableSpec {
    base: "rp_mw_audit_actions",
    pk: s("conversation_id"),
    sk: Some(s("ts_action_id")),
    gsis: &[
        IndexSpec {
            name: AUDIT_BY_TYPE_INDEX,
            pk: s("action_type"),
            sk: Some(s("ts_action_id")),
            projection: Projected::All,
        },
        IndexSpec {
            name: AUDIT_BY_DAY_INDEX,
            pk: s("audit_day"),
            sk: Some(s("ts_action_id")),
            projection: Projected::All,
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
pub const IDEMPOTENCY_WATCH_SHARD_INDEX: &str = "watch-shard-index";
pub const IDEMPOTENCY_CORRELATION_INDEX: &str = "correlation-index";

/// Idempotency keys (docs/idempotency.md; docs/data-model.md, "idempotency_keys"): one
/// item per (tenant, scope, key_hash), keyed `tenant#scope#key_hash`. The sparse
/// `watch-shard-index` holds only `started` (by when they go stale) and `failed` (by when
/// they failed) keys, each status over 32 shards (`started#07`), so the monitoring page
/// lists them without a Scan and no partition takes every key's copy; `watch-index` is the
/// unsharded one a release before wrote, read only to move its keys over
/// (`store::idempotency::mend_watch`). The sparse
/// `correlation-index` holds only the keys of REST requests that carried an
/// `X-Correlation-Id` (by its HMAC), so a key can be found by the id a client logged.
pub const IDEMPOTENCY_KEYS: TableSpec = TableSpec {
    base: "idempotency_keys",
    pk: s("id"),
    sk: None,
    gsis: &[
        IndexSpec {
            name: IDEMPOTENCY_WATCH_INDEX,
            pk: s("watch"),
            sk: Some(n("watch_at")),
            projection: Projected::All,
        },
        IndexSpec {
            name: IDEMPOTENCY_WATCH_SHARD_INDEX,
            pk: s("watch_key"),
            sk: Some(s("watch_sk")),
            projection: Projected::All,
        },
        IndexSpec {
            name: IDEMPOTENCY_CORRELATION_INDEX,
            pk: s("correlation_hash"),
            sk: Some(n("created_at")),
            projection: Projected::All,
        },
    ],
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

/// Conversations (docs/conversations.md; docs/data-model.md, "conversations"): one item
/// per conversation, under the recipient's phone or email. The reply-linking GSIs are
/// sparse (their `gsi_*` keys exist only when their source does); the LSIs answer
/// per-recipient filters.
pub const CONVERSATIONS: TableSpec = TableSpec {
    base: "conversations",
    pk: s("primary_channel"),
    sk: Some(s("conversation_id")),
    gsis: &[
        IndexSpec {
            name: CONVERSATIONS_BY_COMPANY_PROJECT,
            pk: s("company_id"),
            sk: Some(s("project_id")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_WHATSAPP,
            pk: s("gsi_company_whatsapp_number"),
            sk: Some(s("gsi_recipient_tel")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_SMS,
            pk: s("gsi_company_sms_number"),
            sk: Some(s("gsi_recipient_tel")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_EMAIL,
            pk: s("gsi_company_email"),
            sk: Some(s("gsi_recipient_email")),
            projection: Projected::All,
        },
    ],
    lsis: &[
        IndexSpec {
            name: CONVERSATIONS_BY_CREATED,
            pk: s("primary_channel"),
            sk: Some(s("created_at")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_TASK,
            pk: s("primary_channel"),
            sk: Some(n("task_complete")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_STATUS,
            pk: s("primary_channel"),
            sk: Some(s("conversation_status")),
            projection: Projected::All,
        },
        IndexSpec {
            name: CONVERSATIONS_BY_CHANNEL,
            pk: s("primary_channel"),
            sk: Some(s("channel_method")),
            projection: Projected::All,
        },
    ],
    ttl_attr: "ttl",
    stream: false,
};

/// The single-table inbox (docs/inbox.md; docs/data-model.md, "inbox"). Its stream (new
/// and old images) lets the consumer bring counters down when messages and receipts are
/// removed.
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
pub const MEASUREMENTS_BY_OUTCOME_SHARD: &str = "outcome-shard-index";

/// Measurements (docs/measurements.md; docs/data-model.md, "measurements"): the
/// measurements, their idempotency and ordering records, and the audit of every attempt
/// (sparse `outcome-shard-index`: audit records only, by outcome over 16 shards
/// (`accepted#07`) and time; `outcome-index`, by outcome alone, holds the records of the
/// releases before this one, read until they expire and written no more).
pub const MEASUREMENTS: TableSpec = TableSpec {
    base: "measurements",
    pk: s("PK"),
    sk: Some(s("SK")),
    gsis: &[
        IndexSpec {
            name: MEASUREMENTS_BY_OUTCOME,
            pk: s("audit_outcome"),
            sk: Some(s("SK")),
            projection: Projected::All,
        },
        IndexSpec {
            name: MEASUREMENTS_BY_OUTCOME_SHARD,
            pk: s("outcome_shard"),
            sk: Some(s("SK")),
            projection: Projected::All,
        },
    ],
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
