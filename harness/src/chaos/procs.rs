//! The processes of a chaos run: DynamoDB Local (never killed: it is the stand-in for
//! AWS's storage, which does not lose acknowledged writes; outages are the proxy's), the
//! consoles (child `ops-console serve` processes, killed and restarted), and the webhook
//! receiver that counts side effects by their `Idempotency-Key`.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

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

/// The side-effect receiver: applies each `Idempotency-Key` once (as a real receiver
/// should), counts every request, and now and then answers 503 before applying anything.
#[derive(Default)]
pub struct Receiver {
    pub requests: AtomicU64,
    /// Answered 503 on purpose (the console must retry them).
    pub refused: AtomicU64,
    pub seen: Mutex<HashMap<String, u32>>,
}

pub async fn hook(State(r): State<Arc<Receiver>>, headers: HeaderMap) -> StatusCode {
    let n = r.requests.fetch_add(1, Ordering::SeqCst);
    if n % 37 == 36 {
        r.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if let Ok(mut seen) = r.seen.lock() {
        *seen.entry(key).or_default() += 1;
    }
    StatusCode::OK
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
