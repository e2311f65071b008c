//! One DynamoDB Local per test binary; one app (own table prefix, own clock) per test.

use ops_console::model::api_keys::ApiScope;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use leptos::server_fn::ServerFn;
use tower::ServiceExt;

use ops_console::model::users::Role;
use ops_console::server::clock::Clock;
use ops_console::server::config::Config;
use ops_console::server::dynamo_local::{self, DynamoLocal};
use ops_console::server::ids::random_hex;
use ops_console::server::services::idempotency::Secret;
use ops_console::server::startup;
use ops_console::server::state::AppState;
use ops_console::server::store::{schema, Connection, Store};

static LOCAL: OnceLock<DynamoLocal> = OnceLock::new();
static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// `OPS_TEST_DYNAMODB` points the tests at a running DynamoDB; else one is started.
fn endpoint() -> String {
    if let Ok(e) = std::env::var("OPS_TEST_DYNAMODB") {
        return e;
    }
    LOCAL
        .get_or_init(|| {
            DynamoLocal::start(dynamo_local::Options {
                jar: None,
                data_dir: None,
                port: None,
                log_file: None,
            })
            .expect("DynamoDB Local starts (npm ci; Java 17)")
        })
        .endpoint()
}

struct LogWriter;

/// The whole run's log, for the scan of `make test` (no email, phone or secret in it).
fn log_file() -> &'static Mutex<Option<std::fs::File>> {
    static FILE: OnceLock<Mutex<Option<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let _ = std::fs::create_dir_all("target/test-logs");
        Mutex::new(std::fs::File::create("target/test-logs/it.log").ok())
    })
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        if let Some(f) = log_file().lock().unwrap().as_mut() {
            let _ = f.write_all(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every log line of this test binary so far (all tests share one subscriber).
pub fn captured_logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

fn init_logs() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug,ops_console::traces=off,aws_smithy_runtime=info,aws_config=info,hyper=info,h2=info,aws_sdk_dynamodb=info,aws_smithy_http_client=info,hyper_util=info,rustls=info,aws_runtime=info,tower=info")
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .try_init();
    });
}

#[derive(Clone)]
pub struct TestApp {
    pub state: AppState,
    pub store: Store,
    pub clock: Clock,
    router: Router,
    /// The server secret (a second console on the same tables shares it).
    secret: Vec<u8>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// An app whose settings `tweak` changes first (a webhook URL, a shorter lease, ...).
pub async fn spawn_app_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_on(&endpoint(), tweak).await
}

/// An app on the DynamoDB at `endpoint` (one a test started itself).
pub async fn spawn_app_at(endpoint: &str) -> TestApp {
    spawn_app_on(endpoint, |_| {}).await
}

/// A DynamoDB that fails as AWS's does, in front of this run's DynamoDB Local; no faults
/// until the test switches them on.
pub async fn faulty_dynamodb() -> dynamodb_faults::Proxy {
    init_logs();
    dynamodb_faults::Proxy::start(&endpoint(), dynamodb_faults::Faults::default(), 7)
        .await
        .expect("the proxy starts")
}

/// An app whose store goes through `proxy`; `direct` is the same tables without it (to
/// set up and check what is really stored).
pub async fn spawn_app_via(
    proxy: &dynamodb_faults::Proxy,
    tweak: impl FnOnce(&mut Config),
) -> (TestApp, Store) {
    let app = spawn_app_on(&proxy.endpoint(), tweak).await;
    let direct = Store::connect(Connection {
        endpoint: Some(&endpoint()),
        region: &app.state.config.dynamodb.region,
        table_prefix: &app.state.config.dynamodb.table_prefix,
        env: app.state.config.env.as_str(),
    })
    .await;
    (app, direct)
}

/// Another store on the tables of `app`, through `endpoint` (a second console's).
pub async fn store_for(app: &TestApp, endpoint: &str) -> Store {
    Store::connect(Connection {
        endpoint: Some(endpoint),
        region: &app.state.config.dynamodb.region,
        table_prefix: &app.state.config.dynamodb.table_prefix,
        env: app.state.config.env.as_str(),
    })
    .await
}

