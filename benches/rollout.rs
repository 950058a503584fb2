//! A rolling restart behind a real HAProxy (or nginx, Caddy, Traefik), measured: two instances
//! of an axum app whose route `/db` queries PostgreSQL through the application's own bb8 pool,
//! HAProxy in front set up as the HAProxy guide shows (the HTTP check of `/health/ready` and
//! the agent check), or a proxy from its template in `examples/proxies/` (`--proxy`),
//! `wrk` loading the frontend's `/db`, and SIGTERM to one instance while it runs (issue 29
//! part B). What it measures is whether the rollout loses requests: a survivor whose agent
//! says `down` for one slow round (a starved process, a late answer from the database) leaves
//! HAProxy no server while the other drains.
//!
//! Run with
//!
//! ```not_rust
//! cargo bench --bench rollout --features axum,haproxy-agent -- debounce=0 default --runs 3
//! cargo bench --bench rollout --features axum,haproxy-agent -- --proxy caddy default drain_policy=reject
//! ```
//!
//! `--proxy haproxy|nginx|caddy|traefik` chooses the load balancer (default `haproxy`). A proxy
//! runs from its template, rendered into the scenario's folder as the tests render it
//! (`tests/it/support/proxy_config.rs`), and the instances get what the proxies' guide sets
//! behind it (behind nginx, `TOWER_HEALTH_DRAIN_POLICY=reject`), under the configuration's own
//! variables. It has no stats socket: the report has wrk's figures, the instances' logs and the
//! time from the SIGTERM to app1's last request, which each instance logs when it exits (`the
//! last application request unix_ms=...`), for every load balancer.
//!
//! It needs `wrk` and `haproxy` (Debian's packages: `apt-get install -y wrk haproxy`) and the
//! local PostgreSQL. Each scenario (about 30 s) runs from scratch: two instances as child
//! processes (this binary with `--instance <listen> <agent-port>`), a new HAProxy, then
//! `wrk -t2 -c64 -d25s --latency` against the frontend's `/db`, SIGTERM to instance 1 at
//! +8 s, and the report: wrk's requests, non-2xx responses and socket errors; HAProxy's
//! `<NOSRV>` answers and its log's statuses by server; each server's status and weight over
//! time (`show stat` on the stats socket every 100 ms, the changes printed, timed from wrk's
//! start); and each instance's warnings (`a round overran its deadline`, `readiness is now
//! not_ready`). A table of every run ends the output.
//!
//! Configurations, on the command line, each run back to back in the order given (default
//! `debounce=0 default`); `--runs N` repeats the whole list N times, interleaved (default 1):
//!
//! - `default`: the instances' `TOWER_HEALTH_*` settings all at their defaults;
//! - `name=value[,name=value...]`: `TOWER_HEALTH_<NAME>=value` for each pair, the rest at the
//!   defaults: `debounce=0` is `TOWER_HEALTH_DEBOUNCE=0`, the agent acting on every answer as
//!   before the debounce existed (the starved rounds' handling stays: this is not the code
//!   before the fix).
//!
//! The instances get no other `TOWER_HEALTH_*` (nor `BALDUR_*`) variable from this process's
//! environment, so that a configuration is exactly what its name says.
//!
//! Settings (environment):
//!
//! - `ROLLOUT_CONNECTIONS`: wrk's connections, default 64 (on 2 threads);
//! - `ROLLOUT_DURATION`: wrk's run, default `25s` (whole seconds);
//! - `ROLLOUT_SIGTERM_AT`: when instance 1 gets SIGTERM after wrk starts, default `8s`;
//! - `ROLLOUT_POOL_SIZE`: each instance's pool, default 10;
//! - `TEST_DATABASE_URL`: the database, default `postgres://postgres@127.0.0.1:5432/postgres`;
//! - `ROLLOUT_WRK`, `ROLLOUT_HAPROXY`, `ROLLOUT_NGINX`, `ROLLOUT_CADDY`, `ROLLOUT_TRAEFIK`: the
//!   binaries, default `wrk` and the load balancer's program from the `PATH` (and `/usr/sbin`);
//! - `ROLLOUT_KEEP`: set, each scenario's folder is kept and its path printed: HAProxy's
//!   configuration and access log, and each process's whole log (`app1.log`, `app2.log`,
//!   `haproxy.log`: HAProxy's stderr), timed from wrk's start.
//!
//! The instance (`support/instance.rs`, shared with `weights.rs`) is the README's production
//! form adapted to bb8: the application's pool (bb8's defaults but `max_size`),
//! `HealthConfig::from_env()` with the default database checked beside that pool
//! (`PostgresCheck::new`: a connection of its own, outside the pool), `HealthMonitor::spawn`
//! (its drain from the same variables), the HAProxy agent,
//! `HealthLayer::new(&health).details(Details::Never).around(router)`, a tracing subscriber
//! (info and up, to stderr) and `drain.serve(..)` around `axum::serve`, so that SIGTERM drains
//! as in production (the drain delay, 5 s by default, then the graceful shutdown). `/db` checks
//! a connection out of the pool and runs `SELECT 1` with `query_one` (a prepare and an
//! execute: two round trips, as a handler written the obvious way does); a checkout or query
//! that fails answers 503.
//!
//! Nothing here is asserted: it prints what it saw. Only 127.0.0.1 is used.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::process::{Child, Command};

