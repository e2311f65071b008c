//! Demo data: realistic generated conversations (several companies, projects, channels,
//! statuses and dates), written through the same service calls the API uses. The plan is
//! deterministic for a seed, so tests can compute what every search must return.

mod plan;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::Duration;
use serde_json::json;

use crate::model::AppError;
use crate::server::contract::from_value;
use crate::server::domain::conversations::ids::{ConversationId, PrimaryChannel};
use crate::server::services::conversations::{Conversations, Status};

pub use plan::{plan, Plan};

/// splitmix64: small, fast, and the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Writes one planned conversation: create, then its messages and status moves, in the
/// order a channel processor would make them.
pub async fn apply(conversations: &Conversations, p: &Plan) -> Result<(), AppError> {
    conversations
        .create(from_value(&p.context)?, p.created_at)
        .await?;
    let pc = PrimaryChannel::parse(p.primary_channel())?;
    let id = ConversationId::parse(p.str("conversation_id"))?;
    let mut sent = p.messages.iter();
    for (k, st) in p.path.iter().enumerate() {
        let at = p.created_at + Duration::minutes(5 * (k as i64 + 1));
        if matches!(
            st,
            Status::InitialMessageSent | Status::ResponseSent | Status::ReplyReceived
        ) {
            if let Some(m) = sent.next() {
                conversations.append(&pc, &id, from_value(m)?, at).await?;
            }
        }
        let last = k + 1 == p.path.len();
        let mut body = json!({"conversation_status": st.as_str()});
        if last && p.task_complete {
            body["task_complete"] = json!(true);
        }
        if last && p.hand_off {
            body["hand_off_to_human"] = json!(true);
            body["hand_off_to_human_reason"] = json!("Asked to speak to a person");
        }
        conversations
            .update(&pc, &id, from_value(&body)?, at)
            .await?;
    }
    Ok(())
}

/// Seeds `plans` with a few writers at once; `progress(done)` after each conversation.
pub async fn seed(
    conversations: &Conversations,
    plans: Vec<Plan>,
    progress: impl Fn(usize) + Send + Sync + 'static,
) -> Result<(), AppError> {
    let plans = Arc::new(plans);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(progress);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (conversations, plans, next, done, progress) = (
            conversations.clone(),
            plans.clone(),
            next.clone(),
            done.clone(),
            progress.clone(),
        );
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(p) = plans.get(i) else {
                    return Ok::<(), AppError>(());
                };
                apply(&conversations, p).await?;
                progress(done.fetch_add(1, Ordering::SeqCst) + 1);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|e| crate::server::telemetry::internal(&e))??;
    }
    Ok(())
}

/// `[#####-----] 500/1000 conversations` on stderr, redrawn in place at each percent.
pub fn progress_bar(total: usize, what: &'static str) -> impl Fn(usize) + Send + Sync + 'static {
    move |done: usize| {
        use std::io::Write;
        let percent = |d: usize| (d * 100).checked_div(total).unwrap_or(100);
        if done != total && done > 1 && percent(done) == percent(done - 1) {
            return;
        }
        let width = 30;
        let filled = (done * width)
            .checked_div(total)
            .unwrap_or(width)
            .min(width);
        eprint!(
            "\r[{}{}] {done}/{total} {what}",
            "#".repeat(filled),
            "-".repeat(width - filled)
        );
        if done == total {
            eprintln!();
        }
        let _ = std::io::stderr().flush();
    }
}