/// The tests whose assertions depend on how fast DynamoDB Local answers (a load they make
/// and time, conflicts they count) run alone: DynamoDB Local serializes every request, and
/// another test's load makes their transactions overlap more than AWS's would. Every other
/// test shares the lock (taken when its thread makes its first app, held until the test's
/// thread ends).
fn exclusive() -> std::sync::Arc<tokio::sync::RwLock<()>> {
    static LOCK: OnceLock<std::sync::Arc<tokio::sync::RwLock<()>>> = OnceLock::new();
    LOCK.get_or_init(Default::default).clone()
}

enum Held {
    Shared(#[allow(dead_code)] tokio::sync::OwnedRwLockReadGuard<()>),
    Alone(#[allow(dead_code)] tokio::sync::OwnedRwLockWriteGuard<()>),
}

thread_local! {
    static HELD: std::cell::RefCell<Option<Held>> = const { std::cell::RefCell::new(None) };
}

/// Call first in a test that must have DynamoDB Local to itself.
pub async fn alone() {
    // A share still held here is a previous test's (one thread runs every test when
    // `--test-threads=1`): nothing runs beside this one then.
    HELD.with(|h| h.borrow_mut().take());
    let guard = exclusive().write_owned().await;
    HELD.with(|h| *h.borrow_mut() = Some(Held::Alone(guard)));
}

async fn share() {
    if HELD.with(|h| h.borrow().is_none()) {
        let guard = exclusive().read_owned().await;
        HELD.with(|h| *h.borrow_mut() = Some(Held::Shared(guard)));
    }
}

async fn spawn_app_on(endpoint: &str, tweak: impl FnOnce(&mut Config)) -> TestApp {
    init_logs();
    share().await;
    let endpoint = endpoint.to_string();
    let prefix = format!("t{}_", random_hex(6));
    let mut config = Config::for_tests(&endpoint, &prefix);
    // The tests' receivers and alert channels listen on this machine.
    config.operations.outbound_allowed_networks = "127.0.0.0/8, ::1".into();
    // The due group on `due-index` and a day's events over 64 shards, as the next release
    // writes them by default; tests of the release before's layout turn them off.
    config.events.due_index = true;
    config.events.day_shards = ops_console::server::store::events::DAY_SHARDS;
    tweak(&mut config);
    let store = Store::connect(Connection {
        endpoint: Some(&endpoint),
        region: &config.dynamodb.region,
        table_prefix: &prefix,
        env: config.env.as_str(),
    })
    .await;
    store
        .wait_until_reachable(std::time::Duration::from_secs(60))
        .await
        .expect("DynamoDB Local answers");
    schema::bootstrap(&store).await.expect("bootstrap");
    let clock = Clock::default();
    let secret_bytes = format!("test-secret-{}", random_hex(16)).into_bytes();
    let secret = Secret::new(secret_bytes.clone());
    let state = AppState::new(config, store, clock.clone(), secret);
    let router = startup::app(state.clone());
    TestApp {
        // The console's own store: its page cursors open behind the router.
        store: state.store.clone(),
        state,
        clock,
        router,
        secret: secret_bytes,
    }
}

impl TestApp {
    /// Another console on the same tables, settings, secret and clock that reaches
    /// DynamoDB through `endpoint` (a proxy of its own: one console slow, another not).
    pub async fn console_via(&self, endpoint: &str) -> TestApp {
        let store = store_for(self, endpoint).await;
        let config = (*self.state.config).clone();
        let secret = Secret::new(self.secret.clone());
        let state = AppState::new(config, store, self.clock.clone(), secret);
        let router = startup::app(state.clone());
        TestApp {
            store: state.store.clone(),
            state,
            clock: self.clock.clone(),
            router,
            secret: self.secret.clone(),
        }
    }

    /// Moves the clock (every console's) to noon of the next UTC day: what a test makes
    /// and reads by the day stays in one day whatever the hour it runs at.
    pub fn stand_at_noon(&self) {
        let now = self.clock.now();
        let noon = (now.date_naive() + chrono::Duration::days(1))
            .and_hms_opt(12, 0, 0)
            .expect("noon exists")
            .and_utc();
        self.clock.advance(noon - now);
    }

    /// Moves the clock (every console's) to `into` past the start of the next UTC hour:
    /// what a test counts by the hour stays in one hour whatever the minute it runs at.
    pub fn stand_in_next_hour(&self, into: chrono::Duration) {
        let into_hour = self.clock.now().timestamp() % 3600;
        self.clock
            .advance(chrono::Duration::seconds(3600 - into_hour) + into);
    }

    /// Another console on the same tables, settings, secret and clock: its own services
    /// (its own dispatcher, caches and leases), as a second process would have.
    pub fn second_console(&self) -> TestApp {
        self.second_console_with(|_| {})
    }

    /// A second console whose own settings differ by `tweak`.
    pub fn second_console_with(&self, tweak: impl FnOnce(&mut Config)) -> TestApp {
        let mut config = (*self.state.config).clone();
        tweak(&mut config);
        let secret = Secret::new(self.secret.clone());
        let state = AppState::new(config, self.store.clone(), self.clock.clone(), secret);
        let router = startup::app(state.clone());
        TestApp {
            state,
            store: self.store.clone(),
            clock: self.clock.clone(),
            router,
            secret: self.secret.clone(),
        }
    }
}

/// A response with its body read.
pub struct Answer {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn location(&self) -> Option<&str> {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The session cookie this answer sets, if any.
    pub fn session_cookie(&self) -> Option<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("ops_session="))
            .map(|c| c.split(';').next().unwrap_or("").to_string())
            .filter(|v| !v.is_empty())
    }
}

pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b' ' => "+".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl TestApp {
    pub async fn send(&self, req: Request<Body>) -> Answer {
        let what = format!("{} {}", req.method(), req.uri());
        let before = self.store.requests().snapshot();
        // A request that never answers fails its test instead of hanging the run.
        let res: Response = tokio::time::timeout(
            std::time::Duration::from_secs(90),
            self.router.clone().oneshot(req),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{what}: no answer within 90 s; DynamoDB requests before {before:?}, now {:?}",
                self.store.requests().snapshot()
            )
        })
        .expect("router answers");
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = axum::body::to_bytes(res.into_body(), 16 << 20)
            .await
            .expect("body");
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let mut req = Request::get(path).header(header::HOST, "localhost");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, format!("ops_session={c}"));
        }
        self.send(req.body(Body::empty()).unwrap()).await
    }

    /// A same-origin form post, as a browser with JavaScript would send it.
    pub async fn post_form(&self, path: &str, body: String, cookie: Option<&str>) -> Answer {
        let mut req = Request::post(path)
            .header(header::HOST, "localhost")
            .header(header::ORIGIN, "http://localhost")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, format!("ops_session={c}"));
        }
        self.send(req.body(Body::from(body)).unwrap()).await
    }

    /// Calls server function `F` with form fields, the way `ActionForm` does.
    pub async fn call<F: ServerFn>(&self, fields: &[(&str, &str)], cookie: Option<&str>) -> Answer {
        self.post_form(F::PATH, form(fields), cookie).await
    }

    /// Creates a user with a random password, as the command line on the server does (it
    /// makes admins where the console may not); returns the password.
    pub async fn add_user(&self, name: &str, role: Role) -> String {
        let password = format!("pw-{}", random_hex(10));
        self.state
            .users
            .clone()
            .with_four_eyes(false)
            .add_user(name, role, &password, "test")
            .await
            .expect("user added");
        password
    }

    pub async fn login(&self, name: &str, password: &str) -> Answer {
        self.post_form(
            "/login",
            form(&[("name", name), ("password", password), ("next", "/")]),
            None,
        )
        .await
    }

    /// A signed-in user of `role`; returns the session cookie value.
    pub async fn session_as(&self, name: &str, role: Role) -> String {
        let password = self.add_user(name, role).await;
        let answer = self.login(name, &password).await;
        answer
            .session_cookie()
            .unwrap_or_else(|| panic!("{name} signs in: {:?}", answer.location()))
    }
}

