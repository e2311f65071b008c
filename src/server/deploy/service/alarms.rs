//! CloudWatch alarms a team pages on, each to the `AlarmTopicArn` topic when it fires and
//! when it clears: the load balancer's 5xx rate, targets failing their health checks or
//! none left healthy, for every table its throttled requests and DynamoDB's own errors,
//! and for every global secondary index its own throttles. The console's alert rules (docs/operations.md) watch the rest from inside.

use serde_json::{json, Map, Value};

use crate::server::deploy::cloudformation::table_id;
use crate::server::store::schema::ALL;
use crate::server::store::TableNames;

/// The DynamoDB operations the console calls (`store`), for `SystemErrors` (a metric per
/// table and operation). Nine, with the sum: an alarm takes ten metrics at most.
const OPERATIONS: &[&str] = &[
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactWriteItems",
];

/// Percent of requests answered 5xx (by the tasks or the load balancer) that pages.
const FIVE_XX_PERCENT: u32 = 5;

pub(super) fn resources(r: &mut Map<String, Value>, names: &TableNames) {
    r.insert("Alarm5xxRate".into(), five_xx_rate());
    stream_alarms(r);
    let lb_and_group = json!([
        {"Name": "LoadBalancer", "Value": {"Fn::GetAtt": ["LoadBalancer", "LoadBalancerFullName"]}},
        {"Name": "TargetGroup", "Value": {"Fn::GetAtt": ["TargetGroup", "TargetGroupFullName"]}},
    ]);
    r.insert("AlarmUnhealthyTargets".into(), alarm(json!({
        "AlarmDescription": "ops-console: a task fails the load balancer's health checks (GET /healthz, answered by the process: it does not answer)",
        "Namespace": "AWS/ApplicationELB",
        "MetricName": "UnHealthyHostCount",
        "Dimensions": lb_and_group.clone(),
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 3,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    })));
    r.insert(
        "AlarmNoHealthyTarget".into(),
        alarm(json!({
            "AlarmDescription": "ops-console: no task is healthy; the console is down",
            "Namespace": "AWS/ApplicationELB",
            "MetricName": "HealthyHostCount",
            "Dimensions": lb_and_group,
            "Statistic": "Minimum",
            "Period": 60,
            "EvaluationPeriods": 2,
            "Threshold": 1,
            "ComparisonOperator": "LessThanThreshold",
            "TreatMissingData": "breaching",
        })),
    );
    for spec in ALL {
        let name = names.of(spec.base);
        let id = table_id(spec);
        r.insert(format!("Alarm{id}Throttles"), throttles(&name));
        r.insert(format!("Alarm{id}SystemErrors"), system_errors(&name));
        // The table's throttle metrics leave out its indexes' (AWS documents the
        // `TableName` dimension alone as the base table's): a hot index key, which
        // throttles the table's writes, pages only on its own alarm.
        for index in spec.gsis {
            r.insert(
                format!(
                    "Alarm{id}{}Throttles",
                    crate::server::deploy::pascal(index.name)
                ),
                index_throttles(&name, index.name),
            );
        }
    }
}

/// An alarm with `props`, notifying the topic; no data is no trouble unless `props` says.
/// The inbox stream consumer's state, from the lines it logs (`alert` field): DynamoDB
/// Streams has no lag metric in CloudWatch. Behind for 5 minutes: the inbox counters are
/// not coming down, and after 24 hours AWS trims what was not read. A trimmed position:
/// removals went uncounted (`ops-console verify inbox` finds them).
fn stream_alarms(r: &mut Map<String, Value>) {
    use crate::server::store::inbox::stream::{BEHIND_ALERT, TRIMMED_ALERT};
    let said = [
        ("InboxStreamBehind", BEHIND_ALERT, "ops-console: a console has not read the inbox stream to its newest record for 5 minutes (DynamoDB Streams throttled or failing): inbox counters are not coming down, and after 24 h AWS trims what was not read"),
        ("InboxStreamTrimmed", TRIMMED_ALERT, "ops-console: a saved inbox stream position was trimmed (older than the stream's 24 hours): removals went uncounted; run ops-console verify inbox"),
    ];
    for (metric, alert, why) in said {
        r.insert(
            format!("{metric}LogMetric"),
            json!({
                "Type": "AWS::Logs::MetricFilter",
                "Properties": {
                    "LogGroupName": {"Ref": "LogGroup"},
                    "FilterPattern": format!("{{ $.fields.alert = \"{alert}\" }}"),
                    "MetricTransformations": [{
                        "MetricNamespace": "OpsConsole",
                        "MetricName": metric,
                        "MetricValue": "1",
                        "DefaultValue": 0,
                    }],
                },
            }),
        );
        r.insert(
            format!("Alarm{metric}"),
            alarm(json!({
                "AlarmDescription": why,
                "Namespace": "OpsConsole",
                "MetricName": metric,
                "Statistic": "Sum",
                "Period": 300,
                "EvaluationPeriods": 1,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            })),
        );
    }
}

fn alarm(mut props: Value) -> Value {
    props["AlarmActions"] = json!([{"Ref": "AlarmTopicArn"}]);
    props["OKActions"] = json!([{"Ref": "AlarmTopicArn"}]);
    if props.get("TreatMissingData").is_none() {
        props["TreatMissingData"] = json!("notBreaching");
    }
    json!({"Type": "AWS::CloudWatch::Alarm", "Properties": props})
}

