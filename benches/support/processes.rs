//! The orchestrator's side of the HAProxy benches, shared by `benches/rollout.rs` and
//! `benches/weights.rs` (which include this file with `#[path]`): the instances as child
//! processes of the bench's own binary (`support/instance.rs`), their logs read as they come,
//! and an HAProxy from a configuration, read through its stats socket (`show stat`).

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixStream};
use tokio::process::{Child, Command};

type BoxError = Box<dyn Error>;

/// How often [`Haproxy::both_up`] and [`wait_ready`] look again.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// `variable`'s path, or `name` found on the `PATH` (or in `/usr/sbin`).
pub(crate) fn binary(variable: &str, name: &str) -> Result<PathBuf, BoxError> {
    if let Some(path) = std::env::var_os(variable) {
        return Ok(path.into());
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!("{name} not found (apt-get install -y {name}, or set {variable})").into()
        })
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|loadavg| {
            loadavg
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A port that was free a moment ago.
pub(crate) fn free_port() -> Result<u16, BoxError> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Lines a child wrote, each with when it was read; and when its stream closed (its exit).
#[derive(Default)]
pub(crate) struct Lines {
    pub(crate) lines: Vec<(Instant, String)>,
    pub(crate) closed: Option<Instant>,
}

impl Lines {
    /// What a child wrote so far, taken.
    pub(crate) fn take(lines: &Mutex<Self>) -> Self {
        std::mem::take(&mut *lines.lock().unwrap())
    }
}

/// Reads `stream` line by line into a shared [`Lines`], stamping each line, until it closes.
pub(crate) fn collect_lines(
    stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> Arc<Mutex<Lines>> {
    let collected = Arc::new(Mutex::new(Lines::default()));
    let writer = Arc::clone(&collected);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            writer.lock().unwrap().lines.push((Instant::now(), line));
        }
        writer.lock().unwrap().closed = Some(Instant::now());
    });
    collected
}

/// One running instance, killed if the scenario ends before it exits.
pub(crate) struct Instance {
    pub(crate) name: &'static str,
    pub(crate) listen: u16,
    pub(crate) agent: u16,
    pub(crate) child: Child,
    pub(crate) stderr: Arc<Mutex<Lines>>,
}

impl Instance {
    /// Starts an instance (this binary, `--instance`) with `env` and no other
    /// `TOWER_HEALTH_*` (nor `BALDUR_*`) variable from this process's environment, so that a
    /// configuration is exactly what its variables say.
    pub(crate) fn spawn(
        name: &'static str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, BoxError> {
        let (listen, agent) = (free_port()?, free_port()?);
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("--instance")
            .arg(format!("127.0.0.1:{listen}"))
            .arg(agent.to_string());
        for (variable, _) in std::env::vars_os() {
            let variable = variable.to_string_lossy();
            if variable.starts_with("TOWER_HEALTH_") || variable.starts_with("BALDUR_") {
                command.env_remove(&*variable);
            }
        }
        command.envs(env);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = collect_lines(child.stderr.take().ok_or("stderr is piped")?);
        Ok(Self {
            name,
            listen,
            agent,
            child,
            stderr,
        })
    }

