//! What the console counts for Prometheus (docs/operations.md, "Metrics"): one function per
//! thing that happens, called where it happens; every name and label is here, so the
//! alerting rules in `deploy/prometheus/` and the docs have one place to agree with.
//!
//! Names follow Prometheus's conventions: the `opsconsole_` prefix, base units (seconds),
//! `_total` on counters, and only labels of a few known values (a route template, never a
//! path; a scope or an operation, never a key or a user).

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Latency buckets, in seconds: 5 ms to 30 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The recorder of this process, installed once. Every console of a process (tests run
/// several) records into it: counters are per process, as Prometheus scrapes them.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .map(|b| b.build_recorder())
                .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder());
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (none is, in the product).
            let _ = metrics::set_global_recorder(recorder);
            describe();
            gauge!("opsconsole_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            // From 0 at start: an alert on its increase sees the first one (a console that
            // restarts after a day away finds its position trimmed at once).
            counter!("opsconsole_inbox_stream_trimmed_total").absolute(0);
            handle
        })
        .clone()
}

/// The text Prometheus scrapes.
pub fn render() -> String {
    let h = handle();
    h.run_upkeep();
    h.render()
}

fn describe() {
    describe_gauge!(
        "opsconsole_build_info",
        "The running version (the value is always 1)."
    );
    describe_counter!(
        "opsconsole_http_requests_total",
        "HTTP requests answered, by route template, method and status."
    );
    describe_histogram!(
        "opsconsole_http_request_duration_seconds",
        "Time to answer an HTTP request, by route template and method."
    );
    describe_counter!("opsconsole_idempotency_outcomes_total", "Idempotency-keyed requests by scope and outcome: fresh, replayed, in_progress, mismatch, stale_takeover, retry, failed, client_error, lost_ownership.");
    describe_areas();
    describe_counter!(
        "opsconsole_lookups_total",
        "Searches by a typed phone number, email or id (not a page's link), by result: counted, audited (the one that named its person in an audit record), refused (past the person's limit)."
    );
    describe_kill_switches();
    describe_receiver();
}

/// The receiver's health, as the alert check last read it.
fn describe_receiver() {
    describe_gauge!(
        "opsconsole_receiver_attempts",
        "Delivery attempts to the receiver over the last 15 minutes, every console's, as last counted from DynamoDB."
    );
    describe_gauge!(
        "opsconsole_receiver_delivered",
        "Deliveries the receiver took over the last 15 minutes, every console's, as last counted from DynamoDB."
    );
    describe_gauge!(
        "opsconsole_receiver_queue_depth",
        "Side effects waiting in a receiver's queue (its range of the due group), as the alert check last counted them."
    );
    describe_counter!(
        "opsconsole_receiver_back_offs_total",
        "429 answers with Retry-After this console stored as a pause of every console's sends to the receiver."
    );
    describe_counter!(
        "opsconsole_receiver_slot_waits_total",
        "Times this console found every slot of the receiver's concurrency limit (every console's requests at once) held."
    );
    describe_counter!(
        "opsconsole_receiver_rate_waits_total",
        "Times this console waited for the next second because the receiver's rate (every console's sends together) was spent."
    );
    describe_gauge!(
        "opsconsole_receiver_breaker_open",
        "1 while the receiver's breaker is open (deliveries park), as the alert check last read it."
    );
    describe_gauge!(
        "opsconsole_receiver_parked",
        "Side effects in the outbox's due group while the breaker is open (0 while closed), as the alert check last counted them."
    );
    describe_counter!(
        "opsconsole_receiver_resends_total",
        "Side effects this console queued again for a resend job (docs/events.md, \"Resend a time window\")."
    );
    describe_counter!(
        "opsconsole_receiver_breaker_changes_total",
        "Openings of the receiver's breaker after failures and closings after a probe that this console made (change: open, close); changes by hand are in the audit."
    );
}

