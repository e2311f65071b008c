//! Conversations: first-page latency of each search at two table sizes. Every search is
//! one index's `Query`, so the ratio between the sizes should stay near 1.

use std::time::Instant;

use chrono::Utc;
use serde_json::{json, Value};

use super::Series;
use ops_console::server::contract::from_value;
use ops_console::server::seed::{self, Plan};
use ops_console::server::services::conversations::context;
use ops_console::server::store::conversations::{self as store, Conversation, Filters, Partition};
use ops_console::server::store::query::Start;
use ops_console::server::store::Store;

const REPEAT: usize = 40;

/// A planned conversation as it ends up stored (status, task, messages), for bulk loading.
fn item(p: &Plan) -> Result<Conversation, String> {
    let mut c = context::from_context(
        from_value(&p.context).map_err(|e| e.to_string())?,
        p.created_at,
        180,
    )
    .map_err(|e| e.to_string())?;
    c.conversation_status = p.status();
    c.task_complete = i64::from(p.task_complete);
    c.hand_off_to_human = p.hand_off;
    for m in &p.messages {
        c.messages.push(
            context::message(from_value(m).map_err(|e| e.to_string())?, p.created_at)
                .map_err(|e| e.to_string())?,
        );
    }
    c.message_count = c.messages.len() as i64;
    Ok(c)
}

fn searches(p: &Plan) -> Vec<(&'static str, Partition, Filters)> {
    let company = p.str("company_id").to_string();
    let channel = p.str("channel_method").to_string();
    let number_field = match channel.as_str() {
        "whatsapp" => "company_whatsapp_number",
        "sms" => "company_sms_number",
        _ => "company_email",
    };
    let number = p.context["channel_config"][number_field]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let recipient = p.primary_channel();
    let none = Filters::default;
    vec![
        ("recipient", Partition::Recipient(recipient.clone()), none()),
        (
            "recipient + status",
            Partition::Recipient(recipient.clone()),
            Filters {
                status: Some(p.status().as_str().into()),
                ..none()
            },
        ),
        (
            "company",
            Partition::Company {
                company_id: company.clone(),
                project_id: None,
            },
            none(),
        ),
        (
            "company + project",
            Partition::Company {
                company_id: company.clone(),
                project_id: Some(p.str("project_id").into()),
            },
            none(),
        ),
        (
            "company, status filter",
            Partition::Company {
                company_id: company.clone(),
                project_id: None,
            },
            Filters {
                status: Some("completed".into()),
                ..none()
            },
        ),
        (
            "company number",
            Partition::CompanyNumber {
                channel: channel.clone(),
                number: number.clone(),
                recipient: None,
            },
            none(),
        ),
        (
            "company number + recipient",
            Partition::CompanyNumber {
                channel,
                number,
                recipient: Some(recipient),
            },
            none(),
        ),
    ]
}

async fn measure(store: &Store, probe: &Plan) -> Result<Vec<(&'static str, Series)>, String> {
    let mut out = Vec::new();
    for (name, part, filters) in searches(probe) {
        let mut s = Series::new(name);
        for _ in 0..REPEAT {
            let r0 = store.requests().total();
            let t = Instant::now();
            store::search(store, &part, &filters, Start::First, 25)
                .await
                .map_err(|e| e.to_string())?;
            s.add(t.elapsed(), store.requests().total() - r0);
        }
        out.push((name, s));
    }
    Ok(out)
}

pub async fn bench_conversations(store: &Store, sizes: &[usize]) -> Result<Value, String> {
    let max = sizes.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return Ok(json!([]));
    }
    eprintln!("bench: generating {max} conversations");
    let plans = seed::plan(max, 11, Utc::now());
    let probe = plans[0].clone();
    let mut loaded = 0;
    let mut results: Vec<(usize, Vec<(&'static str, Series)>)> = Vec::new();
    for &size in sizes {
        let bar = seed::progress_bar(size, "conversations loaded");
        while loaded < size {
            let end = (loaded + 1000).min(size);
            let batch: Vec<Conversation> = plans[loaded..end]
                .iter()
                .map(item)
                .collect::<Result<_, _>>()?;
            store::load_batch(store, &batch)
                .await
                .map_err(|e| e.to_string())?;
            loaded = end;
            bar(loaded);
        }
        if results.is_empty() {
            // DynamoDB Local warms up (JIT) on its first queries: not part of any size.
            measure(store, &probe).await?;
        }
        results.push((size, measure(store, &probe).await?));
    }
    let (base_size, base) = &results[0];
    println!();
    print!("{:<30}", "conversations: first page");
    for (size, _) in &results {
        print!(" {:>12}", format!("p50 ms @{size}"));
    }
    println!(" {:>10} {:>9}", "ratio", "req/page");
    let mut rows = Vec::new();
    for (i, (name, s0)) in base.iter().enumerate() {
        print!("{name:<30}");
        let mut by_size = serde_json::Map::new();
        for (size, series) in &results {
            let p50 = series[i].1.pct(0.5);
            print!(" {p50:>12.2}");
            by_size.insert(size.to_string(), json!(p50));
        }
        let last = &results[results.len() - 1].1[i].1;
        let ratio = last.pct(0.5) / s0.pct(0.5).max(1e-9);
        let reqs = last.requests as f64 / last.samples.len().max(1) as f64;
        println!(" {ratio:>9.2}x {reqs:>9.2}");
        rows.push(json!({
            "search": name,
            "p50_ms_by_size": by_size,
            "ratio_largest_vs_smallest": ratio,
            "queries_per_page": reqs,
            "smallest": base_size,
        }));
    }
    Ok(Value::Array(rows))
}