impl TestApp {
    /// A new API key with these scopes.
    pub async fn api_key(&self, scopes: &[&str]) -> String {
        let scopes: Vec<ApiScope> = scopes
            .iter()
            .map(|s| ApiScope::parse(s).unwrap_or_else(|| panic!("no scope {s}")))
            .collect();
        self.state
            .api_keys
            .create_api_key(&format!("k-{}", random_hex(4)), &scopes, 30, "test")
            .await
            .expect("api key")
    }

    /// A JSON POST as a machine client sends it.
    pub async fn post_json(&self, path: &str, key: &str, body: impl Into<Body>) -> Answer {
        self.send(
            Request::post(path)
                .header(header::HOST, "localhost")
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.into())
                .unwrap(),
        )
        .await
    }

    /// A JSON POST with an `Idempotency-Key`, as a machine client sends a write.
    pub async fn post_json_with_key_header(
        &self,
        path: &str,
        key: &str,
        idempotency_key: &str,
        body: String,
    ) -> Answer {
        self.send(
            Request::post(path)
                .header(header::HOST, "localhost")
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header("idempotency-key", idempotency_key)
                .body(Body::from(body))
                .unwrap(),
        )
        .await
    }

    /// Sets both kill switches, as an admin would (the data a test starts from: never held
    /// for a second admin's approval).
    pub async fn set_switches(&self, safe_mode: bool, automation_enabled: bool) {
        use ops_console::model::kill_switches::Switch;
        use ops_console::server::domain::kill_switches::ChangeRequest;
        use ops_console::server::services::kill_switches::{Origin, Switches, Ttls};
        let switches = Switches::new(
            self.store.clone(),
            self.clock.clone(),
            Ttls::from(&self.state.config.ttl),
        );
        for (switch, enable) in [
            (Switch::SafeMode, safe_mode),
            (Switch::AutomationEnabled, automation_enabled),
        ] {
            let current = switches.load().await.unwrap();
            if current.get(switch).enabled == enable {
                continue;
            }
            let req = ChangeRequest {
                switch,
                enable,
                expected_version: current.version,
                reason: "test setup".into(),
                confirmed: true,
                ends: None,
                emergency: false,
            };
            let id = random_hex(8);
            let origin = Origin {
                actor: "test",
                idempotency_key: &id,
                action_id: &id,
            };
            switches
                .change(&req, &origin)
                .await
                .expect("switch changed");
        }
    }

    /// Every item of every table of this app, as text (for "is X stored anywhere" checks).
    pub async fn dump_tables(&self) -> String {
        let client = self.store.client();
        let tables: Vec<String> = ops_console::server::store::schema::ALL
            .iter()
            .map(|t| self.store.table(t.base))
            .collect();
        let mut out = String::new();
        for table in &tables {
            let mut start = None;
            loop {
                let page = client
                    .scan()
                    .table_name(table)
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .unwrap();
                for item in page.items.unwrap_or_default() {
                    out.push_str(&format!("{table}: {item:?}\n"));
                }
                match page.last_evaluated_key {
                    Some(k) if !k.is_empty() => start = Some(k),
                    _ => break,
                }
            }
        }
        out
    }
}

