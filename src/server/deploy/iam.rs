//! `ops-console aws iam-policy`: the least-privilege IAM policy, on the exact ARNs of the
//! environment's tables, their indexes and streams. Two roles: the console (`serve` and the
//! maintenance commands: items, queries, the inbox stream, and reading table descriptions
//! for `/readyz`) and the bootstrap (creating and completing tables, nothing on items).
//! The actions are the DynamoDB operations `store` calls; a transaction's parts are
//! authorized as the single-item actions they are.

use serde_json::{json, Value};

use crate::server::store::schema::ALL;
use crate::server::store::TableNames;

/// Which role the policy is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Console,
    Bootstrap,
}

/// Actions on items (tables and their indexes) that the console uses.
const ITEM_ACTIONS: &[&str] = &[
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:UpdateItem",
];

/// Reading what a table is (`/readyz`, the stream consumer finding its stream).
const DESCRIBE_ACTIONS: &[&str] = &["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"];

/// The inbox's stream consumer.
const STREAM_ACTIONS: &[&str] = &[
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
];

const BOOTSTRAP_ACTIONS: &[&str] = &[
    "dynamodb:CreateTable",
    "dynamodb:DescribeTable",
    "dynamodb:DescribeTimeToLive",
    "dynamodb:UpdateTable",
    "dynamodb:UpdateTimeToLive",
];

/// The policy document for `role` in `region` of `account`.
pub fn policy(names: &TableNames, region: &str, account: &str, role: Role) -> Value {
    let table_arn = |base: &str| {
        format!(
            "arn:aws:dynamodb:{region}:{account}:table/{}",
            names.of(base)
        )
    };
    let tables: Vec<String> = ALL.iter().map(|t| table_arn(t.base)).collect();
    let indexes: Vec<String> = ALL
        .iter()
        .filter(|t| !t.gsis.is_empty() || !t.lsis.is_empty())
        .map(|t| format!("{}/index/*", table_arn(t.base)))
        .collect();
    let streams: Vec<String> = ALL
        .iter()
        .filter(|t| t.stream)
        .map(|t| format!("{}/stream/*", table_arn(t.base)))
        .collect();
    let statements = match role {
        Role::Console => {
            let mut items = tables.clone();
            items.extend(indexes);
            vec![
                statement("Items", ITEM_ACTIONS, &items),
                statement("DescribeTables", DESCRIBE_ACTIONS, &tables),
                statement("InboxStream", STREAM_ACTIONS, &streams),
            ]
        }
        Role::Bootstrap => vec![statement(
            "CreateAndCompleteTables",
            BOOTSTRAP_ACTIONS,
            &tables,
        )],
    };
    json!({"Version": "2012-10-17", "Statement": statements})
}

fn statement(sid: &str, actions: &[&str], resources: &[String]) -> Value {
    json!({
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
    })
}
