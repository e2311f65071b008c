//! The REST API as an OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]`
//! attributes and the types below (served at `/api/openapi.json`). Each operation's
//! security requirement names the scope it needs: the security test reads them from here.

use serde_json::Value;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{Modify, OpenApi};

use super::idempotency;
use super::problem::{ProblemDoc, ProblemResponse};
use crate::model::openapi::{Field, Schema};
use crate::server::domain::conversations::ids::{ConversationId, PrimaryChannel};
use crate::server::domain::inbox::keys::{InboxKey, MessageKey, TenantKey, UserKey};

struct BearerKeys;

impl Modify for BearerKeys {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The problems an operation can answer because of the layers in front of its handler, so
/// the handlers' attributes list only their own: 401 for every keyed operation, 403 where it
/// needs a scope, 400 where it takes input, 413 for writes (the body limit), 409 and 422
/// where it takes an `Idempotency-Key` (still running; reused with another request).
struct LayerProblems;

impl LayerProblems {
    fn add(op: &mut Operation, write: bool) {
        let Some(scopes) = op
            .security
            .as_ref()
            .and_then(|reqs| reqs.first())
            .and_then(|req| serde_json::to_value(req).ok())
            .and_then(|req| req.get("api_key").cloned())
        else {
            return;
        };
        let params = op.parameters.as_deref().unwrap_or_default();
        let keyed = params.iter().any(|p| {
            p.name.eq_ignore_ascii_case(idempotency::HEADER)
                || p.name.eq_ignore_ascii_case(idempotency::X_HEADER)
        });
        let mut codes = vec!["401"];
        if scopes.as_array().is_some_and(|s| !s.is_empty()) {
            codes.push("403");
        }
        if !params.is_empty() || op.request_body.is_some() {
            codes.push("400");
        }
        if write {
            codes.push("413");
        }
        if keyed {
            codes.extend(["409", "422"]);
        }
        for code in codes {
            op.responses
                .responses
                .entry(code.to_string())
                .or_insert_with(|| RefOr::Ref(Ref::from_response_name("ProblemResponse")));
        }
    }
}

impl Modify for LayerProblems {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        for item in api.paths.paths.values_mut() {
            let ops = [
                (item.get.as_mut(), false),
                (item.post.as_mut(), true),
                (item.put.as_mut(), true),
                (item.patch.as_mut(), true),
            ];
            for (op, write) in ops {
                if let Some(op) = op {
                    Self::add(op, write);
                }
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ops-console",
        description = "The REST API of ops-console for machine clients: the helpdesk webhook, channel processors, apps reading inbox feeds, devices posting measurements. Bearer API keys with scopes (the scope each operation needs is its security requirement); errors are application/problem+json; every write is idempotent.",
        version = "1"
    ),
    paths(
        crate::server::http::users::whoami,
        crate::server::http::kill_switches::kill_switches,
        crate::server::http::kill_switches::change_kill_switch,
        crate::server::http::kill_switches::kill_switch_approvals,
        crate::server::http::kill_switches::kill_switch_schedule,
        crate::server::http::kill_switches::cancel_scheduled_change,
        crate::server::http::kill_switches::kill_switch_trips,
        crate::server::http::kill_switches::trigger,
        crate::server::http::kill_switches::trigger_by_header,
        crate::server::http::events::post_event,
        crate::server::http::conversations::create,
        crate::server::http::conversations::lookup,
        crate::server::http::conversations::read,
        crate::server::http::conversations::update,
        crate::server::http::conversations::append,
        crate::server::http::inbox::put_tenant,
        crate::server::http::inbox::put_inbox,
        crate::server::http::inbox::publish,
        crate::server::http::inbox::feed,
        crate::server::http::inbox::counts,
        crate::server::http::inbox::mark_read,
        crate::server::http::inbox::mark_all,
        crate::server::http::measurements::one,
        crate::server::http::measurements::many,
        crate::server::http::receiver::receiver,
        crate::server::http::receiver::actions,
        crate::server::http::receiver::pause,
        crate::server::http::receiver::breaker,
        crate::server::http::receiver::count_resend,
        crate::server::http::receiver::resend,
        crate::server::http::health::healthz,
        crate::server::http::health::readyz,
        crate::server::http::health::metrics,
    ),
    components(
        schemas(
            ProblemDoc,
            TenantKey,
            InboxKey,
            UserKey,
            MessageKey,
            PrimaryChannel,
            ConversationId
        ),
        responses(ProblemResponse)
    ),
    modifiers(&BearerKeys, &LayerProblems),
    tags(
        (name = "console", description = "Who you are, health, kill switches"),
        (name = "events", description = "The helpdesk webhook (docs/events.md)"),
        (name = "conversations", description = "Conversations (docs/conversations.md)"),
        (name = "inbox", description = "Inbox (docs/inbox.md)"),
        (name = "measurements", description = "Measurements (docs/measurements.md)"),
        (name = "receiver", description = "The receiver of side effects: its state, pause, breaker, resend (docs/events.md)"),
    )
)]
pub struct ApiDoc;

/// `GET /api/openapi.json` (no sign-in needed: it holds no data).
pub(crate) async fn serve() -> axum::Json<Value> {
    axum::Json(document())
}

/// The document as JSON.
pub fn document() -> Value {
    serde_json::to_value(ApiDoc::openapi()).unwrap_or(Value::Null)
}

fn type_name(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "object".into(),
    };
    match schema.get("items") {
        Some(items) => format!("{base} of {}", type_name(items)),
        None => base,
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The document read into what the API page shows: its operations by tag, path and
/// method, and its schemas.
pub fn summary() -> crate::model::openapi::ApiDoc {
    let doc = document();
    let mut operations = Vec::new();
    for (path, ops) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in ops.as_object().into_iter().flatten() {
            operations.push(operation(path, method, op));
        }
    }
    operations.sort_by(|a, b| (&a.tag, &a.path, &a.method).cmp(&(&b.tag, &b.path, &b.method)));
    let schemas = doc["components"]["schemas"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, s)| schema(name, s))
        .collect();
    crate::model::openapi::ApiDoc {
        title: text(&doc["info"]["title"]),
        version: text(&doc["info"]["version"]),
        description: text(&doc["info"]["description"]),
        operations,
        schemas,
    }
}

