//! Every Conversations search against a brute-force filter of the seed: 2,000 generated
//! conversations written through the API's own calls, then each search paged forward and
//! back through its index and compared with what the seed says it must return.

use std::collections::BTreeSet;

use chrono::{Duration, Utc};

use crate::helpers::spawn_app;
use ops_console::server::clock::iso;
use ops_console::server::seed::{self, Plan};
use ops_console::server::store::conversations::{self as store, Conversation, Filters, Partition};
use ops_console::server::store::query::Start;
use ops_console::server::store::Store;

/// The index sort key of a row (or plan) for the index a search uses, as text.
fn sort_key(index: &str, c: &Conversation) -> String {
    match index {
        "created-at-index" => c.created_at.clone(),
        "conversation-status-index" => c.conversation_status.as_str().to_string(),
        "channel-method-index" => c.channel_method.clone(),
        "task-complete-index" => c.task_complete.to_string(),
        "company-id-project-id-index" => c.project_id.clone(),
        "company-email-recipient-email-index" => c.gsi_recipient_email.clone().unwrap_or_default(),
        _ => c.gsi_recipient_tel.clone().unwrap_or_default(),
    }
}

fn plan_key(index: &str, p: &Plan) -> String {
    match index {
        "created-at-index" => iso(p.created_at),
        "conversation-status-index" => p.status().as_str().to_string(),
        "channel-method-index" => p.str("channel_method").to_string(),
        "task-complete-index" => i64::from(p.task_complete).to_string(),
        "company-id-project-id-index" => p.str("project_id").to_string(),
        "company-email-recipient-email-index" => p.str("recipient_email").to_string(),
        _ => p.str("recipient_tel").to_string(),
    }
}

fn company_number(p: &Plan, channel: &str) -> Option<String> {
    let field = match channel {
        "whatsapp" => "company_whatsapp_number",
        "sms" => "company_sms_number",
        _ => "company_email",
    };
    (p.str("channel_method") == channel)
        .then(|| {
            p.context["channel_config"][field]
                .as_str()
                .map(str::to_string)
        })
        .flatten()
}

fn matches(p: &Plan, part: &Partition, f: &Filters) -> bool {
    let in_partition = match part {
        Partition::Recipient(pc) => &p.primary_channel() == pc,
        Partition::Company {
            company_id,
            project_id,
        } => {
            p.str("company_id") == company_id
                && project_id.as_ref().is_none_or(|x| p.str("project_id") == x)
        }
        Partition::CompanyNumber {
            channel,
            number,
            recipient,
        } => {
            let sk = if channel == "email" {
                p.str("recipient_email")
            } else {
                p.str("recipient_tel")
            };
            company_number(p, channel).as_ref() == Some(number)
                && !sk.is_empty()
                && recipient.as_ref().is_none_or(|r| sk == r)
        }
    };
    let created = iso(p.created_at);
    in_partition
        && f.status.as_ref().is_none_or(|s| p.status().as_str() == s)
        && f.channel
            .as_ref()
            .is_none_or(|c| p.str("channel_method") == c)
        && f.task_complete
            .is_none_or(|t| i64::from(p.task_complete) == t)
        && f.created
            .as_ref()
            .is_none_or(|(a, b)| &created >= a && &created <= b)
}

/// Pages forward to the end, then back to the start; checks both ways agree with the
/// brute force: same members, sorted by the index's key, no duplicates.
async fn check(store: &Store, plans: &[Plan], part: Partition, f: Filters, size: usize) -> usize {
    let label = format!("{part:?} {f:?}");
    let first = store::search(store, &part, &f, Start::First, size)
        .await
        .unwrap();
    let index = first.index;
    let mut pages = vec![first.rows.clone()];
    let mut cursors = vec![(first.prev.clone(), first.next.clone())];
    let mut next = first.next.clone();
    while let Some(c) = next {
        let p = store::search(store, &part, &f, Start::After(&c), size)
            .await
            .unwrap();
        assert!(p.prev.is_some(), "{label}: a later page links back");
        next = p.next.clone();
        cursors.push((p.prev.clone(), p.next.clone()));
        pages.push(p.rows);
    }
    let got: Vec<&Conversation> = pages.iter().flatten().collect();
    let mut want: Vec<&Plan> = plans.iter().filter(|p| matches(p, &part, &f)).collect();
    want.sort_by_key(|p| plan_key(index, p));
    if index == "created-at-index" {
        want.reverse();
    }
    let got_keys: Vec<String> = got.iter().map(|c| sort_key(index, c)).collect();
    let want_keys: Vec<String> = want.iter().map(|p| plan_key(index, p)).collect();
    assert_eq!(got_keys, want_keys, "{label}: order by {index}");
    let got_ids: BTreeSet<&str> = got.iter().map(|c| c.conversation_id.as_str()).collect();
    let want_ids: BTreeSet<&str> = want.iter().map(|p| p.str("conversation_id")).collect();
    assert_eq!(got_ids.len(), got.len(), "{label}: no row twice");
    assert_eq!(got_ids, want_ids, "{label}: members");
    if index == "created-at-index" {
        // Creation times are unique: the exact order is fixed.
        let got_order: Vec<&str> = got.iter().map(|c| c.conversation_id.as_str()).collect();
        let want_order: Vec<&str> = want.iter().map(|p| p.str("conversation_id")).collect();
        assert_eq!(got_order, want_order, "{label}");
    }
    // Back from the last page: every page comes back as it was.
    let mut prev = cursors.last().and_then(|(p, _)| p.clone());
    let mut k = pages.len() - 1;
    while let Some(c) = prev {
        let p = store::search(store, &part, &f, Start::Before(&c), size)
            .await
            .unwrap();
        k -= 1;
        let ids = |rows: &[Conversation]| -> Vec<String> {
            rows.iter().map(|r| r.conversation_id.clone()).collect()
        };
        assert_eq!(ids(&p.rows), ids(&pages[k]), "{label}: page {k} going back");
        prev = p.prev;
    }
    assert_eq!(k, 0, "{label}: back to the first page");
    if matches!(part, Partition::Recipient(_)) {
        let n = store::count(store, &part, &f, true).await.unwrap();
        assert_eq!(
            (n.n as usize, n.exact),
            (want.len(), true),
            "{label}: count"
        );
    }
    got.len()
}

