//! Redis topologies of a test's own: a Redis Cluster of three primaries, and a primary with
//! its replica behind a Sentinel. Every process is killed, and every file removed, when the
//! value is dropped (a failing test included).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use super::redis_server::answers_ping;
use super::{LIMIT, eventually};

/// Ports nothing listens on: held until all are chosen, so that they differ.
fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().unwrap().port())
        .collect()
}

/// A directory of its own under the system's temporary one, for the servers' files.
fn scratch_dir(what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tower-health-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `redis-server` with `args`, quiet, writing nothing to disk but what `args` ask.
fn redis_server(args: &[String]) -> Child {
    Command::new("redis-server")
        .args(args)
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--daemonize", "no", "--loglevel", "warning"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server is installed")
}

/// Sends `command` to the server at `addr` on a connection of its own, within [`LIMIT`].
pub async fn command<T: redis::FromRedisValue>(
    addr: SocketAddr,
    command: &redis::Cmd,
) -> redis::RedisResult<T> {
    command_as(addr, None, command).await
}

/// [`command`], authenticated with `password` if there is one.
pub async fn command_as<T: redis::FromRedisValue>(
    addr: SocketAddr,
    password: Option<&str>,
    command: &redis::Cmd,
) -> redis::RedisResult<T> {
    let auth = password.map_or_else(String::new, |password| format!(":{password}@"));
    let client = redis::Client::open(format!("redis://{auth}{addr}"))?;
    let sent = async {
        let mut connection = client.get_multiplexed_async_connection().await?;
        command.query_async(&mut connection).await
    };
    tokio::time::timeout(LIMIT, sent)
        .await
        .unwrap_or_else(|_| panic!("{addr} did not answer within {LIMIT:?}"))
}

/// Waits until every server of `addrs` answers `PING` (authenticated with `password`).
async fn wait_for_ping(addrs: &[SocketAddr], password: Option<&str>) {
    for &addr in addrs {
        let up = eventually(LIMIT, || async move {
            match password {
                None => answers_ping(addr).await,
                Some(_) => command_as::<String>(addr, password, &redis::cmd("PING"))
                    .await
                    .is_ok(),
            }
        })
        .await;
        assert!(up, "redis-server on {addr} did not start within {LIMIT:?}");
    }
}

/// `--requirepass` (and `--masterauth`, for a server that may replicate) when `password` is
/// given.
fn auth_args(password: Option<&str>, replicates: bool) -> Vec<String> {
    let Some(password) = password else {
        return Vec::new();
    };
    let mut args = vec!["--requirepass".to_owned(), password.to_owned()];
    if replicates {
        args.extend(["--masterauth".to_owned(), password.to_owned()]);
    }
    args
}

