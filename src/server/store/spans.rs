//! A span for every DynamoDB request made within a trace (docs/operations.md "Traces"): a
//! child of the span that made it, named by the operation, with the tables it touched, its
//! attempts and how it ended. Never a key, an item or an expression: those hold stored
//! data. A request outside any trace (a background round, a health check) makes none.

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation as op;
use aws_smithy_runtime_api::client::interceptors::context::Input;
use aws_smithy_runtime_api::client::retries::RequestAttempts;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

use crate::server::telemetry::traces;

/// The span of the request under way, kept in the request's own configuration.
#[derive(Debug, Clone)]
struct RequestSpan(tracing::Span);

impl Storable for RequestSpan {
    type Storer = StoreReplace<Self>;
}

#[derive(Debug, Clone, Default)]
pub(super) struct SpanInterceptor;

impl Intercept for SpanInterceptor {
    fn name(&self) -> &'static str {
        "ops-console-spans"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if !traces::in_trace() {
            return Ok(());
        }
        let (name, tables) = described(context.input());
        let span = tracing::info_span!(
            target: traces::TARGET,
            "dynamodb",
            otel.name = %format!("DynamoDB.{name}"),
            otel.kind = "client",
            rpc.system = "aws-api",
            rpc.service = "DynamoDB",
            rpc.method = name,
            aws.dynamodb.table_names = %tables.join(","),
            outcome = tracing::field::Empty,
            attempts = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        cfg.interceptor_state().store_put(RequestSpan(span));
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Some(RequestSpan(span)) = cfg.load::<RequestSpan>().cloned() {
            let outcome = match context.response() {
                Some(r) if r.status().is_success() => "ok".to_string(),
                Some(r) => format!("http {}", r.status().as_u16()),
                None => "no answer".to_string(),
            };
            if outcome != "ok" {
                span.record("otel.status_code", "error");
            }
            span.record("outcome", outcome);
            let attempts = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
            span.record("attempts", attempts as i64);
            // The span ends here, with its last handle.
            cfg.interceptor_state().unset::<RequestSpan>();
        }
        Ok(())
    }
}

/// A request's operation, and the tables it names (sorted, each once).
fn described(input: &Input) -> (&'static str, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut op = "other";
    macro_rules! single {
        ($($m:ident :: $t:ident => $name:literal),*) => {
            $(if let Some(i) = input.downcast_ref::<op::$m::$t>() {
                op = $name;
                names.extend(i.table_name().map(str::to_string));
            })*
        };
    }
    single!(
        get_item::GetItemInput => "GetItem",
        put_item::PutItemInput => "PutItem",
        update_item::UpdateItemInput => "UpdateItem",
        delete_item::DeleteItemInput => "DeleteItem",
        query::QueryInput => "Query",
        scan::ScanInput => "Scan",
        describe_table::DescribeTableInput => "DescribeTable",
        create_table::CreateTableInput => "CreateTable",
        update_table::UpdateTableInput => "UpdateTable",
        delete_table::DeleteTableInput => "DeleteTable",
        describe_time_to_live::DescribeTimeToLiveInput => "DescribeTimeToLive",
        update_time_to_live::UpdateTimeToLiveInput => "UpdateTimeToLive"
    );
    if let Some((name, tables)) = many_tables(input) {
        op = name;
        names.extend(tables);
    }
    names.sort();
    names.dedup();
    (op, names)
}

/// The operation and tables of a batch or a transaction (several tables at once).
fn many_tables(input: &Input) -> Option<(&'static str, Vec<String>)> {
    if let Some(i) = input.downcast_ref::<op::batch_get_item::BatchGetItemInput>() {
        return Some(("BatchGetItem", keys(i.request_items())));
    }
    if let Some(i) = input.downcast_ref::<op::batch_write_item::BatchWriteItemInput>() {
        return Some(("BatchWriteItem", keys(i.request_items())));
    }
    if let Some(i) = input.downcast_ref::<op::transact_write_items::TransactWriteItemsInput>() {
        let tables = i.transact_items().iter().filter_map(|item| {
            item.put()
                .map(|p| p.table_name())
                .or(item.update().map(|u| u.table_name()))
                .or(item.delete().map(|d| d.table_name()))
                .or(item.condition_check().map(|c| c.table_name()))
                .map(str::to_string)
        });
        return Some(("TransactWriteItems", tables.collect()));
    }
    let i = input.downcast_ref::<op::transact_get_items::TransactGetItemsInput>()?;
    let tables = i.transact_items().iter().filter_map(|item| item.get());
    Some((
        "TransactGetItems",
        tables.map(|g| g.table_name().to_string()).collect(),
    ))
}

fn keys<V>(m: Option<&std::collections::HashMap<String, V>>) -> Vec<String> {
    m.into_iter().flat_map(|m| m.keys().cloned()).collect()
}