impl TestApp {
    /// Any request as a machine client sends it (`body` JSON, or empty).
    pub async fn api(&self, method: &str, path: &str, key: &str, body: Option<String>) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {key}"));
        if body.is_some() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        self.send(req.body(body.map(Body::from).unwrap_or_default()).unwrap())
            .await
    }
}

/// Percent-encodes one path segment or query value.
pub fn pct(s: &str) -> String {
    enc(s).replace('+', "%20")
}

/// The inbox's keys of a test, which are always valid.
pub mod keys {
    use ops_console::server::domain::inbox::keys::{
        CategoryKey, InboxKey, MessageKey, TenantKey, UserKey,
    };

    pub fn tk(k: &str) -> TenantKey {
        TenantKey::parse(k).unwrap()
    }

    pub fn ik(k: &str) -> InboxKey {
        InboxKey::parse(k).unwrap()
    }

    pub fn uk(k: &str) -> UserKey {
        UserKey::parse(k).unwrap()
    }

    pub fn ck(k: &str) -> CategoryKey {
        CategoryKey::parse(k).unwrap()
    }

    pub fn mk(k: &str) -> MessageKey {
        MessageKey::parse(k).unwrap()
    }
}

/// Removes, as DynamoDB's TTL would, every inbox item expired at `at` (Unix seconds),
/// through `direct`: how many it removed.
pub async fn sweep_inbox(direct: &Store, at: i64) -> usize {
    let (mut deleted, mut start) = (0, None);
    loop {
        let (_, d, next) = ops_console::server::store::inbox::stream::sweep_page(direct, at, start)
            .await
            .unwrap();
        deleted += d;
        match next {
            Some(k) => start = Some(k),
            None => return deleted,
        }
    }
}
