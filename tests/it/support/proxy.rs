//! The reverse proxies users put in front of a service (nginx, Caddy, Traefik), each started
//! by a test from the configuration the guide shows (`examples/proxies/`), rendered as
//! `envsubst` renders it, on free ports and in a directory of its own; and a stream of GETs
//! through one, each answer remembered with when it came.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

pub use super::proxy_config::{Kind, render};
use super::{LIMIT, eventually, get_through};

/// Its program, if this machine has one (see [`super::tool`]).
pub fn binary(kind: Kind) -> Option<PathBuf> {
    super::tool(kind.program(), kind.install())
}

/// Skips the test (or, under CI, fails it) when the proxy `kind` is not installed; else its
/// program's path.
#[macro_export]
macro_rules! require_proxy {
    ($kind:expr) => {
        match $crate::support::proxy::binary($kind) {
            Some(binary) => binary,
            None => return,
        }
    };
}

/// A proxy running in the foreground as a child of the test, listening on 127.0.0.1:`port`
/// in front of two instances; stopped when dropped.
pub struct Proxy {
    child: Child,
    dir: PathBuf,
    pub frontend: SocketAddr,
}

impl Proxy {
    /// Renders `kind`'s templates for `apps` behind 127.0.0.1:`port` into a directory of its
    /// own, checks them with the program where it can, and starts it.
    pub fn start(kind: Kind, binary: &Path, port: u16, [app1, app2]: [SocketAddr; 2]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "tower-health-{}-{}-{port}",
            kind.program(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (port, app1, app2) = (port.to_string(), app1.to_string(), app2.to_string());
        let vars = [
            ("PROXY_PORT", port.as_str()),
            ("APP1", app1.as_str()),
            ("APP2", app2.as_str()),
            ("PROXY_DIR", dir.to_str().unwrap()),
        ];
        for (name, template) in kind.templates() {
            let config = render(template, &vars).unwrap_or_else(|error| panic!("{name}: {error}"));
            std::fs::write(dir.join(name), config).unwrap();
        }
        if let Some(mut check) = kind.check(binary, &dir) {
            let checked = check.output().expect("check the configuration");
            assert!(
                checked.status.success(),
                "{} refuses the configuration in {}:\n{}{}",
                kind.program(),
                dir.display(),
                String::from_utf8_lossy(&checked.stdout),
                String::from_utf8_lossy(&checked.stderr)
            );
        }
        let child = kind
            .command(binary, &dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", kind.program()));
        Self {
            child,
            dir,
            frontend: ([127, 0, 0, 1], port.parse().unwrap()).into(),
        }
    }

    /// What the proxy logged, for a failure's message.
    pub fn log(&self) -> String {
        ["stdout.log", "stderr.log", "error.log"]
            .iter()
            .filter_map(|name| std::fs::read_to_string(self.dir.join(name)).ok())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until each of `servers` (the names the instances answer) has answered through
    /// the proxy; fails the test with what the proxy logged if one has not within [`LIMIT`].
    pub async fn wait_for(&self, servers: &[&str]) {
        let seen = Mutex::new(Vec::<String>::new());
        let all = eventually(LIMIT, || async {
            if let Ok(server) = get_through(self.frontend, "/").await {
                seen.lock().unwrap().push(server.trim().to_owned());
            }
            let seen = seen.lock().unwrap();
            servers
                .iter()
                .all(|server| seen.iter().any(|seen| seen == server))
        })
        .await;
        assert!(
            all,
            "not every one of {servers:?} answered through the proxy: {:?}\n{}",
            seen.lock().unwrap(),
            self.log()
        );
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // SIGTERM first: nginx's workers outlive a master killed outright.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One answer of a [`Load`]: when it came, and the server that answered or why it failed.
pub type Answer = (Instant, Result<String, String>);

/// Loops of GETs of `/` through a frontend, each on a connection of its own, until stopped.
pub struct Load {
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: Arc<AtomicBool>,
    loops: JoinSet<()>,
}

impl Load {
    /// `loops` loops of GETs through `frontend`.
    pub fn start(frontend: SocketAddr, loops: usize) -> Self {
        let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = JoinSet::new();
        for _ in 0..loops {
            let (answers, stop) = (answers.clone(), stop.clone());
            set.spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let answer = get_through(frontend, "/")
                        .await
                        .map(|body| body.trim().to_owned());
                    answers.lock().unwrap().push((Instant::now(), answer));
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        }
        Self {
            answers,
            stop,
            loops: set,
        }
    }

    /// The answers so far.
    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().unwrap().clone()
    }

    /// Stops the loops (each ends its request first) and returns every answer.
    pub async fn stop(mut self) -> Vec<Answer> {
        self.stop.store(true, Ordering::SeqCst);
        while let Some(result) = self.loops.join_next().await {
            result.unwrap();
        }
        self.answers()
    }
}