/// The areas' own metrics.
fn describe_areas() {
    describe_counter!(
        "opsconsole_events_received_total",
        "Helpdesk events received (valid ones)."
    );
    describe_counter!(
        "opsconsole_events_duplicates_total",
        "Helpdesk events that were duplicates of one already processed."
    );
    describe_counter!(
        "opsconsole_events_decided_total",
        "Helpdesk events decided and recorded, by mode."
    );
    describe_gauge!(
        "opsconsole_outbox_actions",
        "Side effects in the outbox by group (due, held, dead), as last counted."
    );
    describe_counter!(
        "opsconsole_outbox_deliveries_total",
        "Delivery attempts of side effects by result: delivered, retry, dead."
    );
    describe_counter!(
        "opsconsole_outbox_dead_letters_total",
        "Side effects that became dead letters."
    );
    describe_histogram!(
        "opsconsole_outbox_delivery_duration_seconds",
        "Time a delivery attempt took, until the receiver answered or the attempt failed."
    );
    describe_counter!(
        "opsconsole_measurements_total",
        "Measurements by outcome: accepted, override, duplicate, conflict, out_of_order, invalid."
    );
    describe_counter!(
        "opsconsole_inbox_publishes_total",
        "Inbox messages published (new publications)."
    );
    describe_counter!(
        "opsconsole_inbox_reads_total",
        "Inbox messages marked read (first reads)."
    );
    describe_counter!("opsconsole_dynamodb_requests_total", "DynamoDB requests (each attempt) by operation and result: ok, condition_failed, conflict, throttled, error.");
    describe_counter!(
        "opsconsole_http_deadline_passed_total",
        "Requests answered 503 at their deadline (operations.request_deadline_ms), by route template."
    );
    describe_counter!(
        "opsconsole_dynamodb_retries_total",
        "DynamoDB requests sent again after a retryable failure, by operation."
    );
    describe_gauge!(
        "opsconsole_inbox_stream_lag_seconds",
        "Age of the newest inbox stream record the consumer handled when it handled it."
    );
    describe_gauge!(
        "opsconsole_inbox_stream_behind_seconds",
        "Seconds since this console last read every inbox stream shard it holds to its newest record; grows while nothing is read."
    );
    describe_counter!(
        "opsconsole_inbox_stream_trimmed_total",
        "Saved inbox stream positions found trimmed (older than the stream keeps): removals since may be uncounted."
    );
    describe_counter!(
        "opsconsole_alerts_announced_total",
        "Alert messages this console sent, by alert and state (firing, resolved)."
    );
}

fn describe_kill_switches() {
    describe_counter!(
        "opsconsole_kill_switch_reverts_total",
        "Timed kill-switch changes this console ended (the switch went back towards safety), by switch."
    );
    describe_gauge!(
        "opsconsole_kill_switch_on",
        "Each kill switch's position as stored (1 on, 0 off), read every 5 s by every console."
    );
    describe_gauge!(
        "opsconsole_kill_switch_changed_timestamp_seconds",
        "When each kill switch was last changed (Unix seconds; 0: never): the time in its state is time() minus this."
    );
    describe_counter!(
        "opsconsole_kill_switch_trips_total",
        "Kill switches this console moved to their safe position without a person, by switch and by what moved it (rule, trigger)."
    );
    describe_counter!(
        "opsconsole_kill_switch_approvals_total",
        "Four-eyes steps on this console: requested, approved, rejected, and emergency (a change that skipped the approval)."
    );
}

pub fn http_request(route: &str, method: &str, status: u16, took: Duration) {
    let (route, method) = (route.to_string(), method.to_string());
    counter!("opsconsole_http_requests_total", "route" => route.clone(), "method" => method.clone(), "status" => status.to_string()).increment(1);
    histogram!("opsconsole_http_request_duration_seconds", "route" => route, "method" => method)
        .record(took.as_secs_f64());
}

/// The engine's own counter names, as Prometheus outcomes (`requests` is their sum).
pub fn idempotency_outcome(scope: &str, engine_counter: &str) {
    let outcome = match engine_counter {
        "fresh" => "fresh",
        "replayed" => "replayed",
        "in_progress" => "in_progress",
        "mismatches" => "mismatch",
        "takeovers" => "stale_takeover",
        "retries" => "retry",
        "failures" => "failed",
        "client_errors" => "client_error",
        "lost_ownership" => "lost_ownership",
        _ => return,
    };
    counter!("opsconsole_idempotency_outcomes_total", "scope" => scope.to_string(), "outcome" => outcome).increment(1);
}

/// A search by a typed value: `counted`, `audited` or `refused` (never who).
pub fn lookup(result: &'static str) {
    counter!("opsconsole_lookups_total", "result" => result).increment(1);
}

pub fn event_received() {
    counter!("opsconsole_events_received_total").increment(1);
}

pub fn event_duplicate() {
    counter!("opsconsole_events_duplicates_total").increment(1);
}

pub fn event_decided(mode: &str) {
    counter!("opsconsole_events_decided_total", "mode" => mode.to_string()).increment(1);
}

pub fn outbox_actions(group: &'static str, n: u64) {
    gauge!("opsconsole_outbox_actions", "group" => group).set(n as f64);
}

/// The receiver's attempts and deliveries of the alert window (every console's).
pub fn receiver_attempts(attempts: u64, delivered: u64) {
    gauge!("opsconsole_receiver_attempts").set(attempts as f64);
    gauge!("opsconsole_receiver_delivered").set(delivered as f64);
}

/// A receiver's breaker, its queue depth and the side effects its breaker parks (all of
/// its queue while open), as the alert check read them (`receiver`: its name, `default` or
/// one an admin gave: at most 8, nothing personal).
/// A depth not counted (DynamoDB busy) leaves both counts' series as they were.
pub fn receiver_breaker_state(receiver: &str, open: bool, queue_depth: Option<u64>) {
    let r = receiver.to_string();
    gauge!("opsconsole_receiver_breaker_open", "receiver" => r.clone())
        .set(f64::from(u8::from(open)));
    let Some(queue_depth) = queue_depth else {
        return;
    };
    gauge!("opsconsole_receiver_queue_depth", "receiver" => r.clone()).set(queue_depth as f64);
    let parked = if open { queue_depth } else { 0 };
    gauge!("opsconsole_receiver_parked", "receiver" => r).set(parked as f64);
}