    /// Whether `/health/ready` answers 200 now.
    async fn is_ready(&self) -> bool {
        answers_ok(self.listen, "/health/ready").await
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends it `signal` (`TERM`, `USR1`).
    pub(crate) fn signal(&self, signal: &str) -> Result<(), BoxError> {
        let pid = self.child.id().ok_or("the instance has exited already")?;
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()?;
        if !status.success() {
            return Err(format!("kill -{signal} {pid} failed").into());
        }
        Ok(())
    }

    /// Its stderr so far, for an error's message.
    fn log(&self) -> String {
        let lines = self.stderr.lock().unwrap();
        lines
            .lines
            .iter()
            .map(|(_, line)| line.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Waits until every instance answers `/health/ready` with 200, `limit` after `started` at
/// most.
pub(crate) async fn wait_ready(
    instances: &mut [Instance],
    started: Instant,
    limit: Duration,
) -> Result<(), BoxError> {
    for instance in instances {
        while !instance.is_ready().await {
            if instance.exited() || started.elapsed() > limit {
                return Err(
                    format!("{} never became ready:\n{}", instance.name, instance.log()).into(),
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
    Ok(())
}

/// An HAProxy running in the foreground (`-db`), its stdout (the access log, if the
/// configuration logs to stdout) in a file, its stderr (the servers' state changes) read as
/// it comes.
pub(crate) struct Haproxy {
    pub(crate) child: Child,
    dir: PathBuf,
    pub(crate) stderr: Arc<Mutex<Lines>>,
}

impl Haproxy {
    /// Checks `config` (`haproxy -c`) and starts it from `dir/haproxy.cfg`; the stats socket
    /// must be `dir/stats`.
    pub(crate) fn start(binary: &Path, dir: &Path, config: &str) -> Result<Self, BoxError> {
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, config)?;
        let check = std::process::Command::new(binary)
            .args(["-c", "-q", "-f"])
            .arg(&path)
            .output()?;
        if !check.status.success() {
            return Err(format!(
                "haproxy refuses the configuration:\n{config}\n{}",
                String::from_utf8_lossy(&check.stderr)
            )
            .into());
        }
        let mut child = Command::new(binary)
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("access.log"))?)
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = collect_lines(child.stderr.take().ok_or("stderr is piped")?);
        Ok(Self {
            child,
            dir: dir.to_owned(),
            stderr,
        })
    }

    /// Each server of backend `app` as `show stat` shows it; empty while HAProxy is not
    /// listening yet.
    pub(crate) async fn servers(&self) -> BTreeMap<String, ServerStat> {
        let ask = async {
            let mut socket = UnixStream::connect(self.dir.join("stats")).await?;
            socket.write_all(b"show stat\n").await?;
            let mut answer = String::new();
            socket.read_to_string(&mut answer).await?;
            Ok::<_, std::io::Error>(answer)
        };
        match tokio::time::timeout(Duration::from_secs(2), ask).await {
            Ok(Ok(csv)) => ServerStat::parse(&csv),
            _ => BTreeMap::new(),
        }
    }

    /// Waits until both servers are in at their full weight, each check heard (and each
    /// agent check, `with_agent`), `limit` after `started` at most.
    pub(crate) async fn both_up(
        &self,
        with_agent: bool,
        started: Instant,
        limit: Duration,
    ) -> Result<(), BoxError> {
        loop {
            let servers = self.servers().await;
            let ready = |stat: &ServerStat| {
                stat.status == "UP"
                    && stat.weight == 100
                    && stat.check == "L7OK"
                    && (!with_agent || stat.agent == "L7OK")
            };
            if servers.len() == 2 && servers.values().all(ready) {
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(format!(
                    "HAProxy never had both servers UP at weight 100: {servers:?}"
                )
                .into());
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// One server of the backend, as `show stat` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ServerStat {
    /// `UP`, `DOWN`, `DOWN (agent)`, `DRAIN (agent)`, `MAINT`, `UP 1/2`, ...
    pub(crate) status: String,
    pub(crate) weight: u32,
    /// The last checks' results (`L7OK`, `L4CON`, ...).
    pub(crate) check: String,
    pub(crate) agent: String,
    /// Sessions (requests, in HTTP mode) sent to it so far.
    pub(crate) sessions: u64,
}

impl ServerStat {
    fn parse(csv: &str) -> BTreeMap<String, Self> {
        let mut lines = csv.lines();
        let Some(header) = lines.next().and_then(|line| line.strip_prefix("# ")) else {
            return BTreeMap::new();
        };
        let columns: Vec<&str> = header.split(',').collect();
        let column = |name: &str| columns.iter().position(|column| *column == name);
        let (
            Some(px),
            Some(sv),
            Some(status),
            Some(weight),
            Some(check),
            Some(agent),
            Some(sessions),
        ) = (
            column("pxname"),
            column("svname"),
            column("status"),
            column("weight"),
            column("check_status"),
            column("agent_status"),
            column("stot"),
        )
        else {
            return BTreeMap::new();
        };
        lines
            .map(|line| line.split(',').collect::<Vec<_>>())
            .filter(|fields| fields.len() == columns.len())
            .filter(|fields| fields[px] == "app" && !matches!(fields[sv], "BACKEND" | "FRONTEND"))
            .map(|fields| {
                let stat = Self {
                    status: fields[status].to_owned(),
                    weight: fields[weight].parse().unwrap_or(0),
                    check: fields[check].to_owned(),
                    agent: fields[agent].to_owned(),
                    sessions: fields[sessions].parse().unwrap_or(0),
                };
                (fields[sv].to_owned(), stat)
            })
            .collect()
    }
}

/// `46548` as `46,548`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Whether a GET of `path` on 127.0.0.1:`port` answers 200 now (within 2 s).
pub(crate) async fn answers_ok(port: u16, path: &str) -> bool {
    let ask = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: bench\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer.split(|&byte| byte == b' ').nth(1) == Some(b"200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), ask).await,
        Ok(Ok(true))
    )
}

/// Runs `scenario` in a new folder under the temporary directory named after `bench`; then
/// writes its logs there (`write_logs`) and keeps it when `keep`, or removes it.
pub(crate) async fn in_scratch_folder<T, F>(
    bench: &str,
    keep: bool,
    scenario: impl FnOnce(PathBuf) -> F,
    write_logs: impl FnOnce(&T, &Path) -> std::io::Result<()>,
) -> Result<T, BoxError>
where
    F: std::future::Future<Output = Result<T, BoxError>>,
{
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let dir = std::env::temp_dir().join(format!(
        "tower-health-{bench}-{}-{}",
        std::process::id(),
        since_epoch.as_millis()
    ));
    std::fs::create_dir_all(&dir)?;
    let result = scenario(dir.clone()).await;
    if keep {
        if let Ok(outcome) = &result {
            write_logs(outcome, &dir)?;
        }
        println!("   (kept: {})", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
