//! A real HAProxy, started by the test from a configuration it writes, and read through its
//! stats socket.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// The `haproxy` binary, if this machine has one (see [`super::tool`]).
pub fn binary() -> Option<PathBuf> {
    super::tool("haproxy", "apt-get install -y haproxy")
}

/// Skips the test (or, under CI, fails it) when HAProxy is not installed; else its path.
#[macro_export]
macro_rules! require_haproxy {
    () => {
        match $crate::support::haproxy::binary() {
            Some(binary) => binary,
            None => return,
        }
    };
}

/// An HAProxy running in the foreground (`-db`) as a child of the test; killed when dropped.
pub struct Haproxy {
    child: Child,
    dir: PathBuf,
}

impl Haproxy {
    /// Starts `binary` with `config`, in which `{dir}` is replaced by a directory of its own
    /// (for the stats socket: `stats socket {dir}/stats mode 600 level admin`).
    pub fn start(binary: &Path, config: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "tower-health-haproxy-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = config.replace("{dir}", dir.to_str().unwrap());
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, &config).unwrap();
        let check = Command::new(binary)
            .args(["-c", "-f"])
            .arg(&path)
            .output()
            .expect("run haproxy -c");
        assert!(
            check.status.success(),
            "haproxy refuses the configuration:\n{config}\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(binary)
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("haproxy.log")).unwrap())
            .spawn()
            .expect("start haproxy");
        Self { child, dir }
    }

    /// The stats socket's answer to `command` (`show stat`, `show servers state`); `None`
    /// while HAProxy is not listening yet.
    pub async fn command(&self, command: &str) -> Option<String> {
        let mut socket = UnixStream::connect(self.dir.join("stats")).await.ok()?;
        socket
            .write_all(format!("{command}\n").as_bytes())
            .await
            .ok()?;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), socket.read_to_string(&mut answer))
            .await
            .ok()?
            .ok()?;
        Some(answer)
    }

    /// What HAProxy wrote to its stderr, for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default()
    }

    /// Each server of `backend` as `show stat` shows it, by name.
    pub async fn servers(&self, backend: &str) -> HashMap<String, ServerStat> {
        let Some(csv) = self.command("show stat").await else {
            return HashMap::new();
        };
        let mut lines = csv.lines();
        let Some(header) = lines.next().and_then(|line| line.strip_prefix("# ")) else {
            return HashMap::new();
        };
        let columns: Vec<&str> = header.split(',').collect();
        let column = |name: &str| columns.iter().position(|column| *column == name).unwrap();
        let (px, sv) = (column("pxname"), column("svname"));
        let (status, weight) = (column("status"), column("weight"));
        let (stot, scur, slim) = (column("stot"), column("scur"), column("slim"));
        let last = [px, sv, status, weight, stot, scur, slim]
            .into_iter()
            .max()
            .unwrap();
        lines
            .map(|line| line.split(',').collect::<Vec<_>>())
            .filter(|fields| fields.len() > last)
            .filter(|fields| fields[px] == backend && !matches!(fields[sv], "BACKEND" | "FRONTEND"))
            .map(|fields| {
                let number = |index: usize| fields[index].parse().unwrap_or(0);
                (
                    fields[sv].to_owned(),
                    ServerStat {
                        status: fields[status].to_owned(),
                        weight: number(weight),
                        sessions_total: number(stot),
                        sessions_now: number(scur),
                        session_limit: number(slim),
                    },
                )
            })
            .collect()
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One server of a backend, as `show stat` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStat {
    /// `UP`, `DOWN`, `DOWN (agent)`, `DRAIN (agent)`, `MAINT`, `UP 1/2`, ...
    pub status: String,
    /// The effective weight.
    pub weight: u64,
    /// Sessions sent to it since HAProxy started (`stot`).
    pub sessions_total: u64,
    /// Sessions open now (`scur`).
    pub sessions_now: u64,
    /// Its `maxconn` (`slim`); 0 when it has none.
    pub session_limit: u64,
}

/// A port that was free a moment ago, for HAProxy's frontend.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Two servers, each `(application, agent)`, behind a frontend on `frontend`: an HTTP check of
/// `/health/ready` (`fall 3`, every 2 s) and the agent every 200 ms (so that its words reach
/// HAProxy within a test's patience), `weight 100` (the agent's percentages are of it), and
/// WebSockets allowed to sit idle for a whole test (`timeout tunnel`).
pub fn two_servers(frontend: u16, servers: [(SocketAddr, SocketAddr); 2]) -> String {
    let [(app1, agent1), (app2, agent2)] = servers;
    format!(
        "global
    stats socket {{dir}}/stats mode 600 level admin
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout tunnel 60s

frontend fe
    bind 127.0.0.1:{frontend}
    default_backend app

backend app
    balance roundrobin
    option httpchk GET /health/ready
    http-check expect status 200
    default-server check inter 2s fall 3 rise 1 agent-check agent-inter 200ms weight 100
    server app1 {app1} agent-port {port1}
    server app2 {app2} agent-port {port2}
",
        port1 = agent1.port(),
        port2 = agent2.port(),
    )
}