/// One operation as the API page lists it.
fn operation(path: &str, method: &str, op: &Value) -> crate::model::openapi::Operation {
    let params = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| Field {
            name: format!("{} ({})", text(&p["name"]), text(&p["in"])),
            ty: type_name(&p["schema"]),
            required: p["required"].as_bool().unwrap_or(false),
            description: text(&p["description"]),
        })
        .collect();
    let body = op["requestBody"]["content"]["application/json"]
        .get("schema")
        .map(type_name);
    crate::model::openapi::Operation {
        method: method.to_uppercase(),
        path: path.to_string(),
        tag: op["tags"][0].as_str().unwrap_or_default().to_string(),
        description: text(&op["description"]),
        scope: scope(op),
        params,
        body,
        responses: responses(op),
    }
}

/// The scopes of an operation's API-key requirement, comma-separated.
fn scope(op: &Value) -> Option<String> {
    let first = op["security"].as_array()?.first()?;
    let scopes = first.get("api_key")?.as_array()?;
    Some(
        scopes
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Each response code with what it carries (`problem+json` for the shared problem).
fn responses(op: &Value) -> Vec<(String, String)> {
    op["responses"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(code, r)| {
            let desc = if r.get("$ref").is_some() {
                "problem+json".to_string()
            } else {
                let schema = r["content"]["application/json"].get("schema");
                format!(
                    "{} {}",
                    text(&r["description"]),
                    schema.map(type_name).unwrap_or_default()
                )
            };
            (code.clone(), desc.trim().to_string())
        })
        .collect()
}

/// One schema of the document's components, with its fields.
fn schema(name: &str, s: &Value) -> Schema {
    let required: Vec<&str> = s["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Schema {
        name: name.to_string(),
        description: text(&s["description"]),
        fields: s["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(f, v)| Field {
                name: f.clone(),
                ty: type_name(v),
                required: required.contains(&f.as_str()),
                description: text(&v["description"]),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    /// Every route that can take an `Idempotency-Key` (every write) has a name on the
    /// Idempotency page, so its scope never reads as a raw route there.
    #[test]
    fn every_keyed_route_has_an_operation_name() {
        let doc = super::document();
        let mut keyed = 0;
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                if !["post", "put", "patch", "delete"].contains(&method.as_str()) {
                    continue;
                }
                // A write with no API key (a trigger URL: its secret is in its path, and it
                // only ever moves a switch to one position) has no idempotency scope.
                if op["security"][0].get("api_key").is_none() {
                    continue;
                }
                keyed += 1;
                let route = format!("{} {path}", method.to_uppercase());
                let (name, via) = crate::model::idempotency::operation(&format!("http:{route}"));
                assert_ne!(name, route, "{route} has no operation name");
                assert_eq!(via, "REST API");
            }
        }
        assert!(keyed >= 10, "only {keyed} keyed routes were seen");
    }

    /// The inbox's keys in a path state the rule the server checks (the same constants).
    #[test]
    fn inbox_path_keys_state_their_rule() {
        use crate::server::domain::inbox::keys::{KEY_MAX_CHARS, KEY_PATTERN};
        let doc = super::document();
        let resolve = |s: &serde_json::Value| match s["$ref"].as_str() {
            Some(r) => doc["components"]["schemas"][r.rsplit('/').next().unwrap()].clone(),
            None => s.clone(),
        };
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            if !path.starts_with("/api/v1/inbox/") {
                continue;
            }
            for op in item.as_object().into_iter().flatten().map(|(_, op)| op) {
                for p in op["parameters"].as_array().into_iter().flatten() {
                    let name = p["name"].as_str().unwrap_or_default();
                    if p["in"] != "path" {
                        continue;
                    }
                    assert!(
                        ["tenant", "inbox", "uid", "message_id"].contains(&name),
                        "{path}: {name}"
                    );
                    let schema = resolve(&p["schema"]);
                    assert_eq!(schema["pattern"], KEY_PATTERN, "{path}: {name}");
                    assert_eq!(schema["maxLength"], KEY_MAX_CHARS, "{path}: {name}");
                    assert_eq!(schema["minLength"], 1, "{path}: {name}");
                    seen += 1;
                }
            }
        }
        assert!(seen >= 15, "only {seen} inbox path keys were seen");
    }

    /// Every `$ref` in the document names a schema or response it holds.
    #[test]
    fn every_reference_resolves() {
        fn walk(v: &serde_json::Value, refs: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(r) = m.get("$ref").and_then(|r| r.as_str()) {
                        refs.push(r.to_string());
                    }
                    m.values().for_each(|v| walk(v, refs));
                }
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, refs)),
                _ => {}
            }
        }
        let doc = super::document();
        let mut refs = Vec::new();
        walk(&doc, &mut refs);
        assert!(refs.len() > 20, "only {} references", refs.len());
        for r in refs {
            let pointer = r.trim_start_matches('#');
            assert!(doc.pointer(pointer).is_some(), "{r} names nothing");
        }
    }
}