/// `metric` of `namespace` summed per `period` seconds, as a metric-math input.
fn input(id: &str, namespace: &str, metric: &str, dimensions: Value, period: u32) -> Value {
    json!({
        "Id": id,
        "ReturnData": false,
        "MetricStat": {
            "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dimensions},
            "Period": period,
            "Stat": "Sum",
        },
    })
}

fn five_xx_rate() -> Value {
    let lb = json!([{"Name": "LoadBalancer", "Value": {"Fn::GetAtt": ["LoadBalancer", "LoadBalancerFullName"]}}]);
    let ns = "AWS/ApplicationELB";
    alarm(json!({
        "AlarmDescription": format!("ops-console: more than {FIVE_XX_PERCENT}% of requests answered 5xx (by the tasks or the load balancer) in 3 of 5 minutes of 20 requests or more"),
        "Metrics": [
            input("tasks", ns, "HTTPCode_Target_5XX_Count", lb.clone(), 60),
            input("balancer", ns, "HTTPCode_ELB_5XX_Count", lb.clone(), 60),
            input("requests", ns, "RequestCount", lb, 60),
            // Under 20 requests a minute, one error is no rate to page on.
            {"Id": "rate", "Label": "5xx %", "ReturnData": true,
             "Expression": "IF(requests >= 20, 100 * (FILL(tasks, 0) + FILL(balancer, 0)) / requests, 0)"},
        ],
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 3,
        "Threshold": FIVE_XX_PERCENT,
        "ComparisonOperator": "GreaterThanThreshold",
    }))
}

/// The operations whose `ThrottledRequests` (requests with a throttle event, a
/// transaction's too) the table's throttle alarm adds: seven, with the two event metrics
/// and the sum, ten metrics (an alarm's most).
const THROTTLED_OPERATIONS: &[&str] = &[
    "GetItem",
    "PutItem",
    "UpdateItem",
    "Query",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactWriteItems",
];

/// Reads or writes DynamoDB refused for capacity, in two 5-minute periods running.
fn throttles(table: &str) -> Value {
    let ns = "AWS/DynamoDB";
    let dims = json!([{"Name": "TableName", "Value": table}]);
    let mut metrics = vec![
        input("reads", ns, "ReadThrottleEvents", dims.clone(), 300),
        input("writes", ns, "WriteThrottleEvents", dims, 300),
    ];
    for (i, op) in THROTTLED_OPERATIONS.iter().enumerate() {
        let dims =
            json!([{"Name": "TableName", "Value": table}, {"Name": "Operation", "Value": op}]);
        metrics.push(input(&format!("op{i}"), ns, "ThrottledRequests", dims, 300));
    }
    let ops: Vec<String> = (0..THROTTLED_OPERATIONS.len())
        .map(|i| format!("FILL(op{i}, 0)"))
        .collect();
    metrics.push(json!({"Id": "throttled", "Label": "throttle events and throttled requests", "ReturnData": true,
        "Expression": format!("FILL(reads, 0) + FILL(writes, 0) + {}", ops.join(" + "))}));
    alarm(json!({
        "AlarmDescription": format!("ops-console: DynamoDB throttles requests to {table} (a hot key or partition; the console answers 503 with Retry-After meanwhile)"),
        "Metrics": metrics,
        "EvaluationPeriods": 2,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    }))
}

/// Reads or writes one global secondary index refused for capacity (its key's partition
/// past its limit), in two 5-minute periods running.
fn index_throttles(table: &str, index: &str) -> Value {
    let ns = "AWS/DynamoDB";
    let dims = json!([{"Name": "TableName", "Value": table}, {"Name": "GlobalSecondaryIndexName", "Value": index}]);
    alarm(json!({
        "AlarmDescription": format!("ops-console: DynamoDB throttles {table}'s index {index} (a hot index key; a throttled index throttles the table's writes)"),
        "Metrics": [
            input("reads", ns, "ReadThrottleEvents", dims.clone(), 300),
            input("writes", ns, "WriteThrottleEvents", dims, 300),
            {"Id": "throttled", "Label": "throttle events", "ReturnData": true,
             "Expression": "FILL(reads, 0) + FILL(writes, 0)"},
        ],
        "EvaluationPeriods": 2,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    }))
}

/// DynamoDB's own failures (HTTP 500) on the table, over every operation the console calls.
fn system_errors(table: &str) -> Value {
    let mut metrics: Vec<Value> = OPERATIONS
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let dims =
                json!([{"Name": "TableName", "Value": table}, {"Name": "Operation", "Value": op}]);
            input(&format!("op{i}"), "AWS/DynamoDB", "SystemErrors", dims, 300)
        })
        .collect();
    metrics.push(json!({"Id": "errors", "Label": "system errors", "ReturnData": true, "Expression": "SUM(METRICS())"}));
    alarm(json!({
        "AlarmDescription": format!("ops-console: DynamoDB answers {table}'s requests with its own errors"),
        "Metrics": metrics,
        "EvaluationPeriods": 2,
        "Threshold": 5,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    }))
}
