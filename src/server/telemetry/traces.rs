//! Traces (docs/operations.md, "Traces"): the console's `tracing` spans exported as
//! OpenTelemetry over OTLP/HTTP (protobuf), off unless the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set; sampled by
//! the standard `OTEL_TRACES_SAMPLER` settings. W3C trace context crosses every boundary:
//! a request's `traceparent` is continued, an outbox action keeps the context it was queued
//! in (whichever console delivers it), and a delivery sends its own to the receiver.
//!
//! Spans carry what the logs may carry and nothing more: routes as templates (never a path
//! with its ids or secrets), operations, table names, statuses.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceState, TracerProvider as _};
use opentelemetry_http::{HeaderExtractor, HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The standard variable naming the collector (its base URL; `/v1/traces` is added).
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The target of the spans made for traces alone: the logs leave them out (their lines
/// read the same with traces on), the exporter takes them.
pub const TARGET: &str = "ops_console::traces";

/// Whether spans are exported by this process: when off, no span is made for them alone.
static ON: AtomicBool = AtomicBool::new(false);
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether this process exports traces.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The exporting provider the standard variables ask for, if any (the process's own: its
/// spans are flushed by [`flush`] at shutdown).
pub(super) fn from_env() -> Option<SdkTracerProvider> {
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    let configured = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| env(ENDPOINT_VAR))
        .is_some();
    if disabled || !configured {
        return None;
    }
    match provider(None) {
        Ok(p) => {
            let _ = PROVIDER.set(p.clone());
            Some(p)
        }
        Err(e) => {
            eprintln!("traces are off: {e}");
            None
        }
    }
}

/// A provider exporting in batches to `endpoint` (the full URL of `/v1/traces`), or where
/// the standard variables say when `None`. Exporting is on from here on.
pub fn provider(endpoint: Option<&str>) -> Result<SdkTracerProvider, String> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| "traces need the server's runtime".to_string())?;
    let builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(Post::new(handle, export_timeout()));
    let builder = match endpoint {
        Some(url) => builder.with_endpoint(url),
        None => builder,
    };
    let exporter = builder.build().map_err(|e| e.to_string())?;
    // The timeout of one export attempt, as the standard variables set it.
    // The standard variables name the service when they do; else it is `ops-console`.
    let named = env("OTEL_SERVICE_NAME").is_some()
        || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="));
    let resource = if named {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name("ops-console").build()
    };
    ON.store(true, Ordering::Relaxed);
    // The sampler is the SDK's default: `OTEL_TRACES_SAMPLER` and its argument.
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// The layer that hands the console's own spans (never a dependency's) to `provider`.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("ops-console"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        .with_filter(Targets::new().with_target("ops_console", tracing::Level::INFO))
}

/// `make()`'s span when traces are on, else none: the console's logs keep their lines as
/// they were, without a span's name in front of each.
pub fn span(make: impl FnOnce() -> tracing::Span) -> tracing::Span {
    if on() {
        make()
    } else {
        tracing::Span::none()
    }
}

/// How long one export waits for the collector: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (ms), else 10 s.
fn export_timeout() -> Duration {
    env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// Sends what is left of the process's spans (blocking; at shutdown): waits for one export
/// at most.
pub fn flush() {
    if let Some(p) = PROVIDER.get() {
        let wait = export_timeout() + Duration::from_secs(1);
        if let Err(e) = p.shutdown_with_timeout(wait) {
            tracing::warn!(error = %e, "traces not all sent at shutdown");
        }
    }
}

/// `span` continues the trace a request's `traceparent` header names (ignored unless it is
/// valid W3C trace context). The caller's `tracestate` is dropped: its text would ride on
/// every span of the trace, and nothing here reads it.
pub fn continue_from(headers: &hyper::HeaderMap, span: &tracing::Span) {
    if on() {
        continue_in(
            TraceContextPropagator::new().extract(&HeaderExtractor(headers)),
            span,
        );
    }
}

/// `span` continues the trace of a stored `traceparent` (see [`traceparent`]).
pub fn continue_stored(traceparent: Option<&str>, span: &tracing::Span) {
    let Some(tp) = traceparent.filter(|_| on()) else {
        return;
    };
    let carrier = HashMap::from([("traceparent".to_string(), tp.to_string())]);
    continue_in(TraceContextPropagator::new().extract(&carrier), span);
}

fn continue_in(cx: opentelemetry::Context, span: &tracing::Span) {
    let remote = cx.span().span_context().clone();
    if !remote.is_valid() {
        return;
    }
    let bare = SpanContext::new(
        remote.trace_id(),
        remote.span_id(),
        remote.trace_flags(),
        true,
        TraceState::NONE,
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(bare));
}

/// Whether the code running now is part of an exported trace (a DynamoDB request made
/// outside one, by a background round or a health check, is not a trace of its own).
pub fn in_trace() -> bool {
    on() && tracing::Span::current()
        .context()
        .span()
        .span_context()
        .is_valid()
}

/// The W3C `traceparent` of `span`: what a message carries to its receiver and an outbox
/// action keeps for its deliveries. `None` when traces are off.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    if !on() {
        return None;
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// The exporter's HTTP client: the console's hyper (TLS with the system's roots), run on
/// the server's runtime. The SDK exports from a thread of its own, which has none.
#[derive(Debug)]
struct Post {
    handle: tokio::runtime::Handle,
    timeout: Duration,
    plain: Client<HttpConnector, Full<Bytes>>,
    /// None: this machine has no CA certificates, and an `https` collector is refused.
    tls: Option<Client<HttpsConnector<HttpConnector>, Full<Bytes>>>,
}

/// A collector's answer is read up to this size.
const MAX_ANSWER: usize = 1 << 20;

fn connector() -> HttpConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(3)));
    http
}

impl Post {
    fn new(handle: tokio::runtime::Handle, timeout: Duration) -> Post {
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .ok()
            .map(|b| b.https_or_http().enable_http1().wrap_connector(connector()))
            .map(|c| Client::builder(TokioExecutor::new()).build(c));
        Post {
            handle,
            timeout,
            plain: Client::builder(TokioExecutor::new()).build(connector()),
            tls,
        }
    }
}

impl HttpClient for Post {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let https = request.uri().scheme_str() == Some("https");
        let (plain, tls, timeout) = (self.plain.clone(), self.tls.clone(), self.timeout);
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, Full::new(body));
        let task = self.handle.spawn(async move {
            let exchange = async {
                let res = match (https, tls) {
                    (false, _) => plain.request(request).await?,
                    (true, Some(tls)) => tls.request(request).await?,
                    (true, None) => return Err(HttpError::from("no CA certificates for https")),
                };
                let (parts, body) = res.into_parts();
                let body = Limited::new(body, MAX_ANSWER).collect().await?.to_bytes();
                Ok::<_, HttpError>(Response::from_parts(parts, body))
            };
            tokio::time::timeout(timeout, exchange)
                .await
                .map_err(|_| HttpError::from("the collector did not answer in time"))?
        });
        Box::pin(async move { task.await.map_err(|e| HttpError::from(e.to_string()))? })
    }
}
