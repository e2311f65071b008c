//! Batches (docs/measurements.md, "Batches"): grouped by user, each user's items in
//! timestamp order, one status per item; with `BATCH_FAIL_FAST` a user's remaining items
//! stop at their first ordering violation and are reported (and audited) as skipped.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Attempt, Context, Measurements, Outcome};
use crate::model::AppError;
use crate::server::contract::measurements::{BatchItem, BatchReport};
use crate::server::domain::measurements::payload::{parse, Submission};
use crate::server::store::measurements::Action;

pub const MAX_BATCH: usize = 500;

fn status_of(index: usize, s: &Submission, outcome: Result<Outcome, AppError>) -> BatchItem {
    let mut st = BatchItem {
        index,
        measurement_id: Some(s.measurement_id.to_string()),
        user_id: Some(s.user_id.to_string()),
        ..BatchItem::default()
    };
    match outcome {
        Ok(o) => {
            st.status = o.name().to_string();
            match o {
                Outcome::Accepted { result, .. } => {
                    st.http_status = 201;
                    st.result = Some(result);
                }
                Outcome::Duplicate { result } => {
                    st.http_status = 200;
                    st.result = Some(result);
                }
                Outcome::Conflict { original, diff } => {
                    st.http_status = 409;
                    st.result = Some(original);
                    st.payload_diff = Some(diff);
                }
                Outcome::OutOfOrder {
                    last_accepted,
                    accepted_from,
                    ..
                } => {
                    st.http_status = 422;
                    st.last_accepted = Some(last_accepted);
                    st.accepted_from = Some(accepted_from);
                }
            }
        }
        Err(e) => {
            st.status = if e.status() == 503 {
                "unavailable"
            } else {
                "invalid"
            }
            .into();
            st.http_status = e.status();
            st.field = e.field().map(str::to_string);
            st.detail = Some(e.to_string());
        }
    }
    st
}

impl Measurements {
    /// Processes a batch. Users run side by side; each user's items one after another.
    pub async fn batch(
        &self,
        items: &[Value],
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<BatchReport, AppError> {
        let mut statuses: Vec<BatchItem> = Vec::with_capacity(items.len());
        let mut by_user: BTreeMap<String, Vec<(usize, Submission)>> = BTreeMap::new();
        for (i, v) in items.iter().enumerate() {
            match parse(v, now) {
                Ok(s) => by_user
                    .entry(s.user_id.to_string())
                    .or_default()
                    .push((i, s)),
                Err(e) => {
                    self.record_invalid(v, &e, ctx, now).await?;
                    statuses.push(BatchItem {
                        index: i,
                        status: "invalid".into(),
                        http_status: 400,
                        field: e.field().map(str::to_string),
                        detail: Some(e.to_string()),
                        ..BatchItem::default()
                    });
                }
            }
        }
        let mut tasks = tokio::task::JoinSet::new();
        let mut order_of_users = Vec::new();
        for (_, mut list) in by_user {
            list.sort_by(|a, b| a.1.timestamp.cmp(&b.1.timestamp).then(a.0.cmp(&b.0)));
            order_of_users.extend(list.iter().map(|(i, _)| *i));
            let (me, ctx) = (self.clone(), ctx.clone());
            tasks.spawn(async move { me.user_batch(list, &ctx, now).await });
        }
        while let Some(done) = tasks.join_next().await {
            statuses.extend(done.map_err(|e| crate::server::telemetry::internal(&e))??);
        }
        statuses.sort_by_key(|s| s.index);
        let mut summary = BTreeMap::new();
        for s in &statuses {
            *summary.entry(s.status.clone()).or_insert(0) += 1;
        }
        let retry_order = order_of_users
            .into_iter()
            .filter(|i| {
                statuses
                    .get(*i)
                    .is_some_and(|s| matches!(s.status.as_str(), "skipped" | "unavailable"))
            })
            .collect();
        Ok(BatchReport {
            items: statuses,
            summary,
            retry_order,
        })
    }

    async fn user_batch(
        &self,
        list: Vec<(usize, Submission)>,
        ctx: &Context,
        now: DateTime<Utc>,
    ) -> Result<Vec<BatchItem>, AppError> {
        let mut out = Vec::with_capacity(list.len());
        // Why the rest of this user's items wait, once one of them stopped the user.
        let mut stopped: Option<&str> = None;
        for (i, s) in list {
            if let Some(reason) = stopped {
                self.record(
                    Attempt {
                        user: &s.user_id,
                        measurement_id: &s.measurement_id,
                        action: Action::Skipped,
                        reason: reason.into(),
                        payload: Some(s.payload()),
                    },
                    ctx,
                    now,
                )
                .await?;
                out.push(BatchItem {
                    index: i,
                    measurement_id: Some(s.measurement_id.to_string()),
                    user_id: Some(s.user_id.to_string()),
                    status: "skipped".into(),
                    http_status: 424,
                    detail: Some(reason.into()),
                    ..BatchItem::default()
                });
                continue;
            }
            let outcome = self.submit(&s, ctx, now).await;
            if let Err(e @ (AppError::Internal { .. } | AppError::InProgress { .. })) = &outcome {
                return Err(e.clone());
            }
            if matches!(outcome, Ok(Outcome::OutOfOrder { .. })) && self.settings.batch_fail_fast {
                stopped = Some(
                    "skipped: an earlier item of this user broke the ordering (BATCH_FAIL_FAST)",
                );
            }
            // Stored later, this one would be out of order behind the user's next items.
            if matches!(&outcome, Err(AppError::Unavailable { .. })) {
                stopped = Some("skipped: an earlier item of this user could not be stored now; resend in retry_order");
            }
            out.push(status_of(i, &s, outcome));
        }
        Ok(out)
    }
}