/// This console opened or closed the receiver's breaker: `open`, `close`.
pub fn receiver_breaker(receiver: &str, change: &'static str) {
    let r = receiver.to_string();
    counter!("opsconsole_receiver_breaker_changes_total", "change" => change, "receiver" => r)
        .increment(1);
}

/// A resend job queued one side effect again.
pub fn receiver_resent(receiver: &str) {
    let r = receiver.to_string();
    counter!("opsconsole_receiver_resends_total", "receiver" => r).increment(1);
}

/// A send waited for the next second: the receiver's rate was spent.
pub fn receiver_rate_waited(receiver: &str) {
    let r = receiver.to_string();
    counter!("opsconsole_receiver_rate_waits_total", "receiver" => r).increment(1);
}

/// Every slot of the receiver's concurrency limit was held.
pub fn receiver_slot_waited(receiver: &str) {
    let r = receiver.to_string();
    counter!("opsconsole_receiver_slot_waits_total", "receiver" => r).increment(1);
}

/// The receiver's 429 paused every console's sends.
pub fn receiver_backed_off(receiver: &str) {
    let r = receiver.to_string();
    counter!("opsconsole_receiver_back_offs_total", "receiver" => r).increment(1);
}

/// One delivery attempt's end: `delivered`, `retry` or `dead`.
pub fn delivery(result: &'static str, took: Duration) {
    counter!("opsconsole_outbox_deliveries_total", "result" => result).increment(1);
    histogram!("opsconsole_outbox_delivery_duration_seconds").record(took.as_secs_f64());
    if result == "dead" {
        counter!("opsconsole_outbox_dead_letters_total").increment(1);
    }
}

/// `accepted`, `override`, `duplicate`, `conflict`, `out_of_order` or `invalid`.
pub fn measurement(outcome: &'static str) {
    counter!("opsconsole_measurements_total", "outcome" => outcome).increment(1);
}

pub fn inbox_published() {
    counter!("opsconsole_inbox_publishes_total").increment(1);
}

pub fn inbox_read() {
    counter!("opsconsole_inbox_reads_total").increment(1);
}

/// One DynamoDB request attempt; `result` is `ok`, `condition_failed`, `conflict`,
/// `throttled` or `error`.
pub fn dynamodb_request(operation: &str, result: &'static str) {
    counter!("opsconsole_dynamodb_requests_total", "operation" => operation.to_string(), "result" => result)
        .increment(1);
}

/// A request answered 503 at its deadline (`operations.request_deadline_ms`), by route
/// template.
pub fn request_deadline_passed(route: &str) {
    counter!("opsconsole_http_deadline_passed_total", "route" => route.to_string()).increment(1);
}

/// A DynamoDB request sent again after a retryable failure (by the SDK, or by the store
/// after a throttle or a transaction conflict).
pub fn dynamodb_retry(operation: &str) {
    counter!("opsconsole_dynamodb_retries_total", "operation" => operation.to_string())
        .increment(1);
}

pub fn inbox_stream_lag(seconds: f64) {
    gauge!("opsconsole_inbox_stream_lag_seconds").set(seconds.max(0.0));
}

pub fn inbox_stream_behind(seconds: f64) {
    gauge!("opsconsole_inbox_stream_behind_seconds").set(seconds.max(0.0));
}

pub fn inbox_stream_trimmed() {
    counter!("opsconsole_inbox_stream_trimmed_total").increment(1);
}

/// The switches as this console last read them: each one's position and last change.
pub fn kill_switches(switches: &crate::model::kill_switches::KillSwitches) {
    use crate::model::kill_switches::Switch;
    for switch in Switch::ALL {
        let st = switches.get(switch);
        gauge!("opsconsole_kill_switch_on", "switch" => switch.key())
            .set(f64::from(u8::from(st.enabled)));
        let at = st
            .changed_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map_or(0.0, |t| t.timestamp() as f64);
        gauge!("opsconsole_kill_switch_changed_timestamp_seconds", "switch" => switch.key())
            .set(at);
    }
}

/// A switch moved to its safe position without a person: by a `rule`'s trip or a `trigger` URL.
pub fn kill_switch_tripped(switch: &'static str, by: &'static str) {
    counter!("opsconsole_kill_switch_trips_total", "switch" => switch, "by" => by).increment(1);
}

/// `requested`, `approved`, `rejected` or `emergency`.
pub fn kill_switch_approval(step: &'static str) {
    counter!("opsconsole_kill_switch_approvals_total", "step" => step).increment(1);
}

pub fn kill_switch_reverted(switch: &'static str) {
    counter!("opsconsole_kill_switch_reverts_total", "switch" => switch).increment(1);
}

pub fn alert_announced(alert: &str, state: &'static str) {
    counter!("opsconsole_alerts_announced_total", "alert" => alert.to_string(), "state" => state)
        .increment(1);
}