// The instance behind the load balancer (`--instance`), and the processes around it.
#[path = "support/instance.rs"]
mod instance;
#[path = "support/processes.rs"]
mod processes;
// The proxies of `examples/proxies/` and how each is started, as the tests start them.
#[allow(dead_code)] // the tests' side of it (`checks_readiness`) is unused here
#[path = "../tests/it/support/proxy_config.rs"]
mod proxy_config;

use instance::{LAST_REQUEST, env_duration, env_or, unix_ms};
use processes::{
    Haproxy, Instance, Lines, ServerStat, answers_ok, binary, collect_lines, free_port,
    in_scratch_folder, load_average, thousands, wait_ready,
};
use proxy_config::Kind;

type BoxError = Box<dyn Error>;

/// How often HAProxy's stats are sampled during a scenario.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The longest wait for the instances to be ready and HAProxy to have both `UP`.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long after wrk's planned end it may still run before it is killed.
const WRK_GRACE: Duration = Duration::from_secs(30);
/// How long the SIGTERMed instance may take to exit once wrk is done: the drain timeout (20 s
/// by default) bounds it.
const EXIT_LIMIT: Duration = Duration::from_secs(30);
/// Lines of a process's log printed per scenario, at most.
const LOG_LINES: usize = 12;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--list" || arg == "--test") {
        return ExitCode::SUCCESS; // `cargo bench -- --list`, `cargo test --benches`
    }
    let result = instance::main(&args).unwrap_or_else(|| orchestrate(&args));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

// ------------------------------------------------------------------------------------------
// The orchestrator: a scenario per configuration and run.
// ------------------------------------------------------------------------------------------

/// What every scenario shares.
struct Settings {
    connections: u32,
    duration: Duration,
    sigterm_at: Duration,
    /// Each instance's pool (`INSTANCE_POOL_SIZE`).
    pool_size: u32,
    wrk: PathBuf,
    /// The load balancer in front, and its program.
    front: Front,
    balancer: PathBuf,
    keep: bool,
}

/// The load balancer in front of the two instances.
#[derive(Copy, Clone)]
enum Front {
    /// HAProxy with the HTTP check and the agent, as the HAProxy guide sets it up.
    Haproxy,
    /// One of the proxies of `examples/proxies/`, from its template, as the proxies' guide
    /// sets it up.
    Proxy(Kind),
}

impl Front {
    fn parse(name: &str) -> Result<Self, BoxError> {
        Ok(match name {
            "haproxy" => Self::Haproxy,
            "nginx" => Self::Proxy(Kind::Nginx),
            "caddy" => Self::Proxy(Kind::Caddy),
            "traefik" => Self::Proxy(Kind::Traefik),
            other => {
                return Err(format!(
                    "--proxy {other:?}: expected haproxy, nginx, caddy or traefik"
                )
                .into());
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Haproxy => "haproxy",
            Self::Proxy(kind) => kind.program(),
        }
    }

    /// What the guide sets on the instances behind it.
    fn instance_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Haproxy => &[],
            Self::Proxy(kind) => kind.instance_env(),
        }
    }
}

