//! Demo data: realistic generated conversations (several companies, projects, channels,
//! statuses and dates), written through the same domain calls the API uses. The plan is
//! deterministic for a seed, so tests can compute what every search must return.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use crate::model::AppError;
use crate::server::contract::from_value;
use crate::server::domain::conversations::{self as domain, Status};
use crate::server::store::Store;

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

struct Company {
    id: &'static str,
    name: &'static str,
    whatsapp: &'static str,
    sms: &'static str,
    email: &'static str,
    projects: &'static [(&'static str, &'static str)],
}

// Numbers in Ofcom's drama range and example domains: nobody real.
const COMPANIES: &[Company] = &[
    Company {
        id: "ci-acme-001",
        name: "Acme Recruitment",
        whatsapp: "+447700900101",
        sms: "+447700900201",
        email: "replies@acme-recruit.example",
        projects: &[
            ("pi-acme-001", "Warehouse Shifts"),
            ("pi-acme-002", "Clarify CV"),
        ],
    },
    Company {
        id: "ci-bloom-002",
        name: "Bloom Health",
        whatsapp: "+447700900102",
        sms: "+447700900202",
        email: "care@bloom-health.example",
        projects: &[
            ("pi-bloom-001", "Appointment Reminders"),
            ("pi-bloom-002", "Feedback"),
        ],
    },
    Company {
        id: "ci-cedar-003",
        name: "Cedar Lettings",
        whatsapp: "+447700900103",
        sms: "+447700900203",
        email: "lets@cedar-lettings.example",
        projects: &[
            ("pi-cedar-001", "Viewing Bookings"),
            ("pi-cedar-002", "Rent Reminders"),
            ("pi-cedar-003", "Maintenance"),
        ],
    },
    Company {
        id: "ci-dune-004",
        name: "Dune Logistics",
        whatsapp: "+447700900104",
        sms: "+447700900204",
        email: "drivers@dune-logistics.example",
        projects: &[("pi-dune-001", "Driver Onboarding")],
    },
];

const FIRST: &[&str] = &[
    "Amara", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Isla", "Jon",
];
const LAST: &[&str] = &[
    "Okafor", "Smith", "Nguyen", "Patel", "Rossi", "Haddad", "Kim", "Silva", "Byrne", "Lee",
];
const ASSISTANT: &[&str] = &[
    "Hi {name}, thanks for your interest. Are you free for a quick call this week?",
    "Hello {name}, this is a reminder about your booking tomorrow at 10:00.",
    "Hi {name}, could you confirm your availability for the next two weeks?",
];
const USER: &[&str] = &[
    "Yes, Thursday afternoon works for me.",
    "Can we move it to Friday please?",
    "I'm not interested any more, thanks.",
    "What documents do I need to bring?",
];

/// One conversation to seed: its Context Object and what happens to it.
#[derive(Clone, Debug)]
pub struct Plan {
    pub context: Value,
    pub created_at: DateTime<Utc>,
    /// The statuses it goes through after `processing`, in order.
    pub path: Vec<Status>,
    pub messages: Vec<Value>,
    pub task_complete: bool,
    pub hand_off: bool,
}

impl Plan {
    pub fn primary_channel(&self) -> String {
        let key = if self.context["channel_method"] == "email" {
            "recipient_email"
        } else {
            "recipient_tel"
        };
        self.context[key].as_str().unwrap_or_default().to_string()
    }

    pub fn status(&self) -> Status {
        self.path.last().copied().unwrap_or(Status::Processing)
    }

    pub fn str(&self, field: &str) -> &str {
        self.context[field].as_str().unwrap_or_default()
    }
}

fn path_to(end: Status) -> Vec<Status> {
    use Status::*;
    match end {
        Processing => vec![],
        InitialMessageSent => vec![InitialMessageSent],
        ReplyReceived => vec![InitialMessageSent, ReplyReceived],
        ResponseSent => vec![InitialMessageSent, ReplyReceived, ResponseSent],
        Completed => vec![InitialMessageSent, Completed],
        Failed => vec![Failed],
    }
}

