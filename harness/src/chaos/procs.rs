//! The processes of a chaos run: DynamoDB Local (never killed: it is the stand-in for
//! AWS's storage, which does not lose acknowledged writes; outages are the proxy's), the
//! consoles (child `ops-console serve` processes, killed and restarted), and the receiver
//! of side effects that verifies their signatures and applies each `webhook-id` once.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use ops_console::server::outbound::signature::{verify, SigningSecret};

pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// The product binary, built beside this one.
pub fn console_binary() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = me.with_file_name("ops-console");
    if exe.exists() {
        Ok(exe)
    } else {
        Err(format!(
            "{} not found: build the console first (cargo leptos build)",
            exe.display()
        ))
    }
}

pub struct Console {
    pub port: u16,
    exe: PathBuf,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: Option<Child>,
}

impl Console {
    pub fn new(exe: PathBuf, port: u16, env: Vec<(String, String)>, log: PathBuf) -> Console {
        Console {
            port,
            exe,
            env,
            log,
            child: None,
        }
    }

    pub fn start(&mut self) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("serve")
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        // SAFETY: prctl in the child before exec; it touches no memory of the parent's.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.child = Some(
            cmd.spawn()
                .map_err(|e| format!("console did not start: {e}"))?,
        );
        Ok(())
    }

    /// SIGKILL, or SIGTERM when `gently`.
    pub fn stop(&mut self, gently: bool) {
        if let Some(mut c) = self.child.take() {
            if gently {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe {
                    libc::kill(c.id() as i32, libc::SIGTERM);
                }
            } else {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }

    pub async fn healthy(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            let ok = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok();
            if ok {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.stop(false);
    }
}

/// How the receiver behaves for a stretch of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weather {
    Fine,
    /// Answers only after longer than the consoles wait: they record "unknown" and send
    /// the same message again later (the receiver applies it once).
    Slow,
    /// Answers 503 to everything.
    Down,
}

/// The side-effect receiver, written as a customer would: verifies the Standard Webhooks
/// signature (a bad one is refused with 401 and counted), applies each `webhook-id` once
/// and drops repeats, answers 503 now and then, and goes slow or down for stretches.
pub struct Receiver {
    pub secret: SigningSecret,
    pub requests: AtomicU64,
    /// Answered 503 on purpose (the console must retry them).
    pub refused: AtomicU64,
    pub bad_signatures: AtomicU64,
    /// Requests per webhook-id that got through to the application logic.
    pub seen: Mutex<HashMap<String, u32>>,
    weather: AtomicU8,
    pub slow_stretches: AtomicU64,
    pub down_stretches: AtomicU64,
    /// Requests it is answering now and the most at once, slow answers left out: the
    /// consoles give up on those at their timeout and give the slot back while the
    /// receiver still sleeps on them.
    pub answering: AtomicU64,
    pub most_at_once: AtomicU64,
    /// When each request arrived.
    pub arrivals: Mutex<Vec<std::time::Instant>>,
}

/// A request counted in `answering` until dropped.
struct Answering<'a>(&'a Receiver);

impl<'a> Answering<'a> {
    fn enter(r: &'a Receiver) -> Answering<'a> {
        let now = r.answering.fetch_add(1, Ordering::SeqCst) + 1;
        r.most_at_once.fetch_max(now, Ordering::SeqCst);
        Answering(r)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.answering.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Receiver {
    pub fn new() -> Receiver {
        Receiver {
            secret: SigningSecret::generate(),
            requests: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            bad_signatures: AtomicU64::new(0),
            seen: Mutex::default(),
            weather: AtomicU8::new(0),
            slow_stretches: AtomicU64::new(0),
            down_stretches: AtomicU64::new(0),
            answering: AtomicU64::new(0),
            most_at_once: AtomicU64::new(0),
            arrivals: Mutex::default(),
        }
    }

    pub fn set_weather(&self, w: Weather) {
        match w {
            Weather::Slow => self.slow_stretches.fetch_add(1, Ordering::SeqCst),
            Weather::Down => self.down_stretches.fetch_add(1, Ordering::SeqCst),
            Weather::Fine => 0,
        };
        self.weather.store(w as u8, Ordering::SeqCst);
    }

    /// The most requests that arrived within any `window`.
    pub fn busiest(&self, window: Duration) -> usize {
        let mut at = self.arrivals.lock().map(|a| a.clone()).unwrap_or_default();
        at.sort();
        (0..at.len())
            .map(|i| at[i..].iter().take_while(|t| **t - at[i] < window).count())
            .max()
            .unwrap_or(0)
    }

    fn weather(&self) -> Weather {
        match self.weather.load(Ordering::SeqCst) {
            1 => Weather::Slow,
            2 => Weather::Down,
            _ => Weather::Fine,
        }
    }
}

pub async fn hook(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let n = r.requests.fetch_add(1, Ordering::SeqCst);
    if let Ok(mut at) = r.arrivals.lock() {
        at.push(std::time::Instant::now());
    }
    let weather = r.weather();
    let _answering = (!matches!(weather, Weather::Slow)).then(|| Answering::enter(&r));
    match weather {
        Weather::Down => {
            r.refused.fetch_add(1, Ordering::SeqCst);
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        Weather::Slow => tokio::time::sleep(Duration::from_millis(3_000)).await,
        Weather::Fine if n % 37 == 36 => {
            r.refused.fetch_add(1, Ordering::SeqCst);
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        Weather::Fine => {}
    }
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (id, ts) = (h("webhook-id"), h("webhook-timestamp"));
    let now = chrono::Utc::now().timestamp();
    let secrets = [r.secret.clone()];
    if verify(&secrets, &id, &ts, &body, &h("webhook-signature"), now).is_err() {
        r.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    if let Ok(mut seen) = r.seen.lock() {
        *seen.entry(id).or_default() += 1;
    }
    StatusCode::NO_CONTENT
}

/// Fine for 4 to 9 s, then slow or down for 3 to 7 s, and so on until `stop`; fine after.
pub async fn weather(r: Arc<Receiver>, seed: u64, stop: tokio::time::Instant) {
    let mut rng = ops_console::server::seed::Rng::new(seed ^ 0x5eed);
    while tokio::time::Instant::now() < stop {
        r.set_weather(Weather::Fine);
        tokio::time::sleep(Duration::from_millis(4_000 + rng.below(5_000))).await;
        let w = if rng.below(2) == 0 {
            Weather::Slow
        } else {
            Weather::Down
        };
        r.set_weather(w);
        tokio::time::sleep(Duration::from_millis(3_000 + rng.below(4_000))).await;
    }
    r.set_weather(Weather::Fine);
}

pub async fn start_receiver(r: Arc<Receiver>) -> Result<u16, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(r);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(port)
}