/// A configuration of the instances: a label and the `TOWER_HEALTH_*` variables it sets.
struct Configuration {
    label: String,
    env: Vec<(String, String)>,
}

impl Configuration {
    /// `default`, or `name=value[,name=value...]` (`debounce=0`: `TOWER_HEALTH_DEBOUNCE=0`).
    fn parse(label: &str) -> Result<Self, BoxError> {
        let mut env = Vec::new();
        if label != "default" {
            for pair in label.split(',') {
                let (name, value) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("{label:?}: expected default or name=value"))?;
                let name = format!("TOWER_HEALTH_{}", name.trim().to_ascii_uppercase());
                env.push((name, value.trim().to_owned()));
            }
        }
        Ok(Self {
            label: label.to_owned(),
            env,
        })
    }
}

fn orchestrate(args: &[String]) -> Result<(), BoxError> {
    let mut runs = 1;
    let mut front = Front::Haproxy;
    let mut configurations = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {} // what `cargo bench` passes
            "--runs" => {
                let value = args.next().ok_or("--runs needs a number")?;
                runs = value.parse().map_err(|_| format!("--runs {value:?}"))?;
            }
            "--proxy" => front = Front::parse(args.next().ok_or("--proxy needs a name")?)?,
            other if other.starts_with("--") => return Err(format!("unknown flag {other}").into()),
            label => configurations.push(Configuration::parse(label)?),
        }
    }
    if configurations.is_empty() {
        configurations = vec![
            Configuration::parse("debounce=0")?,
            Configuration::parse("default")?,
        ];
    }
    let settings = Settings {
        connections: env_or("ROLLOUT_CONNECTIONS", 64),
        duration: env_duration("ROLLOUT_DURATION", Duration::from_secs(25)),
        sigterm_at: env_duration("ROLLOUT_SIGTERM_AT", Duration::from_secs(8)),
        pool_size: env_or("ROLLOUT_POOL_SIZE", 10),
        wrk: binary("ROLLOUT_WRK", "wrk")?,
        front,
        balancer: match front {
            Front::Haproxy => binary("ROLLOUT_HAPROXY", "haproxy")?,
            Front::Proxy(kind) => binary(
                &format!("ROLLOUT_{}", kind.program().to_ascii_uppercase()),
                kind.program(),
            )?,
        },
        keep: std::env::var_os("ROLLOUT_KEEP").is_some(),
    };
    if settings.duration.as_secs() == 0 || settings.sigterm_at >= settings.duration {
        return Err("ROLLOUT_SIGTERM_AT must fall within ROLLOUT_DURATION (whole seconds)".into());
    }
    println!(
        "rolling restart behind {}: wrk -t2 -c{} -d{}s on /db, SIGTERM to app1 at +{:?}; pool {}; {} run(s) of {}",
        settings.front.name(),
        settings.connections,
        settings.duration.as_secs(),
        settings.sigterm_at,
        settings.pool_size,
        runs,
        configurations
            .iter()
            .map(|configuration| configuration.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    for run in 1..=runs {
        for configuration in &configurations {
            println!(
                "\n== {} (run {run} of {runs}; load average {})",
                configuration.label,
                load_average()
            );
            let outcome = runtime.block_on(scenario(&settings, configuration))?;
            print!("{}", outcome.report());
            rows.push((configuration.label.clone(), run, outcome));
        }
    }
    println!("\n{}", table(&rows));
    Ok(())
}

/// A proxy of `examples/proxies/` running in the foreground, from its template rendered into
/// the scenario's folder; its stderr read as it comes.
struct ProxyProcess {
    child: Child,
    stderr: Arc<Mutex<Lines>>,
}

impl ProxyProcess {
    fn start(
        kind: Kind,
        binary: &Path,
        dir: &Path,
        frontend: u16,
        [app1, app2]: &[Instance; 2],
    ) -> Result<Self, BoxError> {
        let (port, dir_text) = (frontend.to_string(), dir.display().to_string());
        let (app1, app2) = (
            format!("127.0.0.1:{}", app1.listen),
            format!("127.0.0.1:{}", app2.listen),
        );
        let vars = [
            ("PROXY_PORT", port.as_str()),
            ("APP1", app1.as_str()),
            ("APP2", app2.as_str()),
            ("PROXY_DIR", dir_text.as_str()),
        ];
        for (name, template) in kind.templates() {
            std::fs::write(dir.join(name), proxy_config::render(template, &vars)?)?;
        }
        if let Some(mut check) = kind.check(binary, dir) {
            let checked = check.output()?;
            if !checked.status.success() {
                return Err(format!(
                    "{} refuses the configuration in {}:\n{}",
                    kind.program(),
                    dir.display(),
                    String::from_utf8_lossy(&checked.stderr)
                )
                .into());
            }
        }
        let mut child = Command::from(kind.command(binary, dir))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = collect_lines(child.stderr.take().ok_or("stderr is piped")?);
        Ok(Self { child, stderr })
    }
}

/// The load balancer of a scenario, running.
enum Balancer {
    Haproxy(Haproxy),
    Proxy(ProxyProcess),
}

impl Balancer {
    fn stderr(&self) -> &Arc<Mutex<Lines>> {
        match self {
            Self::Haproxy(haproxy) => &haproxy.stderr,
            Self::Proxy(proxy) => &proxy.stderr,
        }
    }

    /// Stops it: SIGTERM (nginx's workers outlive a master killed outright), then a kill if
    /// it has not exited within 5 s.
    async fn stop(self) {
        let mut child = match self {
            Self::Haproxy(haproxy) => haproxy.child,
            Self::Proxy(proxy) => proxy.child,
        };
        if let Some(pid) = child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// The guide's backend (`src/docs/haproxy.md`, "The backend"), two servers on this host,
/// with a stats socket and the access log on stdout. The log is `option httplog`'s format
/// with the accept date as a UNIX timestamp (`%Ts.%ms`), so that a `<NOSRV>` answer can be
/// placed on the scenario's timeline.
fn haproxy_config(dir: &Path, frontend: u16, [app1, app2]: &[Instance; 2]) -> String {
    format!(
        "global
    stats socket {dir}/stats mode 600 level admin
    log stdout format raw local0

defaults
    mode http
    log global
    log-format \"%ci:%cp [%Ts.%ms] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %{{+Q}}r\"
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s

frontend fe
    bind 127.0.0.1:{frontend}
    default_backend app

backend app
    balance roundrobin
    option httpchk GET /health/ready
    http-check expect status 200
    default-server check inter 2s fall 2 rise 2 agent-check agent-inter 1s
    server app1 127.0.0.1:{listen1} weight 100 agent-port {agent1}
    server app2 127.0.0.1:{listen2} weight 100 agent-port {agent2}
",
        dir = dir.display(),
        listen1 = app1.listen,
        agent1 = app1.agent,
        listen2 = app2.listen,
        agent2 = app2.agent,
    )
}

/// Samples `show stat` every [`SAMPLE_EVERY`] until `stop` fires, keeping each server's
/// changes of status or weight (none but HAProxy's: the others have no such socket).
async fn sample(balancer: &Balancer, mut stop: tokio::sync::oneshot::Receiver<()>) -> Changes {
    let mut changes = Changes::new();
    let Balancer::Haproxy(haproxy) = balancer else {
        let _ = stop.await;
        return changes;
    };
    loop {
        let now = Instant::now();
        for (server, stat) in haproxy.servers().await {
            let seen = changes.entry(server).or_default();
            if seen
                .last()
                .is_none_or(|(_, last)| (&last.status, last.weight) != (&stat.status, stat.weight))
            {
                seen.push((now, stat));
            }
        }
        tokio::select! {
            _ = &mut stop => return changes,
            () = tokio::time::sleep(SAMPLE_EVERY) => {}
        }
    }
}

/// Each server's changes of status or weight, by name.
type Changes = BTreeMap<String, Vec<(Instant, ServerStat)>>;

/// Runs one scenario from scratch and gathers what it saw.
async fn scenario(settings: &Settings, configuration: &Configuration) -> Result<Outcome, BoxError> {
    in_scratch_folder(
        "rollout",
        settings.keep,
        |dir| async move { run_scenario(settings, configuration, &dir).await },
        Outcome::write_logs,
    )
    .await
}

async fn run_scenario(
    settings: &Settings,
    configuration: &Configuration,
    dir: &Path,
) -> Result<Outcome, BoxError> {
    let env = || {
        // The guide's settings behind this load balancer, then the configuration's, which win.
        let pool_size = (
            "INSTANCE_POOL_SIZE".to_owned(),
            settings.pool_size.to_string(),
        );
        let front = settings.front.instance_env().iter();
        std::iter::once(pool_size)
            .chain(front.map(|(name, value)| ((*name).to_owned(), (*value).to_owned())))
            .chain(configuration.env.iter().cloned())
    };
    let mut instances = [
        Instance::spawn("app1", env())?,
        Instance::spawn("app2", env())?,
    ];
    let started = Instant::now();
    wait_ready(&mut instances, started, START_LIMIT).await?;
    let frontend = free_port()?;
    let balancer = match settings.front {
        Front::Haproxy => {
            let config = haproxy_config(dir, frontend, &instances);
            let haproxy = Haproxy::start(&settings.balancer, dir, &config)?;
            haproxy.both_up(true, started, START_LIMIT).await?;
            Balancer::Haproxy(haproxy)
        }
        Front::Proxy(kind) => {
            let proxy = ProxyProcess::start(kind, &settings.balancer, dir, frontend, &instances)?;
            // No stats to read: 20 answers in a row through it, then two seconds for its
            // checks to have asked both instances.
            let mut in_a_row = 0;
            while in_a_row < 20 {
                in_a_row = if answers_ok(frontend, "/db").await {
                    in_a_row + 1
                } else {
                    0
                };
                if started.elapsed() > START_LIMIT {
                    return Err(format!("{} never answered 200 through it", kind.program()).into());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            Balancer::Proxy(proxy)
        }
    };

    let (stop, stopped) = tokio::sync::oneshot::channel();
    let sampler = async { sample(&balancer, stopped).await };
    let load = async {
        let wrk = Command::new(&settings.wrk)
            .args(["-t2", &format!("-c{}", settings.connections)])
            .arg(format!("-d{}s", settings.duration.as_secs()))
            .arg("--latency")
            .arg(format!("http://127.0.0.1:{frontend}/db"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let wrk_started = (Instant::now(), SystemTime::now());
        tokio::time::sleep_until((wrk_started.0 + settings.sigterm_at).into()).await;
        let sigterm_at = (Instant::now(), SystemTime::now());
        instances[0].signal("TERM")?;
        let output = tokio::time::timeout(settings.duration + WRK_GRACE, wrk.wait_with_output())
            .await
            .map_err(|_| "wrk did not finish")??;
        let _ = stop.send(());
        if !output.status.success() {
            return Err(format!("wrk failed: {}", String::from_utf8_lossy(&output.stderr)).into());
        }
        Ok::<_, BoxError>((
            wrk_started,
            sigterm_at,
            String::from_utf8_lossy(&output.stdout).into_owned(),
        ))
    };
    let (changes, loaded) = tokio::join!(sampler, load);
    let ((t0, t0_wall), (sigterm_at, sigterm_wall), wrk) = loaded?;

    // The drained instance exits by itself within its drain timeout; the other is stopped.
    let [mut app1, app2] = instances;
    let exited = tokio::time::timeout(EXIT_LIMIT, app1.child.wait()).await;
    let app2_log = Arc::clone(&app2.stderr);
    let balancer_log = Arc::clone(balancer.stderr());
    drop(app2);
    balancer.stop().await;
    // The killed processes' stderr closes at once; give the readers a moment to see it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let access = match settings.front {
        Front::Haproxy => AccessLog::parse(
            &std::fs::read_to_string(dir.join("access.log"))?,
            &Timeline { t0, t0_wall },
        ),
        Front::Proxy(_) => AccessLog::default(),
    };
    let app1_log = Lines::take(&app1.stderr);
    // When app1 answered its last request, from the SIGTERM: the instant the load balancer
    // stopped sending to it.
    let depooled = app1_log
        .lines
        .iter()
        .rev()
        .find(|(_, line)| line.contains(LAST_REQUEST))
        .and_then(|(_, line)| line.split("unix_ms=").nth(1))
        .and_then(|ms| ms.split_whitespace().next()?.parse::<u64>().ok())
        .map(|ms| (ms as f64 - unix_ms(sigterm_wall) as f64) / 1000.0);

    let timeline = Timeline { t0, t0_wall };
    Ok(Outcome {
        wrk: WrkReport::parse(&wrk),
        wrk_text: wrk,
        access,
        depooled,
        front: settings.front.name(),
        changes,
        sigterm_at: timeline.at(sigterm_at),
        app1_exit: match exited {
            Ok(Ok(status)) => format!("exited ({status})"),
            Ok(Err(error)) => format!("unknown ({error})"),
            Err(_) => format!("still running {EXIT_LIMIT:?} after wrk ended: killed"),
        },
        logs: [
            ("app1", app1_log),
            ("app2", Lines::take(&app2_log)),
            (settings.front.name(), Lines::take(&balancer_log)),
        ],
        timeline,
    })
}

/// Times on the scenario's clock: seconds since wrk started.
struct Timeline {
    t0: Instant,
    t0_wall: SystemTime,
}

impl Timeline {
    fn at(&self, instant: Instant) -> f64 {
        match instant.checked_duration_since(self.t0) {
            Some(after) => after.as_secs_f64(),
            None => -(self.t0 - instant).as_secs_f64(),
        }
    }

    /// A UNIX timestamp (HAProxy's `%Ts.%ms`) on the scenario's clock.
    fn at_unix(&self, seconds: f64) -> f64 {
        let t0 = self
            .t0_wall
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |since| since.as_secs_f64());
        seconds - t0
    }
}

/// What wrk printed, the figures that matter.
#[derive(Default)]
struct WrkReport {
    requests: u64,
    seconds: f64,
    non_2xx: u64,
    connect: u64,
    read: u64,
    write: u64,
    timeout: u64,
    /// `50%`, `75%`, `90%`, `99%` of `--latency`'s distribution, as wrk writes them.
    latency: Vec<(String, String)>,
}

impl WrkReport {
    fn parse(text: &str) -> Self {
        let mut report = Self::default();
        let mut in_distribution = false;
        for line in text.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if line.starts_with("Latency Distribution") {
                in_distribution = true;
                continue;
            }
            if in_distribution {
                match words.as_slice() {
                    [percent, value] if percent.ends_with('%') => {
                        report
                            .latency
                            .push(((*percent).to_owned(), (*value).to_owned()));
                        continue;
                    }
                    _ => in_distribution = false,
                }
            }
            if let [requests, "requests", "in", seconds, ..] = words.as_slice() {
                report.requests = requests.parse().unwrap_or(0);
                report.seconds = seconds
                    .trim_end_matches(',')
                    .trim_end_matches('s')
                    .parse()
                    .unwrap_or(0.0);
            } else if let Some(errors) = line.strip_prefix("Socket errors:") {
                for error in errors.split(',') {
                    let mut parts = error.split_whitespace();
                    let (Some(kind), Some(count)) = (parts.next(), parts.next()) else {
                        continue;
                    };
                    let count = count.parse().unwrap_or(0);
                    match kind {
                        "connect" => report.connect = count,
                        "read" => report.read = count,
                        "write" => report.write = count,
                        "timeout" => report.timeout = count,
                        _ => {}
                    }
                }
            } else if let Some(count) = line.strip_prefix("Non-2xx or 3xx responses:") {
                report.non_2xx = count.trim().parse().unwrap_or(0);
            }
        }
        report
    }

    /// Requests that did not get a 2xx answer: non-2xx answers and socket errors. (A timeout
    /// is counted by wrk as an error, not as a request.)
    fn failed(&self) -> u64 {
        self.non_2xx + self.connect + self.read + self.write + self.timeout
    }
}

/// HAProxy's access log, summed: answers by server, status and termination state, and when
/// the `<NOSRV>` answers came.
#[derive(Default)]
struct AccessLog {
    lines: u64,
    /// Answers HAProxy gave itself for want of a server (`<NOSRV>` 503).
    nosrv: u64,
    nosrv_first_last: Option<(f64, f64)>,
    /// `(backend/server, status, termination state)` and its count.
    groups: BTreeMap<(String, String, String), u64>,
}

impl AccessLog {
    /// Parses lines of the format `haproxy_config` sets: `client [ts] frontend
    /// backend/server timers status bytes termination ...`.
    fn parse(text: &str, timeline: &Timeline) -> Self {
        let mut log = Self::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, stamp, _, server, _, status, _, termination, ..] = fields.as_slice() else {
                continue;
            };
            let Some(stamp) = stamp
                .strip_prefix('[')
                .and_then(|stamp| stamp.strip_suffix(']'))
                .and_then(|stamp| stamp.parse::<f64>().ok())
            else {
                continue; // not an access line (a server's state change, say)
            };
            log.lines += 1;
            // No server to send it to (HAProxy's 503 `SC`); wrk's first connection, which it
            // closes unused, is logged as the frontend's `<NOSRV>` 400 and left out.
            if server.ends_with("/<NOSRV>") && *status == "503" {
                log.nosrv += 1;
                let at = timeline.at_unix(stamp);
                log.nosrv_first_last = Some(match log.nosrv_first_last {
                    Some((first, last)) => (first.min(at), last.max(at)),
                    None => (at, at),
                });
            }
            let key = (
                (*server).to_owned(),
                (*status).to_owned(),
                (*termination).to_owned(),
            );
            *log.groups.entry(key).or_default() += 1;
        }
        log
    }
}

/// What one scenario saw.
struct Outcome {
    wrk: WrkReport,
    wrk_text: String,
    /// HAProxy's access log (empty for the other load balancers).
    access: AccessLog,
    /// The load balancer's name.
    front: &'static str,
    /// How long after the SIGTERM app1 answered its last request (seconds), from its log.
    depooled: Option<f64>,
    changes: Changes,
    sigterm_at: f64,
    app1_exit: String,
    logs: [(&'static str, Lines); 3],
    timeline: Timeline,
}

impl Outcome {
    /// When the survivor (app2) was out of rotation, and app1 before its SIGTERM: what a
    /// rollout should never show. Each as `app2 DOWN (agent) +23.7 s to +24.7 s`, from the
    /// samples (a state shorter than [`SAMPLE_EVERY`] can slip between two).
    fn out_of_drain(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for (server, changes) in &self.changes {
            for (index, (at, stat)) in changes.iter().enumerate() {
                let at = self.timeline.at(*at);
                let before_drain = server == "app1" && at < self.sigterm_at;
                if (server == "app2" || before_drain) && !stat.status.starts_with("UP") {
                    let until = changes.get(index + 1).map_or_else(
                        || "the end".to_owned(),
                        |(until, _)| format!("{:+.1} s", self.timeline.at(*until)),
                    );
                    seen.push(format!("{server} {} {at:+.1} s to {until}", stat.status));
                }
            }
        }
        seen
    }

    /// The survivor's warnings that say its round was late or it was not ready.
    fn survivor_warnings(&self) -> (usize, usize) {
        let lines = &self.logs[1].1.lines;
        let count = |needle: &str| {
            lines
                .iter()
                .filter(|(_, line)| line.contains(needle))
                .count()
        };
        (
            count("overran its deadline"),
            count("readiness is now not_ready"),
        )
    }

    /// Each process's whole log, every line timed on the scenario's clock, into `dir`
    /// (`app1.log`, `app2.log`, `haproxy.log`).
    fn write_logs(&self, dir: &Path) -> std::io::Result<()> {
        for (name, lines) in &self.logs {
            let mut text = String::new();
            for (at, line) in &lines.lines {
                let _ = writeln!(text, "{:+8.3} s  {line}", self.timeline.at(*at));
            }
            std::fs::write(dir.join(format!("{name}.log")), text)?;
        }
        Ok(())
    }

    /// [`depooled`](Self::depooled) as the report and the table show it.
    fn depooled_text(&self) -> String {
        self.depooled
            .map_or_else(|| "unknown".to_owned(), |after| format!("{after:+.2} s"))
    }

    fn report(&self) -> String {
        let mut out = String::new();
        let wrk = &self.wrk;
        let _ = writeln!(
            out,
            "   wrk: {} requests in {:.2} s ({:.0}/s), {} non-2xx; socket errors: connect {}, read {}, write {}, timeout {}",
            thousands(wrk.requests),
            wrk.seconds,
            wrk.requests as f64 / wrk.seconds.max(f64::EPSILON),
            thousands(wrk.non_2xx),
            wrk.connect,
            wrk.read,
            wrk.write,
            wrk.timeout,
        );
        if wrk.requests == 0 {
            let _ = writeln!(out, "   wrk said:\n{}", self.wrk_text);
        }
        let latency: Vec<String> = wrk
            .latency
            .iter()
            .map(|(percent, value)| format!("p{} {value}", percent.trim_end_matches('%')))
            .collect();
        let _ = writeln!(out, "   latency: {}", latency.join(", "));
        let _ = writeln!(
            out,
            "   {}'s last request to app1: {} after the SIGTERM",
            self.front,
            self.depooled_text()
        );
        let access = &self.access;
        let nosrv_when = access
            .nosrv_first_last
            .map(|(first, last)| format!(" (from {first:+.2} s to {last:+.2} s)"))
            .unwrap_or_default();
        if self.front == "haproxy" {
            let _ = writeln!(
                out,
                "   haproxy: {} answers logged, {} <NOSRV>{nosrv_when}",
                thousands(access.lines),
                thousands(access.nosrv),
            );
        }
        for ((server, status, termination), count) in &access.groups {
            let _ = writeln!(
                out,
                "      {server:<14} {status:>4} {termination}  x {}",
                thousands(*count)
            );
        }
        for (server, changes) in &self.changes {
            let note = if server == "app1" {
                format!(
                    " (SIGTERM at {:+.2} s, then {})",
                    self.sigterm_at, self.app1_exit
                )
            } else {
                String::new()
            };
            let _ = writeln!(out, "   {server}{note}:");
            for (at, stat) in changes {
                let _ = writeln!(
                    out,
                    "      {:+7.2} s  {:<16} weight {}",
                    self.timeline.at(*at),
                    stat.status,
                    stat.weight
                );
            }
        }
        for (name, lines) in &self.logs {
            let closed = lines
                .closed
                .map(|closed| format!(", exited at {:+.2} s", self.timeline.at(closed)))
                .unwrap_or_default();
            let warnings = lines
                .lines
                .iter()
                .filter(|(_, line)| line.contains("WARN"))
                .count();
            let _ = writeln!(
                out,
                "   {name}'s log: {} lines, {warnings} warnings{closed}",
                lines.lines.len()
            );
            let shown = lines
                .lines
                .iter()
                .filter(|(_, line)| !line.contains("listening"))
                .take(LOG_LINES);
            for (at, line) in shown {
                let line: String = line.chars().take(220).collect();
                let _ = writeln!(out, "      {:+7.2} s  {line}", self.timeline.at(*at));
            }
        }
        let (overran, not_ready) = self.survivor_warnings();
        let _ = writeln!(
            out,
            "   survivor (app2): {overran} \"overran its deadline\", {not_ready} \"readiness is now not_ready\"; out of rotation outside the drain: {}",
            or_none(&self.out_of_drain())
        );
        out
    }
}

fn or_none(items: &[String]) -> String {
    if items.is_empty() {
        "no".to_owned()
    } else {
        items.join("; ")
    }
}

/// Every run in one Markdown table, for `benches/README.md`.
fn table(rows: &[(String, u32, Outcome)]) -> String {
    let mut out = String::from(
        "| load balancer | configuration | run | requests | failed | non-2xx | `<NOSRV>` | timeouts | other socket errors | app1's last request after the SIGTERM | survivor: overruns, not ready | out of rotation outside the drain |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (label, run, outcome) in rows {
        let wrk = &outcome.wrk;
        let (overran, not_ready) = outcome.survivor_warnings();
        let _ = writeln!(
            out,
            "| {} | `{label}` | {run} | {} | {} | {} | {} | {} | {} | {} | {overran}, {not_ready} | {} |",
            outcome.front,
            thousands(wrk.requests),
            thousands(wrk.failed()),
            thousands(wrk.non_2xx),
            // Only HAProxy's access log is read.
            if outcome.front == "haproxy" {
                thousands(outcome.access.nosrv)
            } else {
                "n/a".to_owned()
            },
            thousands(wrk.timeout),
            wrk.connect + wrk.read + wrk.write,
            outcome.depooled_text(),
            or_none(&outcome.out_of_drain()),
        );
    }
    out
}