/// Kills `children` and removes `dir`.
fn tear_down(children: &mut Vec<Child>, dir: &std::path::Path) {
    for mut child in children.drain(..) {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A Redis Cluster of three primaries (no replicas), each a `redis-server` of the test's own
/// on ports of its own, joined with `redis-cli --cluster create`. Killed, and its files
/// removed, when dropped.
pub struct RedisCluster {
    pub nodes: Vec<SocketAddr>,
    /// Every node's `requirepass`, if any.
    pub password: Option<String>,
    children: Vec<Child>,
    dir: PathBuf,
}

impl RedisCluster {
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// Every node asking for `password` (`requirepass` and `masterauth`), if given.
    pub async fn start_with(password: Option<&str>) -> Self {
        let dir = scratch_dir("cluster");
        let ports = free_ports(6);
        let mut cluster = Self {
            nodes: Vec::new(),
            password: password.map(str::to_owned),
            children: Vec::new(),
            dir,
        };
        for pair in ports.chunks(2) {
            let (port, bus) = (pair[0], pair[1]);
            let nodes_file = cluster.dir.join(format!("nodes-{port}.conf"));
            let mut args = auth_args(password, true);
            args.extend([
                "--port".into(),
                port.to_string(),
                // The cluster bus on a free port of its own, not port + 10000.
                "--cluster-port".into(),
                bus.to_string(),
                "--cluster-enabled".into(),
                "yes".into(),
                "--cluster-config-file".into(),
                nodes_file.display().to_string(),
                "--cluster-node-timeout".into(),
                "2000".into(),
                "--dir".into(),
                cluster.dir.display().to_string(),
            ]);
            cluster.children.push(redis_server(&args));
            cluster.nodes.push(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        wait_for_ping(&cluster.nodes, password).await;
        let mut cli = tokio::process::Command::new("redis-cli");
        if let Some(password) = password {
            cli.args(["-a", password, "--no-auth-warning"]);
        }
        let created = cli
            .arg("--cluster")
            .arg("create")
            .args(cluster.nodes.iter().map(ToString::to_string))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output();
        let created = tokio::time::timeout(LIMIT, created)
            .await
            .expect("redis-cli --cluster create did not finish in time")
            .expect("redis-cli is installed");
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        for &node in &cluster.nodes {
            let ok = eventually(LIMIT, || async move {
                let info: String = command_as(node, password, redis::cmd("CLUSTER").arg("INFO"))
                    .await
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
            })
            .await;
            assert!(ok, "the cluster is not ok on {node} within {LIMIT:?}");
        }
        cluster
    }

    /// `redis-cluster://` with every node.
    pub fn url(&self) -> String {
        let others: Vec<String> = self.nodes[1..]
            .iter()
            .map(|node| format!("node={node}"))
            .collect();
        let auth = self
            .password
            .as_ref()
            .map_or_else(String::new, |password| format!(":{password}@"));
        format!(
            "redis-cluster://{auth}{}?{}",
            self.nodes[0],
            others.join("&")
        )
    }

    /// Kills node `index`: its slots are served by no one.
    pub fn kill(&mut self, index: usize) {
        let _ = self.children[index].kill();
        let _ = self.children[index].wait();
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        tear_down(&mut self.children, &self.dir);
    }
}

/// A primary, its replica and one Sentinel watching them (quorum 1), each a `redis-server`
/// of the test's own on a port of its own. Killed, and its files removed, when dropped.
pub struct RedisSentinel {
    pub sentinel: SocketAddr,
    /// The primary's and the replica's password, if any.
    pub password: Option<String>,
    /// The Sentinel's own, if any.
    pub sentinel_password: Option<String>,
    /// The primary, then the replica, as started.
    pub servers: [SocketAddr; 2],
    children: Vec<Child>,
    dir: PathBuf,
}

impl RedisSentinel {
    /// The name the Sentinel knows the primary by.
    pub const NAME: &'static str = "tower-health-test";

    pub async fn start() -> Self {
        Self::start_with(None, None).await
    }

    /// The primary and the replica asking for `password`, the Sentinel for
    /// `sentinel_password`, if given.
    pub async fn start_with(password: Option<&str>, sentinel_password: Option<&str>) -> Self {
        let dir = scratch_dir("sentinel");
        let ports = free_ports(3);
        let addr = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        let mut setup = Self {
            sentinel: addr(ports[2]),
            password: password.map(str::to_owned),
            sentinel_password: sentinel_password.map(str::to_owned),
            servers: [addr(ports[0]), addr(ports[1])],
            children: Vec::new(),
            dir,
        };
        // A full resynchronisation writes an RDB file even with `--save ""`: into the
        // scratch directory, not the working directory.
        let scratch = ["--dir".to_owned(), setup.dir.display().to_string()];
        let mut primary = auth_args(password, true);
        primary.extend(scratch.clone());
        primary.extend(["--port".into(), ports[0].to_string()]);
        setup.children.push(redis_server(&primary));
        let mut replica = auth_args(password, true);
        replica.extend(scratch);
        replica.extend([
            "--port".into(),
            ports[1].to_string(),
            "--replicaof".into(),
            "127.0.0.1".into(),
            ports[0].to_string(),
        ]);
        setup.children.push(redis_server(&replica));
        wait_for_ping(&setup.servers, password).await;
        let mut auth = String::new();
        if let Some(password) = password {
            auth += &format!("sentinel auth-pass {} {password}\n", Self::NAME);
        }
        if let Some(password) = sentinel_password {
            auth += &format!("requirepass {password}\n");
        }
        // Sentinel rewrites its configuration file: one of its own, in the scratch directory.
        let config = setup.dir.join("sentinel.conf");
        std::fs::write(
            &config,
            format!(
                "port {}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor {name} 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 5000\n{auth}",
                ports[2],
                setup.dir.display(),
                ports[0],
                name = Self::NAME,
            ),
        )
        .unwrap();
        setup.children.push(
            Command::new("redis-server")
                .arg(&config)
                .args(["--sentinel", "--daemonize", "no", "--loglevel", "warning"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server is installed"),
        );
        wait_for_ping(&[setup.sentinel], sentinel_password).await;
        let replica = setup.servers[1];
        let synced = eventually(LIMIT, || async move {
            let info: String = command_as(replica, password, redis::cmd("INFO").arg("replication"))
                .await
                .unwrap_or_default();
            info.contains("master_link_status:up")
        })
        .await;
        assert!(synced, "the replica did not sync within {LIMIT:?}");
        setup
    }

    /// `redis-sentinel://` to the Sentinel, for the primary.
    pub fn url(&self) -> String {
        let auth = self
            .password
            .as_ref()
            .map_or_else(String::new, |password| format!(":{password}@"));
        let sentinel_auth = self
            .sentinel_password
            .as_ref()
            .map_or_else(String::new, |password| {
                format!("&sentinelPassword={password}")
            });
        format!(
            "redis-sentinel://{auth}{}?sentinelServiceName={}{sentinel_auth}",
            self.sentinel,
            Self::NAME
        )
    }

    /// The primary, as the Sentinel names it now.
    pub async fn primary(&self) -> SocketAddr {
        let (host, port): (String, u16) = command_as(
            self.sentinel,
            self.sentinel_password.as_deref(),
            redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(Self::NAME),
        )
        .await
        .unwrap();
        format!("{host}:{port}").parse().unwrap()
    }

    /// Has the Sentinel promote the replica (`SENTINEL FAILOVER`, asked again while the
    /// Sentinel knows no replica it may promote yet), waits until it names the new primary
    /// and the old one has become its replica; returns the new primary.
    pub async fn failover(&self) -> SocketAddr {
        let old = self.primary().await;
        let sentinel = self.sentinel;
        let (password, sentinel_password) =
            (self.password.as_deref(), self.sentinel_password.as_deref());
        let started = eventually(LIMIT, || async move {
            let answer: redis::RedisResult<String> = command_as(
                sentinel,
                sentinel_password,
                redis::cmd("SENTINEL").arg("FAILOVER").arg(Self::NAME),
            )
            .await;
            match answer {
                Ok(ok) => ok == "OK",
                Err(error) if error.code() == Some("NOGOODSLAVE") => false,
                // A failover already in progress (an earlier attempt's) will do.
                Err(error) if error.code() == Some("INPROG") => true,
                Err(error) => panic!("SENTINEL FAILOVER: {error}"),
            }
        })
        .await;
        assert!(
            started,
            "the Sentinel did not start a failover within {LIMIT:?}"
        );
        let switched = eventually(LIMIT, || async { self.primary().await != old }).await;
        assert!(switched, "the Sentinel still names {old} after {LIMIT:?}");
        let demoted = eventually(LIMIT, || async move {
            let role: Vec<redis::Value> = command_as(old, password, &redis::cmd("ROLE"))
                .await
                .unwrap_or_default();
            matches!(role.first(), Some(redis::Value::BulkString(role)) if role == b"slave")
        })
        .await;
        assert!(demoted, "{old} is still a primary after {LIMIT:?}");
        self.primary().await
    }
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        tear_down(&mut self.children, &self.dir);
    }
}
