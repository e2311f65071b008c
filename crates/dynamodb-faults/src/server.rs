//! The proxy's listener, its connections (each one can be reset on purpose), and the
//! handling of one request.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

use crate::errors::{self, json_answer, Answer};
use crate::items::{self, TokenSeen};
use crate::partitions::{self, Charge, Item, Refusal};
use crate::{batch, capacity, lag, streams};
use crate::{Faults, Kind, Outage, Report, Shared};

/// A running proxy. Dropping it stops it.
pub struct Proxy {
    shared: Arc<Shared>,
    port: u16,
    outage: watch::Sender<Outage>,
    task: tokio::task::JoinHandle<()>,
    ctx: Arc<Ctx>,
}

struct Ctx {
    shared: Arc<Shared>,
    upstream: String,
    client: Client<HttpConnector, Full<Bytes>>,
    outage: watch::Receiver<Outage>,
    conns: Mutex<HashMap<u64, Arc<Notify>>>,
    next_id: AtomicU64,
    /// This context, for work that outlives a request (late writes).
    me: std::sync::Weak<Ctx>,
    /// The access key every forwarded request is signed with (DynamoDB Local keeps one
    /// database per access key): `None` leaves each request's own.
    access_key: Mutex<Option<String>>,
}

impl Proxy {
    /// A proxy on a free port of 127.0.0.1 in front of `upstream` (`http://host:port`).
    pub async fn start(upstream: &str, faults: Faults, seed: u64) -> io::Result<Proxy> {
        Proxy::start_on(0, upstream, faults, seed).await
    }

