//! The plan of a seed: which conversations, for whom, and what happens to each.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::Rng;
use crate::server::services::conversations::Status;

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

/// The statuses planned conversations end at, as often as each appears here.
const ENDS: [Status; 8] = [
    Status::Processing,
    Status::InitialMessageSent,
    Status::InitialMessageSent,
    Status::ReplyReceived,
    Status::ResponseSent,
    Status::Completed,
    Status::Completed,
    Status::Failed,
];

/// `count` conversations spread over the 90 days before `now`, newest first.
pub fn plan(count: usize, seed: u64, now: DateTime<Utc>) -> Vec<Plan> {
    let mut rng = Rng::new(seed);
    let span_ms = 90 * 24 * 3600 * 1000i64;
    let spread = Spread {
        recipients: (count / 4).max(8) as u64,
        step: (span_ms / count.max(1) as i64).max(2),
        seed,
        now,
    };
    (0..count).map(|i| spread.plan_one(&mut rng, i)).collect()
}

/// How a plan spreads its conversations: among how many recipients, how far apart in time.
struct Spread {
    recipients: u64,
    /// Milliseconds between one conversation and the next, before jitter.
    step: i64,
    seed: u64,
    now: DateTime<Utc>,
}

impl Spread {
    /// The `i`th conversation. The random draws come in a fixed order, so a seed always
    /// gives the same plan.
    fn plan_one(&self, rng: &mut Rng, i: usize) -> Plan {
        let company = rng.pick(COMPANIES);
        let project = *rng.pick(company.projects);
        let to = Recipient::pick(rng, self.recipients);
        let request_id = format!("req{}x{i:06}", self.seed);
        let jitter = rng.below(self.step as u64 / 2) as i64;
        let created_at = self.now - Duration::milliseconds(i as i64 * self.step + jitter);
        let end = *rng.pick(&ENDS);
        let context = context(rng, company, project, &to, &request_id);
        let path = path_to(end);
        let messages = messages(rng, i, &path, created_at, to.first);
        Plan {
            context,
            created_at,
            task_complete: end == Status::Completed,
            hand_off: end == Status::ReplyReceived && rng.below(3) == 0,
            path,
            messages,
        }
    }
}

/// A planned recipient and the channel they are reached on.
struct Recipient {
    first: &'static str,
    last: &'static str,
    tel: String,
    email: String,
    by_email: bool,
    channel: &'static str,
}

impl Recipient {
    /// One of `recipients` people; a quarter of them are reached by email, the rest by
    /// phone (WhatsApp, or SMS one time in three).
    fn pick(rng: &mut Rng, recipients: u64) -> Recipient {
        let who = rng.below(recipients);
        let first = FIRST[(who % 10) as usize];
        let last = LAST[((who / 10) % 10) as usize];
        let by_email = who.is_multiple_of(4);
        let channel = if by_email {
            "email"
        } else if rng.below(3) == 0 {
            "sms"
        } else {
            "whatsapp"
        };
        Recipient {
            first,
            last,
            tel: format!("+4477009{:05}", 10_000 + who),
            email: format!(
                "{}.{}{}@example.org",
                first.to_lowercase(),
                last.to_lowercase(),
                who
            ),
            by_email,
            channel,
        }
    }
}

/// The Context Object the Channel Router would send for this conversation.
fn context(
    rng: &mut Rng,
    company: &Company,
    (project_id, project_name): (&str, &str),
    to: &Recipient,
    request_id: &str,
) -> Value {
    let handle = if to.by_email {
        to.email.replace('@', ".at.")
    } else {
        to.tel[1..].to_string()
    };
    let mut context = json!({
        "conversation_id": format!("{}#{project_id}#{request_id}#{handle}", company.id),
        "channel_method": to.channel,
        "company_id": company.id,
        "project_id": project_id,
        "request_id": request_id,
        "company_name": company.name,
        "project_name": project_name,
        "recipient_first_name": to.first,
        "recipient_last_name": to.last,
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
    if to.by_email {
        context["recipient_email"] = json!(to.email);
    } else {
        context["recipient_tel"] = json!(to.tel);
    }
    context
}

/// The messages of conversation `i` along `path`: the assistant's at the statuses it
/// sends, the recipient's when they reply, five minutes apart.
fn messages(
    rng: &mut Rng,
    i: usize,
    path: &[Status],
    created_at: DateTime<Utc>,
    first: &str,
) -> Vec<Value> {
    let mut messages = Vec::new();
    for (k, st) in path.iter().enumerate() {
        let (role, text) = match st {
            Status::InitialMessageSent | Status::ResponseSent => {
                ("assistant", rng.pick(ASSISTANT).replace("{name}", first))
            }
            Status::ReplyReceived => ("user", rng.pick(USER).to_string()),
            _ => continue,
        };
        let at = created_at + Duration::minutes(5 * (k as i64 + 1));
        let assistant = role == "assistant";
        messages.push(json!({
            "entry_id": format!("e{i}-{k}"),
            "role": role,
            "content": text,
            "message_timestamp": at.to_rfc3339(),
            "ai_prompt_tokens": if assistant { json!(120 + rng.below(80)) } else { Value::Null },
            "ai_completion_tokens": if assistant { json!(30 + rng.below(40)) } else { Value::Null },
            "processing_time_ms": 300 + rng.below(1500),
        }));
    }
    messages
}
