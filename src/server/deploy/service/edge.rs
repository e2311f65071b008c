//! The load balancer in front of the tasks: HTTPS with the team's certificate, HTTP
//! redirected, health checks on `/healthz`, and a deregistration delay long enough for any
//! request in flight to finish before a task is stopped. Its security group reaches only the
//! tasks' port; the tasks' group admits only the load balancer.

use serde_json::{json, Map, Value};

use super::{METRICS_PORT, PORT};
use crate::server::deploy::skips;
use crate::server::http::HEALTH_PATH;

/// Answered 404 at the load balancer: only its checks and the scrapers, inside, ask them.
pub const INTERNAL_PATHS: [&str; 3] = [HEALTH_PATH, "/readyz", "/metrics"];

/// Seconds a task that is leaving keeps serving what it has (ECS stops it after).
pub const DEREGISTRATION_SECONDS: u32 = 30;

/// Seconds the load balancer keeps a quiet connection open (AWS's default, stated).
pub const IDLE_TIMEOUT_SECONDS: u32 = 60;

// Every request is answered (at worst 503 at its deadline) before the load balancer would
// drop it, and before a leaving task is stopped.
const _: () = assert!(
    crate::server::config::MAX_REQUEST_DEADLINE_MS < DEREGISTRATION_SECONDS as i64 * 1000
        && DEREGISTRATION_SECONDS < IDLE_TIMEOUT_SECONDS
);

pub(super) fn resources(r: &mut Map<String, Value>) {
    let lb_skips = [
        ("CKV_AWS_91", "Access logs need a bucket of the team's choosing: set access_logs.s3.* on the load balancer"),
        ("CKV2_AWS_28", "No WAF by default: the console limits sign-ins and rates itself; attach a web ACL where policy asks for one"),
        ("CKV_AWS_150", "No deletion protection: the load balancer holds no data, and a failed first create must be able to roll back (the tables and the secret are kept)"),
    ];
    r.insert(
        "LoadBalancer".into(),
        json!({
            "Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
            "Metadata": skips(&lb_skips),
            "Properties": {
                "Type": "application",
                "Scheme": "internet-facing",
                "Subnets": {"Ref": "PublicSubnetIds"},
                "SecurityGroups": [{"Ref": "LoadBalancerSecurityGroup"}],
                "LoadBalancerAttributes": [
                    {"Key": "routing.http.drop_invalid_header_fields.enabled", "Value": "true"},
                    {"Key": "routing.http.desync_mitigation_mode", "Value": "strictest"},
                    // Above every request's deadline (`operations.request_deadline_ms`,
                    // at most 25 s): a slow answer is a 503 from the console, never a
                    // connection the load balancer dropped.
                    {"Key": "idle_timeout.timeout_seconds", "Value": IDLE_TIMEOUT_SECONDS.to_string()},
                ],
            },
        }),
    );
    listeners(r);
    r.insert("TargetGroup".into(), target_group());
    security_groups(r);
}

/// HTTPS to the tasks, the health and metrics paths answered here, HTTP redirected.
fn listeners(r: &mut Map<String, Value>) {
    r.insert(
        "HttpsListener".into(),
        json!({
            "Type": "AWS::ElasticLoadBalancingV2::Listener",
            "Properties": {
                "LoadBalancerArn": {"Ref": "LoadBalancer"},
                "Port": 443,
                "Protocol": "HTTPS",
                "SslPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
                "Certificates": [{"CertificateArn": {"Ref": "CertificateArn"}}],
                "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": "TargetGroup"}}],
            },
        }),
    );
    // Health and metrics are for the load balancer's checks and the scrapers, which reach
    // the tasks directly: from outside, each `/healthz` would cost a DynamoDB control-plane
    // request, an account-wide limit.
    r.insert("InternalPathsListenerRule".into(), json!({
        "Type": "AWS::ElasticLoadBalancingV2::ListenerRule",
        "Properties": {
            "ListenerArn": {"Ref": "HttpsListener"},
            "Priority": 1,
            "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": INTERNAL_PATHS}}],
            "Actions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain", "MessageBody": "Not found"}}],
        },
    }));
    r.insert("HttpListener".into(), json!({
        "Type": "AWS::ElasticLoadBalancingV2::Listener",
        "Properties": {
            "LoadBalancerArn": {"Ref": "LoadBalancer"},
            "Port": 80,
            "Protocol": "HTTP",
            "DefaultActions": [{"Type": "redirect", "RedirectConfig": {"Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"}}],
        },
    }));
}