/// `count` conversations spread over the 90 days before `now`, newest first.
pub fn plan(count: usize, seed: u64, now: DateTime<Utc>) -> Vec<Plan> {
    let mut rng = Rng::new(seed);
    let recipients = (count / 4).max(8);
    let span_ms = 90 * 24 * 3600 * 1000i64;
    let step = (span_ms / count.max(1) as i64).max(2);
    (0..count)
        .map(|i| {
            let company = rng.pick(COMPANIES);
            let (project_id, project_name) = *rng.pick(company.projects);
            let who = rng.below(recipients as u64);
            let first = FIRST[(who % 10) as usize];
            let last = LAST[((who / 10) % 10) as usize];
            // A quarter of the recipients are reached by email, the rest by phone.
            let by_email = who.is_multiple_of(4);
            let channel = if by_email {
                "email"
            } else if rng.below(3) == 0 {
                "sms"
            } else {
                "whatsapp"
            };
            let tel = format!("+4477009{:05}", 10_000 + who);
            let email = format!("{}.{}{}@example.org", first.to_lowercase(), last.to_lowercase(), who);
            let request_id = format!("req{seed}x{i:06}");
            let handle = if by_email { email.replace('@', ".at.") } else { tel[1..].to_string() };
            let created_at = now - Duration::milliseconds(i as i64 * step + rng.below(step as u64 / 2) as i64);
            let end = *rng.pick(&[
                Status::Processing,
                Status::InitialMessageSent,
                Status::InitialMessageSent,
                Status::ReplyReceived,
                Status::ResponseSent,
                Status::Completed,
                Status::Completed,
                Status::Failed,
            ]);
            let mut context = json!({
                "conversation_id": format!("{}#{project_id}#{request_id}#{handle}", company.id),
                "channel_method": channel,
                "company_id": company.id,
                "project_id": project_id,
                "request_id": request_id,
                "company_name": company.name,
                "project_name": project_name,
                "recipient_first_name": first,
                "recipient_last_name": last,
                "comms_consent": rng.below(5) != 0,
                "router_version": "1.0.1-dev",
                "allowed_channels": ["whatsapp", "sms", "email"],
                "project_status": "active",
                "project_data": {"job_ref": format!("JR{}", 100 + rng.below(900))},
                "company_rep": {"name": "Sam Carter", "email": "sam.carter@example.com"},
                "ai_config": {"model_tier": "standard", "temperature": 0.3},
                "channel_config": {
                    "company_whatsapp_number": company.whatsapp,
                    "company_sms_number": company.sms,
                    "company_email": company.email,
                },
            });
            if by_email {
                context["recipient_email"] = json!(email);
            } else {
                context["recipient_tel"] = json!(tel);
            }
            let path = path_to(end);
            let mut messages = Vec::new();
            for (k, st) in path.iter().enumerate() {
                let (role, text) = match st {
                    Status::InitialMessageSent | Status::ResponseSent => {
                        ("assistant", rng.pick(ASSISTANT).replace("{name}", first))
                    }
                    Status::ReplyReceived => ("user", rng.pick(USER).to_string()),
                    _ => continue,
                };
                messages.push(json!({
                    "entry_id": format!("e{i}-{k}"),
                    "role": role,
                    "content": text,
                    "message_timestamp": (created_at + Duration::minutes(5 * (k as i64 + 1))).to_rfc3339(),
                    "ai_prompt_tokens": if role == "assistant" { json!(120 + rng.below(80)) } else { Value::Null },
                    "ai_completion_tokens": if role == "assistant" { json!(30 + rng.below(40)) } else { Value::Null },
                    "processing_time_ms": 300 + rng.below(1500),
                }));
            }
            Plan {
                context,
                created_at,
                task_complete: end == Status::Completed,
                hand_off: end == Status::ReplyReceived && rng.below(3) == 0,
                path,
                messages,
            }
        })
        .collect()
}

/// Writes one planned conversation: create, then its messages and status moves, in the
/// order a channel processor would make them.
pub async fn apply(store: &Store, p: &Plan, ttl_days: i64) -> Result<(), AppError> {
    domain::create(store, from_value(&p.context)?, p.created_at, ttl_days).await?;
    let pc = p.primary_channel();
    let id = p.str("conversation_id").to_string();
    let mut sent = p.messages.iter();
    for (k, st) in p.path.iter().enumerate() {
        let at = p.created_at + Duration::minutes(5 * (k as i64 + 1));
        if matches!(
            st,
            Status::InitialMessageSent | Status::ResponseSent | Status::ReplyReceived
        ) {
            if let Some(m) = sent.next() {
                domain::append(store, &pc, &id, from_value(m)?, at).await?;
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
        domain::update(store, &pc, &id, from_value(&body)?, at).await?;
    }
    Ok(())
}

/// Seeds `plans` with a few writers at once; `progress(done)` after each conversation.
pub async fn seed(
    store: &Store,
    plans: Vec<Plan>,
    ttl_days: i64,
    progress: impl Fn(usize) + Send + Sync + 'static,
) -> Result<(), AppError> {
    let plans = Arc::new(plans);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(progress);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (store, plans, next, done, progress) = (
            store.clone(),
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
                apply(&store, p, ttl_days).await?;
                progress(done.fetch_add(1, Ordering::SeqCst) + 1);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|e| crate::server::errors::internal(&e))??;
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