#[tokio::test]
async fn every_search_returns_what_a_brute_force_filter_of_the_seed_returns() {
    let app = spawn_app().await;
    let now = Utc::now();
    let plans = seed::plan(2_000, 42, now);
    seed::seed(&app.state.conversations, plans.clone(), |_| {})
        .await
        .expect("seeded");
    let scans_before = app.store.requests().get("Scan");
    let mut checked = 0;
    let day = |d: i64| iso(now - Duration::days(d));
    let created = Some((day(40), day(10)));

    // Recipients: the ones with the most conversations, phones and emails.
    let mut by_recipient: std::collections::BTreeMap<String, Vec<&Plan>> = Default::default();
    for p in &plans {
        by_recipient.entry(p.primary_channel()).or_default().push(p);
    }
    let mut busiest: Vec<_> = by_recipient.iter().collect();
    busiest.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let picks: Vec<_> = busiest
        .iter()
        .filter(|(k, _)| k.contains('@'))
        .take(2)
        .chain(busiest.iter().filter(|(k, _)| !k.contains('@')).take(3))
        .collect();
    for (pc, ps) in picks {
        let part = Partition::Recipient(pc.to_string());
        let mine = ps[0];
        for f in [
            Filters::default(),
            Filters {
                status: Some(mine.status().as_str().into()),
                ..Filters::default()
            },
            Filters {
                channel: Some(mine.str("channel_method").into()),
                ..Filters::default()
            },
            Filters {
                task_complete: Some(0),
                ..Filters::default()
            },
            Filters {
                created: created.clone(),
                ..Filters::default()
            },
            Filters {
                status: Some("completed".into()),
                created: created.clone(),
                ..Filters::default()
            },
        ] {
            checked += check(&app.store, &plans, part.clone(), f, 2).await;
        }
    }

    for company in ["ci-acme-001", "ci-bloom-002", "ci-cedar-003", "ci-dune-004"] {
        let project = plans
            .iter()
            .find(|p| p.str("company_id") == company)
            .map(|p| p.str("project_id").to_string());
        let all = Partition::Company {
            company_id: company.into(),
            project_id: None,
        };
        let one = Partition::Company {
            company_id: company.into(),
            project_id: project,
        };
        checked += check(&app.store, &plans, all.clone(), Filters::default(), 60).await;
        checked += check(&app.store, &plans, one.clone(), Filters::default(), 60).await;
        check(
            &app.store,
            &plans,
            all.clone(),
            Filters {
                status: Some("completed".into()),
                ..Filters::default()
            },
            25,
        )
        .await;
        check(
            &app.store,
            &plans,
            all.clone(),
            Filters {
                channel: Some("sms".into()),
                task_complete: Some(0),
                ..Filters::default()
            },
            25,
        )
        .await;
        check(
            &app.store,
            &plans,
            one,
            Filters {
                created: created.clone(),
                channel: Some("whatsapp".into()),
                ..Filters::default()
            },
            25,
        )
        .await;
    }

    // The reply-linking indexes: a company number alone, and with its recipient. An email
    // conversation never appears under a WhatsApp or SMS number.
    let acme = plans
        .iter()
        .find(|p| p.str("company_id") == "ci-acme-001")
        .unwrap();
    for channel in ["whatsapp", "sms", "email"] {
        let number = acme.context["channel_config"][match channel {
            "whatsapp" => "company_whatsapp_number",
            "sms" => "company_sms_number",
            _ => "company_email",
        }]
        .as_str()
        .unwrap()
        .to_string();
        let part = Partition::CompanyNumber {
            channel: channel.into(),
            number: number.clone(),
            recipient: None,
        };
        checked += check(&app.store, &plans, part.clone(), Filters::default(), 50).await;
        let rows = store::search(&app.store, &part, &Filters::default(), Start::First, 500)
            .await
            .unwrap();
        assert!(
            rows.rows.iter().all(|c| c.channel_method == channel),
            "{channel}: only its own channel"
        );
        let someone = plans
            .iter()
            .find(|p| company_number(p, channel).as_deref() == Some(number.as_str()))
            .unwrap();
        let r = if channel == "email" {
            someone.str("recipient_email")
        } else {
            someone.str("recipient_tel")
        };
        let part = Partition::CompanyNumber {
            channel: channel.into(),
            number,
            recipient: Some(r.into()),
        };
        checked += check(&app.store, &plans, part, Filters::default(), 2).await;
    }

    assert_eq!(
        app.store.requests().get("Scan"),
        scans_before,
        "no search scans"
    );
    assert_eq!(scans_before, 0, "seeding does not scan either");
    assert!(
        checked > 3_000,
        "the searches returned {checked} rows in all"
    );
}