fn target_group() -> Value {
    json!({
        "Type": "AWS::ElasticLoadBalancingV2::TargetGroup",
        "Properties": {
            "VpcId": {"Ref": "VpcId"},
            "TargetType": "ip",
            "Protocol": "HTTP",
            "Port": PORT,
            "HealthCheckPath": HEALTH_PATH,
            "HealthCheckIntervalSeconds": 15,
            "HealthCheckTimeoutSeconds": 5,
            "HealthyThresholdCount": 2,
            // A minute of failed checks: DynamoDB's control plane stumbling for a moment
            // does not take every task out at once.
            "UnhealthyThresholdCount": 4,
            "Matcher": {"HttpCode": "200"},
            "TargetGroupAttributes": [
                {"Key": "deregistration_delay.timeout_seconds", "Value": DEREGISTRATION_SECONDS.to_string()},
            ],
        },
    })
}

fn security_groups(r: &mut Map<String, Value>) {
    r.insert("LoadBalancerSecurityGroup".into(), json!({
        "Type": "AWS::EC2::SecurityGroup",
        "Metadata": skips(&[("CKV_AWS_260", "Port 80 only answers a redirect to HTTPS")]),
        "Properties": {
            "GroupDescription": "ops-console load balancer: HTTPS (and HTTP, redirected) from anywhere, out to the tasks only",
            "VpcId": {"Ref": "VpcId"},
            "SecurityGroupIngress": [
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "HTTPS"},
                {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "CidrIp": "0.0.0.0/0", "Description": "HTTP, redirected to HTTPS"},
            ],
            "SecurityGroupEgress": [
                {"IpProtocol": "tcp", "FromPort": PORT, "ToPort": PORT, "DestinationSecurityGroupId": {"Ref": "TaskSecurityGroup"}, "Description": "The console's tasks"},
            ],
        },
    }));
    r.insert("TaskSecurityGroup".into(), json!({
        "Type": "AWS::EC2::SecurityGroup",
        "Properties": {
            "GroupDescription": "ops-console tasks: in from the load balancer, out over HTTPS (AWS APIs, receivers, alert channels)",
            "VpcId": {"Ref": "VpcId"},
            "SecurityGroupEgress": [
                {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "DynamoDB, Secrets Manager, ECR, CloudWatch Logs, receivers and alert channels over HTTPS"},
            ],
        },
    }));
    r.insert(
        "TaskIngressFromLoadBalancer".into(),
        json!({
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": {"Ref": "TaskSecurityGroup"},
                "IpProtocol": "tcp",
                "FromPort": PORT,
                "ToPort": PORT,
                "SourceSecurityGroupId": {"Ref": "LoadBalancerSecurityGroup"},
                "Description": "The load balancer",
            },
        }),
    );
    r.insert(
        "TaskIngressFromMetricsScraper".into(),
        json!({
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Condition": "HasMetricsScraper",
            "Properties": {
                "GroupId": {"Ref": "TaskSecurityGroup"},
                "IpProtocol": "tcp",
                "FromPort": METRICS_PORT,
                "ToPort": METRICS_PORT,
                "SourceSecurityGroupId": {"Ref": "MetricsScraperSecurityGroupId"},
                "Description": "The metrics scraper: /metrics alone, without a key",
            },
        }),
    );
}
