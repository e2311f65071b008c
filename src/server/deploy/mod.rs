//! The deploy kit (docs/operations.md): what an operations team needs to run ops-console on AWS,
//! generated from the same table specification the bootstrap creates tables from
//! (`store::schema::ALL`), so the two never drift: a CloudFormation template for every
//! table, one for the whole service (tables, the console on ECS Fargate behind a load
//! balancer, its secrets and alarms), and the least-privilege IAM policy for the console
//! and for the bootstrap.

pub mod cloudformation;
pub mod iam;
pub mod service;

use serde_json::{json, Value};

/// `Metadata` that skips checkov's `checks`, each with its reason.
pub(crate) fn skips(checks: &[(&str, &str)]) -> Value {
    let skip: Vec<Value> = checks
        .iter()
        .map(|(id, comment)| json!({"id": id, "comment": comment}))
        .collect();
    json!({"checkov": {"skip": skip}})
}

/// `rp_mw_idempotency` → `RpMwIdempotency`: a CloudFormation logical id part.
pub(crate) fn pascal(base: &str) -> String {
    base.split(['_', '-'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::pascal;

    #[test]
    fn logical_ids_are_alphanumeric() {
        assert_eq!(pascal("rp_mw_idempotency"), "RpMwIdempotency");
        assert_eq!(pascal("settings"), "Settings");
        assert_eq!(pascal("login_attempts"), "LoginAttempts");
    }
}
