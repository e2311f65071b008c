//! DynamoDB's error answers, as AWS sends them (JSON protocol 1.0).

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

pub(crate) type Answer = Response<Full<Bytes>>;

const DYNAMODB: &str = "com.amazonaws.dynamodb.v20120810";

pub(crate) fn json_answer(status: StatusCode, body: &Value) -> Answer {
    let mut res = Response::new(Full::new(Bytes::from(body.to_string())));
    *res.status_mut() = status;
    res.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    res.headers_mut().insert(
        "x-amzn-requestid",
        hyper::header::HeaderValue::from_static("dynamodb-faults"),
    );
    res
}

fn error(status: StatusCode, kind: &str, message: &str) -> Answer {
    json_answer(status, &json!({"__type": kind, "message": message}))
}

pub(crate) fn internal_error() -> Answer {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("{DYNAMODB}#InternalServerError"),
        "Internal server error",
    )
}

pub(crate) fn throttling() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "com.amazon.coral.availability#ThrottlingException",
        "Throughput exceeds the current capacity of your table or index. DynamoDB is \
         automatically scaling your table or index so please try again shortly.",
    )
}

pub(crate) fn throughput_exceeded() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        &format!("{DYNAMODB}#ProvisionedThroughputExceededException"),
        "The level of configured provisioned throughput for the table was exceeded. \
         Consider increasing your provisioning level with the UpdateTable API.",
    )
}

/// A request refused by a partition's limit or a table's or index's quota, with AWS's
/// reason (`IndexWriteKeyRangeThroughputExceeded`, …) and the resource it names.
pub(crate) fn throttled_by(reason: &str, resource: &str) -> Answer {
    json_answer(
        StatusCode::BAD_REQUEST,
        &json!({
            "__type": format!("{DYNAMODB}#ProvisionedThroughputExceededException"),
            "message": "Throughput exceeds the current capacity of your table or index.",
            "ThrottlingReasons": [{
                "reason": reason,
                "resource": format!("arn:aws:dynamodb:local:000000000000:table/{resource}"),
            }],
        }),
    )
}

/// A query of a global index that is still being built, as AWS refuses it.
pub(crate) fn backfilling(index: &str) -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        &format!("{DYNAMODB}#ValidationException"),
        &format!("Cannot read from backfilling global secondary index: {index}"),
    )
}

pub(crate) fn transaction_conflict() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        &format!("{DYNAMODB}#TransactionConflictException"),
        "Transaction is ongoing for the item",
    )
}

pub(crate) fn transaction_in_progress() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        &format!("{DYNAMODB}#TransactionInProgressException"),
        "The transaction with the given request token is already in progress.",
    )
}

pub(crate) fn expired_iterator() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "com.amazonaws.dynamodb.v20120810#ExpiredIteratorException",
        "Iterator expired. The iterator was created over 15 minutes ago.",
    )
}

pub(crate) fn trimmed_data() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException",
        "The operation attempted to read past the oldest stream record in a shard.",
    )
}

pub(crate) fn limit_exceeded() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "com.amazonaws.dynamodb.v20120810#LimitExceededException",
        "Too many requests for this stream: slow down.",
    )
}

pub(crate) fn idempotent_parameter_mismatch() -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        &format!("{DYNAMODB}#IdempotentParameterMismatchException"),
        "The request uses the same client token as a previous, but non-identical request.",
    )
}

/// A cancelled transaction: `codes[i]` is the reason of action `i` (`None` when it was
/// fine).
pub(crate) fn cancelled(codes: &[&str]) -> Answer {
    let reasons: Vec<Value> = codes
        .iter()
        .map(|c| match *c {
            "None" => json!({"Code": "None"}),
            "TransactionConflict" => {
                json!({"Code": c, "Message": "Transaction is ongoing for the item"})
            }
            "ThrottlingError" => json!({"Code": c, "Message": "Throughput exceeds the current capacity for one or more items"}),
            other => json!({"Code": other}),
        })
        .collect();
    let body = json!({
        "__type": format!("{DYNAMODB}#TransactionCanceledException"),
        "CancellationReasons": reasons,
        "Message": format!(
            "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
            codes.join(", ")
        ),
    });
    json_answer(StatusCode::BAD_REQUEST, &body)
}
