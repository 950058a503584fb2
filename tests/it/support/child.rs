//! The examples as child processes: started with an environment, signalled, awaited with a
//! bound, and killed if the test ends first.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use super::eventually;
#[cfg(feature = "axum")]
use super::{Client, LIMIT, refused_addr};
#[cfg(feature = "axum")]
use std::net::SocketAddr;

/// The example binaries `cargo test` builds beside the test binaries.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --all-features`, which builds the \
         examples (with `--test`, build them first: `cargo build --all-features --examples`)",
        path.display()
    );
    path
}

/// The example `name` started on a free address with no database, a short drain (delay
/// 300 ms, close window 1 s, timeout 10 s) and then `env` (which may override any of it), once
/// its readiness passes.
#[cfg(feature = "axum")]
pub async fn ready_example(name: &str, env: &[(&str, String)]) -> (Example, SocketAddr) {
    let addr = refused_addr().await;
    (ready_example_at(name, addr, env).await, addr)
}

/// [`ready_example`] on `addr` (an instance started again where one ran before).
#[cfg(feature = "axum")]
pub async fn ready_example_at(name: &str, addr: SocketAddr, env: &[(&str, String)]) -> Example {
    let mut all = vec![
        ("LISTEN_ADDR", addr.to_string()),
        ("DATABASE_URL", String::new()),
        ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
        ("TOWER_HEALTH_DRAIN_DELAY", "300ms".into()),
        ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "1s".into()),
        ("TOWER_HEALTH_DRAIN_TIMEOUT", "10s".into()),
    ];
    all.extend(env.iter().cloned());
    let child = Example::spawn(name, &all);
    let http = Client::new();
    let up = eventually(LIMIT, || async {
        matches!(http.try_get(addr, "/health/ready").await, Ok(reply) if reply.status == http::StatusCode::OK)
    })
    .await;
    assert!(up, "the {name} example did not become ready");
    child
}

/// A running example. Its stderr is read from the start (a full pipe would block it), and it
/// is killed if the test ends, or fails, before it exits.
pub struct Example {
    child: Child,
    stderr: Option<JoinHandle<String>>,
}

impl Example {
    pub fn spawn(name: &str, env: &[(&str, String)]) -> Self {
        let mut command = Command::new(example(name));
        command
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("start the example");
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut stderr = String::new();
            let _ = pipe.read_to_string(&mut stderr);
            stderr
        });
        Self {
            child,
            stderr: Some(stderr),
        }
    }

    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits at most `limit` for the process to exit, and returns its status and all it wrote
    /// to stderr. Past `limit`, the process is killed and the test fails.
    pub async fn exit_within(mut self, limit: Duration) -> (ExitStatus, String) {
        let exited = eventually(limit, || {
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            async move { exited }
        })
        .await;
        if !exited {
            let _ = self.child.kill();
        }
        // At once: the process has exited or been killed, which closes its stderr.
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert!(exited, "still running after {limit:?}; stderr:\n{stderr}");
        (status, stderr)
    }
}

// The malformed corpus's (`tests/malformed.rs`, a binary of its own): unused by the modules of
// `tests/it`.
#[allow(dead_code)]
impl Example {
    /// The process's id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process at once, and returns all it wrote to stderr.
    pub fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.take().unwrap().join().unwrap()
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
