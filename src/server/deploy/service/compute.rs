//! The console's tasks: an ECS Fargate service of two or more, rolled out one new task
//! beside each old one (never below the desired count, rolled back when new tasks fail
//! their health checks), scaled on CPU and on requests per task. Its settings are
//! environment variables the console reads; its secrets come from Secrets Manager into
//! the container, never into the task definition.

use serde_json::{json, Map, Value};

use super::{CONTAINER, METRICS_PORT, PORT};
use crate::server::config::Environment;
use crate::server::deploy::cloudformation::table_id;
use crate::server::deploy::iam;
use crate::server::deploy::skips;
use crate::server::store::schema::ALL;
use crate::server::store::TableNames;
use crate::server::telemetry::traces;

pub(super) fn resources(r: &mut Map<String, Value>, names: &TableNames, env: Environment) {
    let prod = env == Environment::Prod;
    r.insert(
        "Cluster".into(),
        json!({
            "Type": "AWS::ECS::Cluster",
            "Properties": {"ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}]},
        }),
    );
    let mut log_skips = vec![("CKV_AWS_158", "Encrypted by CloudWatch Logs' own key; the console logs nothing personal (docs/operations.md)")];
    if !prod {
        log_skips.push((
            "CKV_AWS_338",
            "A year of logs in prod; dev and staging keep a month",
        ));
    }
    r.insert(
        "LogGroup".into(),
        json!({
            "Type": "AWS::Logs::LogGroup",
            "Metadata": skips(&log_skips),
            "Properties": {"RetentionInDays": if prod { 365 } else { 30 }},
        }),
    );
    let (keep, replaced) = crate::server::deploy::cloudformation::keep_policies(prod);
    r.insert("IdempotencySecret".into(), json!({
        "Type": "AWS::SecretsManager::Secret",
        "DeletionPolicy": keep,
        "UpdateReplacePolicy": replaced,
        "Metadata": skips(&[
            ("CKV_AWS_149", "Encrypted by Secrets Manager's AWS managed key; set KmsKeyId where policy asks for a customer key"),
            ("CKV2_AWS_57", "Not rotated: every stored idempotency key is a hash under this secret, so a new one would make every retry a first request"),
        ]),
        "Properties": {
            "Description": format!("IDEMPOTENCY_SECRET of the ops-console {env} environment (generated; never rotate it: docs/operations.md)"),
            "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": true},
        },
    }));
    r.insert("ExecutionRole".into(), execution_role());
    r.insert("TaskRole".into(), task_role(names));
    r.insert("TaskDefinition".into(), task_definition(names, env));
    r.insert("Service".into(), service());
    autoscaling(r);
}

fn assume_by_ecs_tasks() -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                "ArnLike": {"aws:SourceArn": {"Fn::Sub": "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:*"}},
            },
        }],
    })
}

/// Pulls the image, writes the logs, reads the two secrets: nothing else.
fn execution_role() -> Value {
    json!({
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": assume_by_ecs_tasks(),
            "ManagedPolicyArns": [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"}],
            "Policies": [{
                "PolicyName": "ReadTheConsoleSecrets",
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Effect": "Allow",
                        "Action": "secretsmanager:GetSecretValue",
                        "Resource": [
                            {"Ref": "IdempotencySecret"},
                            {"Fn::If": ["HasWebhookSecret", {"Ref": "WebhookSecretArn"}, {"Ref": "AWS::NoValue"}]},
                        ],
                    }],
                },
            }],
        },
    })
}

/// The console's own role: `aws iam-policy`'s policy, on this stack's region and account.
fn task_role(names: &TableNames) -> Value {
    let mut policy = iam::policy(
        names,
        "${AWS::Region}",
        "${AWS::AccountId}",
        iam::Role::Console,
    );
    for statement in policy["Statement"].as_array_mut().into_iter().flatten() {
        if let Some(resources) = statement["Resource"].as_array_mut() {
            for arn in resources.iter_mut() {
                *arn = json!({"Fn::Sub": arn.as_str().unwrap_or_default()});
            }
        }
    }
    json!({
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": assume_by_ecs_tasks(),
            "Policies": [{"PolicyName": "OpsConsoleTables", "PolicyDocument": policy}],
        },
    })
}

/// The settings the container runs with: plain values, and the secrets by reference.
pub(super) fn container(names: &TableNames, env: Environment) -> Value {
    let mut environment = vec![
        json!({"Name": "OPS_ENV", "Value": env.as_str()}),
        json!({"Name": "AWS_REGION", "Value": {"Ref": "AWS::Region"}}),
        json!({"Name": "OPS_APP_SITE_ADDR", "Value": format!("0.0.0.0:{PORT}")}),
        json!({"Name": "OPS_AUTH_TRUSTED_PROXIES", "Value": {"Fn::Join": [", ", {"Ref": "LoadBalancerCidrs"}]}}),
        json!({"Name": "LOG_FORMAT", "Value": "json"}),
        json!({"Fn::If": ["HasTracesEndpoint",
            {"Name": traces::ENDPOINT_VAR, "Value": {"Ref": "TracesEndpoint"}},
            {"Ref": "AWS::NoValue"}]}),
        json!({"Fn::If": ["HasMetricsScraper",
            {"Name": "OPS_OPERATIONS_METRICS_LISTEN", "Value": format!("0.0.0.0:{METRICS_PORT}")},
            {"Ref": "AWS::NoValue"}]}),
    ];
    // The receiver's URL can hold a token: it comes from the secret, beside its key.
    let receiver = |name: &str, key: &str| {
        json!({"Fn::If": ["HasWebhookSecret",
            {"Name": name, "ValueFrom": {"Fn::Sub": format!("${{WebhookSecretArn}}:{key}::")}},
            {"Ref": "AWS::NoValue"}]})
    };
    if !names.prefix().is_empty() {
        environment.push(json!({"Name": "OPS_DYNAMODB_TABLE_PREFIX", "Value": names.prefix()}));
    }
    json!({
        "Name": CONTAINER,
        "Image": {"Ref": "ImageUri"},
        "Essential": true,
        "ReadonlyRootFilesystem": true,
        "PortMappings": [
            {"ContainerPort": PORT, "Protocol": "tcp"},
            {"Fn::If": ["HasMetricsScraper",
                {"ContainerPort": METRICS_PORT, "Protocol": "tcp"},
                {"Ref": "AWS::NoValue"}]},
        ],
        "Environment": environment,
        "Secrets": [
            {"Name": "IDEMPOTENCY_SECRET", "ValueFrom": {"Ref": "IdempotencySecret"}},
            receiver("OPS_EVENTS_WEBHOOK_URL", "url"),
            receiver("OPS_EVENTS_WEBHOOK_SECRET", "secret"),
        ],
        // SIGTERM comes after the load balancer has drained the task; the console then
        // finishes what it holds (graceful shutdown) before this runs out.
        "StopTimeout": 30,
        "LogConfiguration": {
            "LogDriver": "awslogs",
            "Options": {
                "awslogs-group": {"Ref": "LogGroup"},
                "awslogs-region": {"Ref": "AWS::Region"},
                "awslogs-stream-prefix": "console",
            },
        },
    })
}