    pub async fn start_on(
        port: u16,
        upstream: &str,
        faults: Faults,
        seed: u64,
    ) -> io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let (tx, rx) = watch::channel(faults.outage);
        let shared = Shared::new(faults, seed);
        let ctx = Arc::new_cyclic(|me| Ctx {
            shared: shared.clone(),
            upstream: upstream.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            outage: rx,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            me: me.clone(),
            access_key: Mutex::new(None),
        });
        let task = tokio::spawn(accept_loop(ctx.clone(), listener, port));
        Ok(Proxy {
            shared,
            port,
            outage: tx,
            task,
            ctx,
        })
    }

    /// Forwards every request as signed by `key` (DynamoDB Local keeps one database per
    /// access key): clients of the proxy sign with their own key, so one that reaches
    /// DynamoDB Local without the proxy lands in a database of its own, where a test can
    /// see it.
    pub fn forward_as(&self, key: &str) {
        if let Ok(mut k) = self.ctx.access_key.lock() {
            *k = Some(key.to_string());
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn faults(&self) -> Faults {
        self.shared.faults()
    }

    pub fn set(&self, faults: Faults) {
        let outage = faults.outage;
        if let Ok(mut f) = self.shared.faults.lock() {
            *f = faults;
        }
        self.outage.send_replace(outage);
    }

    pub fn update(&self, change: impl FnOnce(&mut Faults)) {
        let mut f = self.faults();
        change(&mut f);
        self.set(f);
    }

    pub fn report(&self) -> Report {
        self.shared.report()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(ctx: Arc<Ctx>, listener: TcpListener, port: u16) {
    let mut outage = ctx.outage.clone();
    let mut listener = Some(listener);
    loop {
        let current = *outage.borrow_and_update();
        if current == Outage::Refuse {
            // Refused: nothing listens, and whatever was open is reset.
            listener = None;
            let open: Vec<Arc<Notify>> = ctx
                .conns
                .lock()
                .map(|c| c.values().cloned().collect())
                .unwrap_or_default();
            for kill in open {
                ctx.shared.counters.add(Kind::OutageRefused);
                kill.notify_one();
            }
            if outage.changed().await.is_err() {
                return;
            }
            continue;
        }
        let l = match listener.take() {
            Some(l) => l,
            None => match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => l,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::select! {
            accepted = l.accept() => {
                if let Ok((stream, _)) = accepted {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve(ctx.clone(), stream));
                }
                listener = Some(l);
            }
            changed = outage.changed() => {
                if changed.is_err() {
                    return;
                }
                listener = Some(l);
            }
        }
    }
}

/// Makes the next close of `fd` send a reset instead of a normal close.
fn reset_on_close(fd: i32) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a descriptor this connection still owns, with a correctly
    // sized option value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

async fn serve(ctx: Arc<Ctx>, stream: TcpStream) {
    let fd = stream.as_raw_fd();
    let id = ctx.next_id.fetch_add(1, Ordering::Relaxed);
    let kill = Arc::new(Notify::new());
    if let Ok(mut c) = ctx.conns.lock() {
        c.insert(id, kill.clone());
    }
    let service = {
        let ctx = ctx.clone();
        let kill = kill.clone();
        hyper::service::service_fn(move |req| {
            let ctx = ctx.clone();
            let kill = kill.clone();
            async move { Ok::<_, Infallible>(handle(&ctx, &kill, req).await) }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    let mut conn = Box::pin(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = kill.notified() => {
            reset_on_close(fd);
        }
    }
    drop(conn);
    if let Ok(mut c) = ctx.conns.lock() {
        c.remove(&id);
    }
}

/// Resets the connection instead of answering.
async fn reset(kill: &Notify) -> Answer {
    kill.notify_one();
    std::future::pending::<()>().await;
    unreachable!("a reset connection answers nothing")
}

fn is_data_op(op: &str) -> bool {
    matches!(
        op,
        "GetItem"
            | "PutItem"
            | "UpdateItem"
            | "DeleteItem"
            | "Query"
            | "Scan"
            | "BatchGetItem"
            | "BatchWriteItem"
            | "TransactWriteItems"
            | "TransactGetItems"
    )
}

async fn handle(ctx: &Ctx, kill: &Notify, req: Request<Incoming>) -> Answer {
    let shared = &ctx.shared;
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return reset(kill).await;
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let (service, op) = target.split_once('.').unwrap_or(("", ""));
    if std::env::var_os("DYNAMODB_FAULTS_TRACE").is_some() {
        eprintln!(
            "dynamodb-faults: {target} {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        );
    }
    let faults = shared.faults();

    match faults.outage {
        Outage::Refuse => {
            shared.counters.add(Kind::OutageRefused);
            return reset(kill).await;
        }
        Outage::Hang => {
            shared.counters.add(Kind::OutageHung);
            let mut outage = ctx.outage.clone();
            while *outage.borrow_and_update() == Outage::Hang {
                if outage.changed().await.is_err() {
                    break;
                }
            }
            return reset(kill).await;
        }
        Outage::None => {}
    }
    let resettable = faults.reset_matching.is_empty()
        || std::str::from_utf8(&body).is_ok_and(|b| b.contains(&faults.reset_matching));
    if resettable && shared.roll(faults.reset_rate) {
        shared.counters.add(Kind::Reset);
        return reset(kill).await;
    }
    if shared.roll(faults.internal_error_rate) {
        shared.counters.add(Kind::InternalError);
        return errors::internal_error();
    }
    let throttled = faults.throttle_matching.is_empty()
        || std::str::from_utf8(&body).is_ok_and(|b| b.contains(&faults.throttle_matching));
    if is_data_op(op) && throttled && shared.roll(faults.throttle_rate) {
        shared.counters.add(Kind::Throttle);
        return if shared.roll(0.5) {
            errors::throttling()
        } else {
            errors::throughput_exceeded()
        };
    }
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    let Some(mut json) = json else {
        return forward_or_reset(ctx, kill, &parts.headers, &parts.uri, body).await;
    };
    if service.starts_with("DynamoDBStreams") {
        return stream_request(ctx, kill, &parts.headers, &parts.uri, op, json, &faults).await;
    }
    if !is_data_op(op) {
        return forward_or_reset(ctx, kill, &parts.headers, &parts.uri, body).await;
    }
    if op == "Query" {
        let index = json["IndexName"].as_str().unwrap_or_default();
        if faults.backfilling_indexes.iter().any(|b| b == index) {
            shared.counters.add(Kind::Backfilling);
            return errors::backfilling(index);
        }
    }
    // A batch handed back in part: forward the rest, answer with the part as unprocessed.
    let mut held_back = None;
    if matches!(op, "BatchWriteItem" | "BatchGetItem") && shared.roll(faults.partial_batch_rate) {
        let mut forwarded = 0;
        let hold = |_: &str, _: usize| {
            forwarded += 1;
            match faults.partial_batch_keeps {
                0 => shared.roll(0.5),
                keep => forwarded > keep,
            }
        };
        if let Some(s) = batch::split(op, &json, hold) {
            shared.counters.add(Kind::PartialBatch);
            json = s.forwarded;
            held_back = Some(s.held);
        }
    }
    if matches!(
        op,
        "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems"
    ) && !faults.ignore_conditions_matching.is_empty()
        && json
            .to_string()
            .contains(&faults.ignore_conditions_matching)
        && items::ignore_conditions(&mut json)
    {
        shared.counters.add(Kind::ConditionIgnored);
    }
    let writes = items::writes(op, &json);
    let answer = if writes.is_empty() {
        read_request(ctx, kill, &parts, op, json, &faults).await
    } else {
        write_request(ctx, kill, &parts, op, json, &writes, &faults).await
    };
    match held_back {
        Some(held) if answer.status() == StatusCode::OK => {
            let Ok(b) = answer.into_body().collect().await;
            let v: Value = serde_json::from_slice(&b.to_bytes()).unwrap_or_default();
            json_answer(StatusCode::OK, &batch::merge(op, v, held))
        }
        _ => answer,
    }
}

/// A data request that writes nothing: forwarded with its capacity counted; a query of a
/// global index without the items written too recently for it to see.
async fn read_request(
    ctx: &Ctx,
    kill: &Notify,
    parts: &hyper::http::request::Parts,
    op: &str,
    mut json: Value,
    faults: &Faults,
) -> Answer {
    let shared = &ctx.shared;
    let asked = capacity::ask(&mut json);
    let targets = match faults.partitions {
        Some(limits) => {
            let targets = read_targets(ctx, &parts.headers, op, &json).await;
            let expected = partitions::expected_reads(&targets);
            if op == "BatchGetItem" {
                let refused = shared.ledger.refused_items(&limits, &expected, false);
                if !refused.is_empty() {
                    return batch_in_part(ctx, kill, parts, op, &json, &refused, faults).await;
                }
            } else if let Some(r) = shared.ledger.refusal(&limits, &expected, false) {
                return refused(shared, &r, op == "TransactGetItems", targets.len());
            }
            Some((limits, targets))
        }
        None => None,
    };
    // A lagging global index: its schema known before the query is sent, and a count
    // asked for as the items it counts, so that it lags as they do.
    let table = json["TableName"].as_str().unwrap_or_default().to_string();
    let index = json["IndexName"].as_str().map(str::to_string);
    let lagging = match &index {
        Some(index) if faults.index_lag_ms > 0 && op == "Query" => {
            if shared.schemas.get(&table).is_none() {
                learn_schema(ctx, &parts.headers, &table).await;
            }
            shared.schemas.is_global_index(&table, index)
        }
        _ => false,
    };
    let counted = lagging && json["Select"] == "COUNT";
    if counted {
        json["Select"] = json!("ALL_PROJECTED_ATTRIBUTES");
    }
    // A projection without the keys: they are asked for too (an item is known by them),
    // and taken out again before the answer goes.
    let added = match (lagging, shared.schemas.schema(&table)) {
        (true, Some(schema)) => {
            let index_keys = schema
                .indexes
                .iter()
                .find(|i| Some(&i.name) == index.as_ref())
                .map(|i| i.keys.clone())
                .unwrap_or_default();
            lag::project_keys(&mut json, schema.keys.iter().chain(&index_keys))
        }
        _ => Vec::new(),
    };
    // A page cut shorter than the reader asked for (or than 1 MB would be).
    let mut cut = false;
    if op == "Query" && faults.query_page_items > 0 {
        let wanted = json["Limit"].as_u64();
        let limit = wanted.map_or(faults.query_page_items as u64, |l| {
            l.min(u64::from(faults.query_page_items))
        });
        cut = wanted.is_none_or(|l| l > limit);
        json["Limit"] = json!(limit);
    }
    let mut answer = match forward_json(ctx, kill, &parts.headers, &parts.uri, &json).await {
        Ok(a) => a,
        Err(a) => {
            shared.capacity.record_call(op);
            return a;
        }
    };
    if cut && answer.get("LastEvaluatedKey").is_some() {
        shared.counters.add(Kind::PagedQuery);
    }
    let by_table = shared.capacity.record(op, &json, &mut answer, asked, None);
    if let Some((limits, targets)) = &targets {
        let charges = partitions::read_charges(targets, &by_table);
        shared.ledger.spend(limits, &charges, false);
    }
    if let (true, Some(index), Some(schema)) = (lagging, &index, shared.schemas.schema(&table)) {
        let index_keys = schema
            .indexes
            .iter()
            .find(|i| i.name == *index)
            .map(|i| i.keys.clone())
            .unwrap_or_default();
        let upstream_count = answer["Count"].clone();
        let served = shared.recent.serve(
            &lag::IndexQuery {
                table: &table,
                keys: &schema.keys,
                index_keys: &index_keys,
                request: &json,
                lag: Duration::from_millis(faults.index_lag_ms),
                matching: &faults.index_lag_matching,
            },
            &mut answer,
        );
        for (kind, n) in [
            (Kind::IndexLag, served.hidden),
            (Kind::IndexOldVersion, served.old_versions),
            (Kind::IndexGhost, served.ghosts),
        ] {
            for _ in 0..n {
                shared.counters.add(kind);
            }
        }
        if counted && answer["Count"] != upstream_count {
            shared.counters.add(Kind::CountLag);
        }
    }
    if counted {
        if let Some(m) = answer.as_object_mut() {
            m.remove("Items");
        }
    }
    lag::unproject(&mut answer, &added);
    json_answer(StatusCode::OK, &answer)
}

/// The partitions a read reads (the schemas of its tables learnt first).
async fn read_targets(
    ctx: &Ctx,
    headers: &HeaderMap,
    op: &str,
    json: &Value,
) -> Vec<partitions::Read> {
    let shared = &ctx.shared;
    let targets = partitions::read_targets(op, json, |t| shared.schemas.schema(t));
    let mut learnt = false;
    for r in &targets {
        if shared.schemas.schema(&r.table).is_none() {
            learn_schema(ctx, headers, &r.table).await;
            learnt = true;
        }
    }
    if learnt {
        partitions::read_targets(op, json, |t| shared.schemas.schema(t))
    } else {
        targets
    }
}

/// An answer and its body as text (the answer is rebuilt with it).
async fn with_body(a: Answer) -> (Answer, String) {
    let (head, body) = a.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (hyper::Response::from_parts(head, Full::new(bytes)), text)
}

/// A batch of which the entries at `refused` (in request order) are throttled: the rest is
/// made, and the refused come back unprocessed, as AWS does; all of them refused, the call
/// is.
async fn batch_in_part(
    ctx: &Ctx,
    kill: &Notify,
    parts: &hyper::http::request::Parts,
    op: &str,
    json: &Value,
    refused: &[usize],
    faults: &Faults,
) -> Answer {
    let shared = &ctx.shared;
    shared.counters.add(Kind::PartitionThrottle);
    let mut n = 0;
    let hold = |_: &str, _: usize| {
        n += 1;
        refused.contains(&(n - 1))
    };
    let Some(split) = batch::split(op, json, hold) else {
        return errors::throughput_exceeded();
    };
    let answer = if op == "BatchWriteItem" {
        let writes = items::writes(op, &split.forwarded);
        Box::pin(write_request(
            ctx,
            kill,
            parts,
            op,
            split.forwarded.clone(),
            &writes,
            faults,
        ))
        .await
    } else {
        Box::pin(read_request(
            ctx,
            kill,
            parts,
            op,
            split.forwarded.clone(),
            faults,
        ))
        .await
    };
    if answer.status() != StatusCode::OK {
        return answer;
    }
    let (_, body) = with_body(answer).await;
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    json_answer(StatusCode::OK, &batch::merge(op, v, split.held))
}

/// The answer to a request a limit refused (counted by its kind).
fn refused(shared: &Shared, r: &Refusal, transaction: bool, items: usize) -> Answer {
    shared.counters.add(if r.reason.contains("KeyRange") {
        Kind::PartitionThrottle
    } else {
        Kind::QuotaThrottle
    });
    if transaction {
        cancelled_at(items, &[r.item], "ThrottlingError")
    } else {
        errors::throttled_by(&r.reason, &r.resource)
    }
}

/// The items `writes` touch, as stored now, by identity: read straight from DynamoDB Local
/// (neither faulted nor counted). `wanted` chooses which writes need theirs.
async fn stored_items(
    ctx: &Ctx,
    headers: &HeaderMap,
    writes: &[items::Write],
    wanted: impl Fn(&items::Write) -> bool,
) -> HashMap<String, Item> {
    let shared = &ctx.shared;
    let mut keys: Vec<(String, Value)> = Vec::new();
    for w in writes.iter().filter(|w| wanted(w)) {
        let Some(names) = shared.schemas.get(&w.table) else {
            continue;
        };
        let source = match &w.target {
            items::Target::Key(v) | items::Target::Item(v) => v,
        };
        let key: serde_json::Map<String, Value> = names
            .iter()
            .filter_map(|n| Some((n.clone(), source.get(n)?.clone())))
            .collect();
        if !keys
            .iter()
            .any(|(t, k)| *t == w.table && *k == Value::Object(key.clone()))
        {
            keys.push((w.table.clone(), Value::Object(key)));
        }
    }
    let mut found = HashMap::new();
    for chunk in keys.chunks(100) {
        let mut request = serde_json::Map::new();
        for (table, key) in chunk {
            let entry = request
                .entry(table.clone())
                .or_insert_with(|| json!({"Keys": [], "ConsistentRead": true}));
            if let Some(k) = entry["Keys"].as_array_mut() {
                k.push(key.clone());
            }
        }
        let body = json!({ "RequestItems": request });
        let Some(answer) = internal(ctx, headers, "BatchGetItem", &body).await else {
            continue;
        };
        for (table, items) in answer["Responses"].as_object().into_iter().flatten() {
            let Some(names) = shared.schemas.get(table) else {
                continue;
            };
            for item in items.as_array().into_iter().flatten() {
                if let Some(o) = item.as_object() {
                    found.insert(items::identity_of(table, item, &names), o.clone());
                }
            }
        }
    }
    found
}

/// What a write spends, by partition, given the items before it and after it.
fn write_charges(
    shared: &Shared,
    writes: &[items::Write],
    before: &HashMap<String, Item>,
    after: impl Fn(&items::Write, Option<&Item>) -> Option<Item>,
    times: f64,
) -> Vec<Charge> {
    let mut out = Vec::new();
    for (i, w) in writes.iter().enumerate() {
        let Some(schema) = shared.schemas.schema(&w.table) else {
            continue;
        };
        let old = before.get(&items::identity(w, &schema.keys));
        let new = after(w, old);
        out.extend(partitions::write_charges(
            &schema,
            w,
            i,
            old,
            new.as_ref(),
            times,
        ));
    }
    out
}

#[allow(clippy::too_many_arguments)]
async fn write_request(
    ctx: &Ctx,
    kill: &Notify,
    parts: &hyper::http::request::Parts,
    op: &str,
    mut json: Value,
    writes: &[items::Write],
    faults: &Faults,
) -> Answer {
    let shared = &ctx.shared;
    let transaction = op == "TransactWriteItems";
    if transaction {
        match shared.tokens.check(&json) {
            TokenSeen::Replay => {
                shared.counters.add(Kind::TokenReplay);
                return json_answer(StatusCode::OK, &json!({}));
            }
            TokenSeen::Mismatch => return errors::idempotent_parameter_mismatch(),
            TokenSeen::InProgress => {
                shared.counters.add(Kind::TokenInProgress);
                return errors::transaction_in_progress();
            }
            TokenSeen::New => {}
        }
    }
    let mut ids = Vec::with_capacity(writes.len());
    for w in writes {
        let names = match shared.schemas.get(&w.table) {
            Some(n) => n,
            None => {
                learn_schema(ctx, &parts.headers, &w.table).await;
                match shared.schemas.get(&w.table) {
                    Some(n) => n,
                    // No such table: DynamoDB Local gives the right error.
                    None => {
                        let body = Bytes::from(json.to_string());
                        return forward_or_reset(ctx, kill, &parts.headers, &parts.uri, body).await;
                    }
                }
            }
        };
        ids.push(items::identity(w, &names));
    }
    if transaction && shared.roll(faults.conflict_rate) {
        shared.counters.add(Kind::RandomConflict);
        if !faults.tear_cancelled_matching.is_empty()
            && json.to_string().contains(&faults.tear_cancelled_matching)
        {
            tear(ctx, &parts.headers, &parts.uri, &json).await;
        }
        let at = shared.between(0, ids.len() as u64 - 1) as usize;
        return cancelled_at(ids.len(), &[at], "TransactionConflict");
    }
    let owner = ctx.next_id.fetch_add(1, Ordering::Relaxed);
    let held = if faults.conflicts && transaction {
        match shared.holds.hold(&ids, owner) {
            Ok(h) => Some(h),
            Err(busy) => {
                shared.counters.add(Kind::Conflict);
                return cancelled_at(ids.len(), &busy, "TransactionConflict");
            }
        }
    } else {
        if faults.conflicts && !shared.holds.busy(&ids).is_empty() {
            shared.counters.add(Kind::Conflict);
            return errors::transaction_conflict();
        }
        None
    };
    // Batch writes are not throttled as a whole: DynamoDB hands them back unprocessed.
    if op != "BatchWriteItem" {
        let over = shared.limiter.admit(&ids, faults.item_writes_per_s);
        if !over.is_empty() {
            shared.counters.add(Kind::HotItem);
            return if transaction {
                cancelled_at(ids.len(), &over, "ThrottlingError")
            } else {
                errors::throughput_exceeded()
            };
        }
    }
    // With AWS's partitions: the items as they are, and the partitions the write is
    // expected to land on, each checked against its limits.
    let times = if transaction { 2.0 } else { 1.0 };
    let before = match faults.partitions {
        Some(limits) => {
            let before = stored_items(ctx, &parts.headers, writes, |w| {
                shared
                    .schemas
                    .get(&w.table)
                    .is_none_or(|keys| !partitions::new_item(w, &keys))
            })
            .await;
            let expected =
                write_charges(shared, writes, &before, partitions::expected_after, times);
            if op == "BatchWriteItem" {
                // AWS hands the throttled entries back unprocessed and writes the rest.
                let refused = shared.ledger.refused_items(&limits, &expected, true);
                if !refused.is_empty() {
                    return batch_in_part(ctx, kill, parts, op, &json, &refused, faults).await;
                }
            } else if let Some(r) = shared.ledger.refusal(&limits, &expected, true) {
                return refused(shared, &r, transaction, ids.len());
            }
            Some((limits, before))
        }
        None => None,
    };
    let Some(running) = (if transaction {
        shared.tokens.start(&json)
    } else {
        Some(shared.tokens.none())
    }) else {
        shared.counters.add(Kind::TokenInProgress);
        return errors::transaction_in_progress();
    };
    shared
        .counters
        .writes
        .fetch_add(ids.len() as u64, Ordering::Relaxed);
    if held.is_some() {
        let (lo, hi) = faults.hold_ms;
        let ms = shared.between(lo, hi);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
    let asked = capacity::ask(&mut json);
    let matching = faults.late_write_matching.is_empty()
        || json.to_string().contains(&faults.late_write_matching);
    if matching && shared.roll(faults.late_write_rate) {
        // Answered now as failed, applied later: the client gives up (or retries) first.
        shared.counters.add(Kind::LateWrite);
        drop(held);
        running.keep();
        let charges = before.map(|(limits, before)| {
            let expected =
                write_charges(shared, writes, &before, partitions::expected_after, times);
            (limits, expected)
        });
        late_write(ctx, parts, op, json, ids, charges, faults);
        return errors::internal_error();
    }
    let result = forward_json(ctx, kill, &parts.headers, &parts.uri, &json).await;
    drop(held);
    let mut answer = match result {
        Ok(a) => a,
        Err(a) => {
            shared.capacity.record_call(op);
            // AWS bills a write refused by its condition: the item's size, on its partition.
            if let (Some((limits, before)), false) = (&before, transaction) {
                let (a, body) = with_body(a).await;
                if body.contains("ConditionalCheckFailedException") {
                    let charges = write_charges(shared, writes, before, |_, old| old.cloned(), 1.0);
                    shared.ledger.spend(limits, &charges, true);
                }
                return a;
            }
            return a;
        }
    };
    if transaction {
        shared.tokens.succeeded(&json);
    }
    drop(running);
    shared
        .recent
        .note(&ids, Duration::from_millis(faults.index_lag_ms));
    let billed = match before {
        Some((limits, before)) => {
            let after = stored_items(ctx, &parts.headers, writes, |w| w.kind == "Update").await;
            let charges = write_charges(
                shared,
                writes,
                &before,
                |w, old| match w.kind {
                    "Update" => shared
                        .schemas
                        .get(&w.table)
                        .and_then(|keys| after.get(&items::identity(w, &keys)).cloned()),
                    _ => partitions::expected_after(w, old),
                },
                times,
            );
            shared.ledger.spend(&limits, &charges, true);
            Some(charges.iter().map(|c| c.units).sum())
        }
        None => None,
    };
    shared
        .capacity
        .record(op, &json, &mut answer, asked, billed);
    if shared.roll(faults.error_after_commit_rate) {
        shared.counters.add(Kind::ErrorAfterCommit);
        return errors::internal_error();
    }
    if shared.roll(faults.lost_answer_rate) {
        shared.counters.add(Kind::LostAnswer);
        if faults.lost_answer_hang_ms > 0 {
            tokio::time::sleep(Duration::from_millis(faults.lost_answer_hang_ms)).await;
        }
        return reset(kill).await;
    }
    json_answer(StatusCode::OK, &answer)
}

/// Applies a write `late_write_ms` from now, in the background, as a slow request that
/// reaches DynamoDB after its client gave up. A transaction's token counts as running
/// until then.
#[allow(clippy::too_many_arguments)]
fn late_write(
    ctx: &Ctx,
    parts: &hyper::http::request::Parts,
    op: &str,
    json: Value,
    ids: Vec<String>,
    charges: Option<(crate::Limits, Vec<Charge>)>,
    faults: &Faults,
) {
    let Some(me) = ctx.me.upgrade() else {
        return;
    };
    let headers = parts.headers.clone();
    let uri = parts.uri.clone();
    let op = op.to_string();
    let delay = faults.late_write_ms;
    let lag = Duration::from_millis(faults.index_lag_ms);
    let token = json["ClientRequestToken"].as_str().map(str::to_string);
    me.shared
        .counters
        .late_pending
        .fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let body = Bytes::from(json.to_string());
        let answer = forward(&me, &headers, &uri, body).await;
        if let Some(a) = answer.filter(|a| a.status() == StatusCode::OK) {
            if op == "TransactWriteItems" {
                me.shared.tokens.succeeded(&json);
            }
            me.shared.recent.note(&ids, lag);
            let Ok(b) = a.into_body().collect().await;
            let mut v: Value = serde_json::from_slice(&b.to_bytes()).unwrap_or_default();
            // Billed as expected when it was sent (what it found is not read again).
            let billed = charges.as_ref().map(|(limits, c)| {
                me.shared.ledger.spend(limits, c, true);
                c.iter().map(|c| c.units).sum()
            });
            me.shared.capacity.record(&op, &json, &mut v, true, billed);
        }
        if let Some(t) = &token {
            me.shared.tokens.release_running(t);
        }
        me.shared
            .counters
            .late_pending
            .fetch_sub(1, Ordering::Relaxed);
    });
}

fn cancelled_at(n: usize, at: &[usize], code: &str) -> Answer {
    let codes: Vec<&str> = (0..n)
        .map(|i| if at.contains(&i) { code } else { "None" })
        .collect();
    errors::cancelled(&codes)
}

/// A request of the proxy's own to DynamoDB Local (neither faulted nor counted), with the
/// credentials of the request at hand (DynamoDB Local keeps one database per access key and
/// region); its answer when 200.
async fn internal(ctx: &Ctx, headers: &HeaderMap, op: &str, body: &Value) -> Option<Value> {
    internal_to(ctx, headers, &format!("DynamoDB_20120810.{op}"), body).await
}

/// The sequence numbers of the first `n` records of virtual shard `v` after `seq`, read
/// straight from DynamoDB Local.
async fn records_after(
    ctx: &Ctx,
    headers: &HeaderMap,
    arn: &str,
    v: &streams::Virtual,
    seq: &str,
    n: u32,
) -> Vec<String> {
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let asked = json!({"StreamArn": arn, "ShardId": v.real,
                       "ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": seq});
    let target = "DynamoDBStreams_20120810.";
    let Some(it) = internal_to(ctx, headers, &format!("{target}GetShardIterator"), &asked).await
    else {
        return out;
    };
    let mut iterator = it["ShardIterator"].as_str().map(str::to_string);
    while let Some(i) = iterator.take() {
        let body = json!({"ShardIterator": i, "Limit": 100});
        let Some(page) = internal_to(ctx, headers, &format!("{target}GetRecords"), &body).await
        else {
            break;
        };
        let records = page["Records"].as_array().cloned().unwrap_or_default();
        for r in records.iter().filter(|r| streams::belongs(r, &v.path)) {
            if let Some(s) = r["dynamodb"]["SequenceNumber"].as_str() {
                out.push(s.to_string());
                if out.len() >= n as usize {
                    return out;
                }
            }
        }
        if !records.is_empty() {
            iterator = page["NextShardIterator"].as_str().map(str::to_string);
        }
    }
    out
}

/// A request of the proxy's own to DynamoDB Local (`target`: the `X-Amz-Target`), signed
/// as the client's was.
async fn internal_to(ctx: &Ctx, headers: &HeaderMap, target: &str, body: &Value) -> Option<Value> {
    let mut h = HeaderMap::new();
    for name in ["authorization", "x-amz-date", "x-amz-security-token"] {
        if let Some(v) = headers.get(name) {
            h.insert(name, v.clone());
        }
    }
    h.insert("x-amz-target", HeaderValue::from_str(target).ok()?);
    h.insert(
        "content-type",
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    let uri: hyper::Uri = "/".parse().unwrap_or_default();
    let answer = forward(ctx, &h, &uri, Bytes::from(body.to_string())).await?;
    if answer.status() != StatusCode::OK {
        return None;
    }
    let b = answer.into_body().collect().await.ok()?;
    serde_json::from_slice::<Value>(&b.to_bytes()).ok()
}

/// Asks DynamoDB for a table's key schema and indexes.
async fn learn_schema(ctx: &Ctx, headers: &HeaderMap, table: &str) {
    if let Some(v) = internal(
        ctx,
        headers,
        "DescribeTable",
        &json!({ "TableName": table }),
    )
    .await
    {
        ctx.shared.schemas.learn(table, &v);
    }
}

async fn forward(ctx: &Ctx, headers: &HeaderMap, uri: &hyper::Uri, body: Bytes) -> Option<Answer> {
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut req = Request::builder()
        .method("POST")
        .uri(format!("{}{path}", ctx.upstream));
    let key = ctx.access_key.lock().ok().and_then(|k| k.clone());
    for (name, value) in headers {
        if name == "authorization" {
            if let Some(k) = &key {
                req = req.header(name, signed_as(value.to_str().unwrap_or_default(), k));
                continue;
            }
        }
        if name != "host" && name != "content-length" {
            req = req.header(name, value);
        }
    }
    let req = req.body(Full::new(body)).ok()?;
    let res = ctx.client.request(req).await.ok()?;
    let (parts, body) = res.into_parts();
    let bytes = body.collect().await.ok()?.to_bytes();
    Some(hyper::Response::from_parts(parts, Full::new(bytes)))
}

/// An `Authorization` header with its credential's access key replaced by `key`.
fn signed_as(authorization: &str, key: &str) -> String {
    match authorization.split_once("Credential=") {
        Some((head, rest)) => {
            let scope = rest.split_once('/').map_or("", |(_, s)| s);
            format!("{head}Credential={key}/{scope}")
        }
        None => authorization.to_string(),
    }
}

async fn forward_or_reset(
    ctx: &Ctx,
    kill: &Notify,
    headers: &HeaderMap,
    uri: &hyper::Uri,
    body: Bytes,
) -> Answer {
    match forward(ctx, headers, uri, body).await {
        Some(a) => a,
        None => reset(kill).await,
    }
}

/// Applies the last item of a transaction alone, as the single write it would be (a broken
/// database's torn transaction, see `Faults::tear_cancelled_matching`).
async fn tear(ctx: &Ctx, headers: &HeaderMap, uri: &hyper::Uri, json: &Value) {
    let Some(last) = json["TransactItems"].as_array().and_then(|a| a.last()) else {
        return;
    };
    let Some((op, mut body)) = ["Put", "Update", "Delete"]
        .into_iter()
        .find_map(|k| last.get(k).map(|v| (k, v.clone())))
    else {
        return;
    };
    if let Some(o) = body.as_object_mut() {
        o.remove("ReturnValuesOnConditionCheckFailure");
    }
    let mut headers = headers.clone();
    if let Ok(target) = format!("DynamoDB_20120810.{op}Item").parse() {
        headers.insert("x-amz-target", target);
    }
    if forward(ctx, &headers, uri, Bytes::from(body.to_string()))
        .await
        .is_some_and(|a| a.status() == StatusCode::OK)
    {
        ctx.shared.counters.add(Kind::Torn);
    }
}

/// Forwards a request with a rewritten body and returns the answer's JSON (when 200).
async fn forward_json(
    ctx: &Ctx,
    kill: &Notify,
    headers: &HeaderMap,
    uri: &hyper::Uri,
    body: &Value,
) -> Result<Value, Answer> {
    let answer = match forward(ctx, headers, uri, Bytes::from(body.to_string())).await {
        Some(a) => a,
        None => return Err(reset(kill).await),
    };
    if answer.status() != StatusCode::OK {
        return Err(answer);
    }
    let bytes = match answer.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(reset(kill).await),
    };
    serde_json::from_slice(&bytes).map_err(|_| errors::internal_error())
}

async fn stream_request(
    ctx: &Ctx,
    kill: &Notify,
    headers: &HeaderMap,
    uri: &hyper::Uri,
    op: &str,
    mut body: Value,
    faults: &Faults,
) -> Answer {
    let shared = &ctx.shared;
    match op {
        "DescribeStream" => {
            shared
                .counters
                .describe_stream
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if shared.roll(faults.stream_limit_rate) {
                shared.counters.add(Kind::StreamLimit);
                return errors::limit_exceeded();
            }
            if let Some(start) = body["ExclusiveStartShardId"].as_str() {
                body["ExclusiveStartShardId"] = json!(streams::parse_shard(start).real);
            }
            match forward_json(ctx, kill, headers, uri, &body).await {
                Ok(answer) => json_answer(StatusCode::OK, &shared.streams.describe(answer)),
                Err(a) => a,
            }
        }
        "GetShardIterator" => {
            let asked = body["ShardId"].as_str().unwrap_or_default().to_string();
            let v = streams::parse_shard(&asked);
            let kind = body["ShardIteratorType"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let at_position = matches!(
                kind.as_str(),
                "AFTER_SEQUENCE_NUMBER" | "AT_SEQUENCE_NUMBER"
            );
            if at_position && shared.roll(faults.trimmed_rate) {
                // As AWS trims records older than a day: what the reader asked for is gone,
                // and the shard's trim horizon starts after it, and after the next
                // `trim_loses` records too, read or not.
                if let Some(seq) = body["SequenceNumber"].as_str() {
                    let arn = body["StreamArn"].as_str().unwrap_or_default();
                    let lost = records_after(ctx, headers, arn, &v, seq, faults.trim_loses).await;
                    for _ in &lost {
                        shared.counters.add(Kind::TrimmedLost);
                    }
                    shared
                        .streams
                        .trim(&asked, lost.last().map_or(seq, String::as_str));
                }
                shared.counters.add(Kind::Trimmed);
                return errors::trimmed_data();
            }
            let mut last = match kind.as_str() {
                "AFTER_SEQUENCE_NUMBER" => body["SequenceNumber"].as_str().map(str::to_string),
                _ => None,
            };
            body["ShardId"] = json!(v.real);
            // A child starts after its parent's split point; a closed shard read from its
            // latest position has nothing more.
            let parent_split = v.parent().and_then(|p| shared.streams.split_point(&p));
            let horizon = match (parent_split, shared.streams.trimmed(&asked)) {
                (Some(a), Some(b)) => Some(if streams::seq_cmp(&a, &b).is_gt() {
                    a
                } else {
                    b
                }),
                (a, b) => a.or(b),
            };
            match (horizon, kind.as_str()) {
                (Some(at), "TRIM_HORIZON") => {
                    body["ShardIteratorType"] = json!("AFTER_SEQUENCE_NUMBER");
                    body["SequenceNumber"] = json!(at);
                    last = Some(at);
                }
                _ if kind == "LATEST" => {
                    if let Some(at) = shared.streams.split_point(&asked) {
                        last = Some(at);
                    }
                }
                _ => {}
            }
            match forward_json(ctx, kill, headers, uri, &body).await {
                Ok(answer) => {
                    let real = answer["ShardIterator"].as_str().unwrap_or_default();
                    json_answer(
                        StatusCode::OK,
                        &json!({"ShardIterator": streams::wrap(&asked, last.as_deref(), real)}),
                    )
                }
                Err(a) => a,
            }
        }
        "GetRecords" => {
            let it = body["ShardIterator"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let Some(w) = streams::unwrap(&it) else {
                return match forward_json(ctx, kill, headers, uri, &body).await {
                    Ok(a) => json_answer(StatusCode::OK, &a),
                    Err(a) => a,
                };
            };
            if shared.roll(faults.stream_limit_rate) {
                shared.counters.add(Kind::StreamLimit);
                return errors::limit_exceeded();
            }
            if shared.roll(faults.expired_iterator_rate) {
                shared.counters.add(Kind::ExpiredIterator);
                return errors::expired_iterator();
            }
            if shared.roll(faults.empty_page_rate) {
                shared.counters.add(Kind::EmptyPage);
                return json_answer(
                    StatusCode::OK,
                    &json!({"Records": [], "NextShardIterator": it}),
                );
            }
            body["ShardIterator"] = json!(w.real);
            let page = match forward_json(ctx, kill, headers, uri, &body).await {
                Ok(p) => p,
                Err(a) => return a,
            };
            let (records, next) = shared.streams.page(&w, &page);
            if shared
                .streams
                .observe(&w.shard, &records, faults.split_after_records)
            {
                shared.counters.add(Kind::ShardSplit);
            }
            let mut answer = json!({ "Records": records });
            if let Some(n) = next {
                answer["NextShardIterator"] = json!(n);
            }
            json_answer(StatusCode::OK, &answer)
        }
        _ => match forward_json(ctx, kill, headers, uri, &body).await {
            Ok(a) => json_answer(StatusCode::OK, &a),
            Err(a) => a,
        },
    }
}
