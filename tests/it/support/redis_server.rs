//! Redis for the tests: the shared one on 127.0.0.1:6379 (never stopped, never flushed: each
//! test uses keys of its own), and servers of a test's own that it stops and starts.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{LIMIT, bounded, eventually};

/// The Redis the tests share (`TEST_REDIS_URL`, default the local one).
pub fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A connection to the Redis at `url`, for a test's own commands.
pub async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    bounded("connecting", client.get_multiplexed_async_connection())
        .await
        .unwrap()
}

/// A key prefix no other test (nor another run of this one) uses.
pub fn unique_prefix(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "tower-health-test:{test}:{}:{nanos}:{}:",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `addr` answers `PING` with `+PONG`, within a second.
pub async fn answers_ping(addr: SocketAddr) -> bool {
    let ping = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"PING\r\n").await.ok()?;
        let mut reply = [0; 7];
        stream.read_exact(&mut reply).await.ok()?;
        Some(&reply == b"+PONG\r\n")
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), ping).await,
        Ok(Some(true))
    )
}

/// Whether the shared Redis answers. Under `CI` an unreachable one fails the test instead of
/// skipping it.
pub async fn redis_available() -> bool {
    let url = redis_url();
    let addr = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .expect("TEST_REDIS_URL is redis://<ip>:<port>");
    if answers_ping(addr).await {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Redis at {url} is unreachable and CI is set; start it (src/docs/architecture.md, 'Running the tests')"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: Redis at {url} is unreachable; set CI to make this a failure"
    );
    false
}

/// Skips the test (or, under CI, fails it) when Redis is not there.
#[macro_export]
macro_rules! require_redis {
    () => {
        if !$crate::support::redis_server::redis_available().await {
            return;
        }
    };
}

/// A `redis-server` of the test's own on a port of its own, to stop and start again. Killed
/// when dropped.
pub struct RedisServer {
    pub addr: SocketAddr,
    extra: Vec<String>,
    child: Option<Child>,
}

impl RedisServer {
    /// A port nothing listens on yet; [`RedisServer::start`] starts the server there.
    pub async fn reserve() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        Self {
            addr,
            extra: Vec::new(),
            child: None,
        }
    }

    /// Started on a port of its own, with `extra` arguments (`--requirepass`, say).
    pub async fn started(extra: &[&str]) -> Self {
        let mut server = Self::reserve().await;
        server.extra = extra.iter().map(|arg| (*arg).to_owned()).collect();
        server.start().await;
        server
    }

    /// Started speaking TLS only, with the self-signed certificate of `tests/data` (which
    /// no client trusts).
    #[cfg(feature = "rustls")]
    pub async fn started_tls() -> Self {
        let mut server = Self::reserve().await;
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        server.extra = vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            server.addr.port().to_string(),
            "--tls-cert-file".into(),
            format!("{data}/redis-tls-cert.pem"),
            "--tls-key-file".into(),
            format!("{data}/redis-tls-key.pem"),
            "--tls-auth-clients".into(),
            "no".into(),
        ];
        server.start().await;
        server
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Starts the server (again) and waits until it answers.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new("redis-server")
            .args(["--port", &self.addr.port().to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        self.child = Some(child);
        let addr = self.addr;
        let password = !self.extra.is_empty();
        let up = eventually(LIMIT, || async move {
            // With a password (PING answers -NOAUTH) or TLS: a connection is enough.
            if !password {
                answers_ping(addr).await
            } else {
                TcpStream::connect(addr).await.is_ok()
            }
        })
        .await;
        assert!(
            up,
            "redis-server on {} did not start within {LIMIT:?}",
            self.addr
        );
    }

    /// Kills the server and waits for it to exit: its port is closed.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