fn task_definition(names: &TableNames, env: Environment) -> Value {
    json!({
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {
            "RequiresCompatibilities": ["FARGATE"],
            "NetworkMode": "awsvpc",
            "Cpu": {"Ref": "Cpu"},
            "Memory": {"Ref": "Memory"},
            "ExecutionRoleArn": {"Fn::GetAtt": ["ExecutionRole", "Arn"]},
            "TaskRoleArn": {"Fn::GetAtt": ["TaskRole", "Arn"]},
            "RuntimePlatform": {"OperatingSystemFamily": "LINUX", "CpuArchitecture": "X86_64"},
            "ContainerDefinitions": [container(names, env)],
        },
    })
}

/// After the listener and every table: a new version whose tables need a new index starts
/// once CloudFormation has built it, so `/healthz` (not `/readyz`) can gate the rollout.
fn service() -> Value {
    let mut after = vec![json!("HttpsListener")];
    after.extend(ALL.iter().map(|spec| json!(table_id(spec))));
    json!({
        "Type": "AWS::ECS::Service",
        "DependsOn": after,
        "Properties": {
            "Cluster": {"Ref": "Cluster"},
            "LaunchType": "FARGATE",
            "TaskDefinition": {"Ref": "TaskDefinition"},
            // No DesiredCount: an update (a new image) would set it back while autoscaling
            // had raised it. The service starts with one task, raised at once to the
            // scalable target's minimum (`DesiredCount`).
            "HealthCheckGracePeriodSeconds": 60,
            // New tasks start beside the old ones; an old one leaves only once a new one
            // is healthy, and is drained (`edge::DEREGISTRATION_SECONDS`) before it is stopped.
            "DeploymentConfiguration": {
                "MinimumHealthyPercent": 100,
                "MaximumPercent": 200,
                "DeploymentCircuitBreaker": {"Enable": true, "Rollback": true},
            },
            "NetworkConfiguration": {"AwsvpcConfiguration": {
                "AssignPublicIp": "DISABLED",
                "Subnets": {"Ref": "PrivateSubnetIds"},
                "SecurityGroups": [{"Ref": "TaskSecurityGroup"}],
            }},
            "LoadBalancers": [{"ContainerName": CONTAINER, "ContainerPort": PORT, "TargetGroupArn": {"Ref": "TargetGroup"}}],
            "PropagateTags": "SERVICE",
            "EnableECSManagedTags": true,
        },
    })
}

fn autoscaling(r: &mut Map<String, Value>) {
    r.insert(
        "ScalableTarget".into(),
        json!({
            "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
            "Properties": {
                "ServiceNamespace": "ecs",
                "ScalableDimension": "ecs:service:DesiredCount",
                "ResourceId": {"Fn::Sub": "service/${Cluster}/${Service.Name}"},
                "MinCapacity": {"Ref": "DesiredCount"},
                "MaxCapacity": {"Ref": "MaxCount"},
            },
        }),
    );
    let requests = {
        let label = json!({"Fn::Join": ["/", [
            {"Fn::GetAtt": ["LoadBalancer", "LoadBalancerFullName"]},
            {"Fn::GetAtt": ["TargetGroup", "TargetGroupFullName"]},
        ]]});
        json!({"PredefinedMetricType": "ALBRequestCountPerTarget", "ResourceLabel": label})
    };
    let cpu = json!({"PredefinedMetricType": "ECSServiceAverageCPUUtilization"});
    for (id, metric, target) in [
        ("ScaleOnCpu", cpu, json!(60)),
        (
            "ScaleOnRequests",
            requests,
            json!({"Ref": "RequestsPerTarget"}),
        ),
    ] {
        r.insert(
            id.into(),
            json!({
                "Type": "AWS::ApplicationAutoScaling::ScalingPolicy",
                "Properties": {
                    "PolicyName": id,
                    "PolicyType": "TargetTrackingScaling",
                    "ScalingTargetId": {"Ref": "ScalableTarget"},
                    "TargetTrackingScalingPolicyConfiguration": {
                        "PredefinedMetricSpecification": metric,
                        "TargetValue": target,
                        "ScaleInCooldown": 300,
                        "ScaleOutCooldown": 60,
                    },
                },
            }),
        );
    }
}
