//! Load feedback behind a real HAProxy, measured (issue 39): two instances of the axum app of
//! `benches/rollout.rs` (`support/instance.rs`: the README's production form, the bb8 pool, the
//! drain, the HAProxy agent, `HealthLayer::around`, the capacity from
//! `TOWER_HEALTH_LOAD_CAPACITY`), one of them slowed, behind HAProxy configured four ways, and
//! an open-loop load at a fixed rate through the frontend. What it measures is whether the
//! agent's weight moves traffic off the slowed instance enough to cut the tail latency under
//! `roundrobin`, costs nothing under `leastconn`, and comes back once the instance heals.
//!
//! Run with
//!
//! ```not_rust
//! cargo bench --bench weights --features axum,haproxy-agent -- --runs 3
//! cargo bench --bench weights --features axum,haproxy-agent -- roundrobin roundrobin+agent
//! ```
//!
//! It needs `haproxy` (Debian's package: `apt-get install -y haproxy`) and the local
//! PostgreSQL. Both instances get `INSTANCE_POOL_SIZE` (a pool of 10) and
//! `TOWER_HEALTH_LOAD_CAPACITY` (10: the pool, the requests in flight the app can serve at
//! once); app1 also gets `INSTANCE_LATENCY` (20 ms): each `/db` keeps its connection that long
//! after its `SELECT 1`, as a slow query would, so that app1 can serve about 465 requests a
//! second (10 connections, about 21.5 ms each) and its requests queue for its pool as its
//! share nears that: its requests in flight rise, which is what the estimate reads. (A CPU hog beside it would raise the runtime's lag
//! instead, which reads as load only past 10 ms of lateness, and on a machine of 2 cores
//! would slow the load generator and HAProxy as much as the instance.)
//!
//! Scenarios, on the command line, each run from scratch in the order given (default all
//! five); `--runs N` repeats the whole list N times, interleaved (default 1):
//!
//! - `roundrobin`: `balance roundrobin`, static weights (no agent check): the baseline;
//! - `roundrobin+agent`: the same with the HAProxy guide's `agent-check agent-inter 1s`;
//! - `leastconn`, `leastconn+agent`: the same two with `balance leastconn`;
//! - `heal`: `roundrobin+agent`, and app1 heals (SIGUSR1: the latency removed) at +15 s.
//!
//! Every backend has the guide's HTTP check (`option httpchk GET /health/ready`, `inter 2s
//! fall 2 rise 2`) and `weight 100` on both servers. Each scenario starts two new instances and
//! a new HAProxy, waits for both servers `UP` at weight 100 (with the agent, past the slow
//! start's 10 s), then sends `GET /db` at the rate, arrivals at random (Poisson, the same
//! seeded sequence in every scenario), each request on a keep-alive connection of its own
//! while it lasts (hyper's client: a new connection when none is idle), so that a slow answer
//! never holds back the next request (an open loop: wrk's closed loop waits, and hides the
//! tail). A request's latency runs from when it was due, not from when it was sent. After a
//! warm-up (10 s: the estimate's 2 s time constant, three times over, and the agent's
//! interval), the measured window (20 s) gives the requests answered per second, the
//! failures, p50, p90, p99 and p99.9, app1's share of the requests (HAProxy's `stot`), and
//! app1's weight over the window (`show stat` every 100 ms): its least, mean and largest, how
//! many times it turned (a rise after a fall or a fall after a rise), and how many of those
//! were swings (a move of 5 points or more against the last; a healthy instance's weight
//! wanders by a point or two). The `heal` scenario prints app1's weight over time from 2 s
//! before the heal, the time from the heal until it was 95 or more, and 100, and its weight
//! from when it first reached 95 on (least, mean, largest, turns, swings), beside app2's over
//! the run. A table of every run ends the output, with the ratio of each p99 to its
//! baseline's in the same run.
//!
//! Settings (environment):
//!
//! - `WEIGHTS_RATE`: requests per second, default 800 (static `roundrobin` gives app1 400,
//!   86% of what it can serve: how much the weight can cut depends on it, `benches/README.md`);
//! - `WEIGHTS_LATENCY`: app1's injected latency, default `20ms`;
//! - `WEIGHTS_POOL_SIZE`: each instance's pool, default 10;
//! - `WEIGHTS_CAPACITY`: `TOWER_HEALTH_LOAD_CAPACITY`, default the pool's size;
//! - `WEIGHTS_AGENT_INTER`: HAProxy's `agent-inter`, default `1s` (the guide's);
//! - `WEIGHTS_WARMUP`, `WEIGHTS_MEASURE`: default `10s` and `20s`;
//! - `WEIGHTS_HEAL_AT`, `WEIGHTS_HEAL_WATCH`: when app1 heals in the `heal` scenario, after the
//!   load starts, and how long the load goes on after it, default `15s` and `20s`;
//! - `WEIGHTS_SEED`: the arrivals' seed, default 1;
//! - `TEST_DATABASE_URL`: the database, default `postgres://postgres@127.0.0.1:5432/postgres`;
//! - `WEIGHTS_HAPROXY`: the binary, default `haproxy` from the `PATH` (and `/usr/sbin`);
//! - `WEIGHTS_KEEP`: set, each scenario's folder is kept and its path printed: HAProxy's
//!   configuration and each process's log (`app1.log`, `app2.log`, `haproxy.log`: its
//!   stderr).
//!
//! Nothing here is asserted: it prints what it saw. Only 127.0.0.1 is used.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::task::JoinSet;

// The instance behind HAProxy (`--instance`), and the processes around it.
#[path = "support/instance.rs"]
mod instance;
#[path = "support/processes.rs"]
mod processes;

use instance::{HEALED, env_duration, env_or};
use processes::{Haproxy, Instance, Lines, ServerStat, binary, free_port, load_average, thousands};

type BoxError = Box<dyn Error>;

/// How often HAProxy's stats are sampled during a scenario.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// The longest wait for the instances to be ready and HAProxy to have both `UP` at 100.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long a request may take before it counts as failed.
const REQUEST_LIMIT: Duration = Duration::from_secs(10);
/// The weight that counts as full again after the heal: with requests in flight, a healthy
/// instance's estimate is a few percent, never quite 0.
const FULL: u32 = 95;
/// The least move of a weight, in points, that counts as a swing: HAProxy's weight of a
/// healthy instance under this load wanders by a few points (its estimate is a few percent,
/// and the rounding of `100 × (1 − u)` flips), which is no oscillation.
const SWING: u32 = 5;
/// How much of app1's weight before the heal the `heal` scenario prints.
const BEFORE_HEAL: Duration = Duration::from_secs(2);

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

/// How HAProxy balances, and whether it reads the agent's weight.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Scenario {
    RoundRobin,
    RoundRobinAgent,
    LeastConn,
    LeastConnAgent,
    /// `roundrobin` with the agent, app1 healed mid-run.
    Heal,
}

impl Scenario {
    const ALL: [Self; 5] = [
        Self::RoundRobin,
        Self::RoundRobinAgent,
        Self::LeastConn,
        Self::LeastConnAgent,
        Self::Heal,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::RoundRobin => "roundrobin",
            Self::RoundRobinAgent => "roundrobin+agent",
            Self::LeastConn => "leastconn",
            Self::LeastConnAgent => "leastconn+agent",
            Self::Heal => "heal",
        }
    }

    fn parse(name: &str) -> Result<Self, BoxError> {
        Self::ALL
            .into_iter()
            .find(|scenario| scenario.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|scenario| scenario.name()).collect();
                format!("{name:?}: expected one of {}", names.join(", ")).into()
            })
    }

    fn balance(self) -> &'static str {
        match self {
            Self::RoundRobin | Self::RoundRobinAgent | Self::Heal => "roundrobin",
            Self::LeastConn | Self::LeastConnAgent => "leastconn",
        }
    }

    fn agent(self) -> bool {
        match self {
            Self::RoundRobin | Self::LeastConn => false,
            Self::RoundRobinAgent | Self::LeastConnAgent | Self::Heal => true,
        }
    }

    /// The scenario whose p99 this one's is compared with, in the same run.
    fn baseline(self) -> Option<Self> {
        match self {
            Self::RoundRobinAgent => Some(Self::RoundRobin),
            Self::LeastConnAgent => Some(Self::LeastConn),
            Self::RoundRobin | Self::LeastConn | Self::Heal => None,
        }
    }
}

/// What every scenario shares.
struct Settings {
    rate: f64,
    latency: Duration,
    pool_size: u32,
    capacity: u32,
    agent_inter: Duration,
    warmup: Duration,
    measure: Duration,
    heal_at: Duration,
    heal_watch: Duration,
    seed: u64,
    haproxy: PathBuf,
    keep: bool,
}

impl Settings {
    /// How long the load runs in `scenario`.
    fn load_for(&self, scenario: Scenario) -> Duration {
        match scenario {
            Scenario::Heal => self.heal_at + self.heal_watch,
            _ => self.warmup + self.measure,
        }
    }
}

fn orchestrate(args: &[String]) -> Result<(), BoxError> {
    let mut runs = 1;
    let mut scenarios = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {} // what `cargo bench` passes
            "--runs" => {
                let value = args.next().ok_or("--runs needs a number")?;
                runs = value.parse().map_err(|_| format!("--runs {value:?}"))?;
            }
            other if other.starts_with("--") => return Err(format!("unknown flag {other}").into()),
            name => scenarios.push(Scenario::parse(name)?),
        }
    }
    if scenarios.is_empty() {
        scenarios = Scenario::ALL.to_vec();
    }
    let pool_size = env_or("WEIGHTS_POOL_SIZE", 10);
    let settings = Settings {
        rate: env_or("WEIGHTS_RATE", 800.0),
        latency: env_duration("WEIGHTS_LATENCY", Duration::from_millis(20)),
        pool_size,
        capacity: env_or("WEIGHTS_CAPACITY", pool_size),
        agent_inter: env_duration("WEIGHTS_AGENT_INTER", Duration::from_secs(1)),
        warmup: env_duration("WEIGHTS_WARMUP", Duration::from_secs(10)),
        measure: env_duration("WEIGHTS_MEASURE", Duration::from_secs(20)),
        heal_at: env_duration("WEIGHTS_HEAL_AT", Duration::from_secs(15)),
        heal_watch: env_duration("WEIGHTS_HEAL_WATCH", Duration::from_secs(20)),
        seed: env_or("WEIGHTS_SEED", 1),
        haproxy: binary("WEIGHTS_HAPROXY", "haproxy")?,
        keep: std::env::var_os("WEIGHTS_KEEP").is_some(),
    };
    if settings.rate <= 0.0 || settings.measure.is_zero() || settings.agent_inter.is_zero() {
        return Err(
            "WEIGHTS_RATE, WEIGHTS_MEASURE and WEIGHTS_AGENT_INTER must be positive".into(),
        );
    }
    println!(
        "weights behind haproxy: {} GET /db a second (open loop), app1 slowed by {:?}; pool {}, \
         capacity {}; agent-inter {:?}; warm-up {:?}, measured {:?}; heal at +{:?}, watched {:?}; \
         {} run(s) of {}",
        settings.rate,
        settings.latency,
        settings.pool_size,
        settings.capacity,
        settings.agent_inter,
        settings.warmup,
        settings.measure,
        settings.heal_at,
        settings.heal_watch,
        runs,
        scenarios
            .iter()
            .map(|scenario| scenario.name())
            .collect::<Vec<_>>()
            .join(", "),
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    for run in 1..=runs {
        for &scenario in &scenarios {
            println!(
                "\n== {} (run {run} of {runs}; load average {})",
                scenario.name(),
                load_average()
            );
            let outcome = runtime.block_on(run_from_scratch(&settings, scenario))?;
            print!("{}", outcome.report(&settings));
            rows.push((run, scenario, outcome));
        }
    }
    println!("\n{}", table(&rows));
    Ok(())
}

/// Runs one scenario in a folder of its own, removed afterwards unless `WEIGHTS_KEEP`.
async fn run_from_scratch(settings: &Settings, scenario: Scenario) -> Result<Outcome, BoxError> {
    processes::in_scratch_folder(
        "weights",
        settings.keep,
        |dir| async move { run_scenario(settings, scenario, &dir).await },
        Outcome::write_logs,
    )
    .await
}

/// The backend of the HAProxy guide (`src/docs/haproxy.md`), balanced by `scenario`, with the
/// agent check only where it says so; a stats socket in `dir`, no log.
fn haproxy_config(
    settings: &Settings,
    scenario: Scenario,
    dir: &Path,
    frontend: u16,
    [app1, app2]: &[Instance; 2],
) -> String {
    let agent = |instance: &Instance| {
        if scenario.agent() {
            format!(
                " agent-check agent-inter {}ms agent-port {}",
                settings.agent_inter.as_millis(),
                instance.agent
            )
        } else {
            String::new()
        }
    };
    format!(
        "global
    stats socket {dir}/stats mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s

frontend fe
    bind 127.0.0.1:{frontend}
    default_backend app

backend app
    balance {balance}
    option httpchk GET /health/ready
    http-check expect status 200
    default-server check inter 2s fall 2 rise 2
    server app1 127.0.0.1:{listen1} weight 100{agent1}
    server app2 127.0.0.1:{listen2} weight 100{agent2}
",
        dir = dir.display(),
        balance = scenario.balance(),
        listen1 = app1.listen,
        agent1 = agent(app1),
        listen2 = app2.listen,
        agent2 = agent(app2),
    )
}

/// One request of the load: when it was due, how long it took from then, and whether it was
/// answered 200 in time.
struct Answer {
    due: Duration,
    latency: Duration,
    ok: bool,
}

/// The arrivals of a Poisson process at `rate` a second: each gap drawn from an exponential
/// distribution by a SplitMix64 generator, so that a seed gives the same sequence anywhere.
struct Arrivals {
    state: u64,
    rate: f64,
    at: Duration,
}

impl Arrivals {
    fn new(seed: u64, rate: f64) -> Self {
        Self {
            state: seed,
            rate,
            at: Duration::ZERO,
        }
    }

    /// A number in `(0, 1]`.
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
}

impl Iterator for Arrivals {
    type Item = Duration;

    /// When the next request is due, from the start.
    fn next(&mut self) -> Option<Duration> {
        let gap = -self.uniform().ln() / self.rate;
        self.at += Duration::from_secs_f64(gap);
        Some(self.at)
    }
}

/// Sends `GET /db` through 127.0.0.1:`frontend` at the arrivals of `settings`, from `t0` for
/// `load_for`, and gathers every answer.
async fn open_loop(
    settings: &Settings,
    frontend: u16,
    t0: Instant,
    load_for: Duration,
) -> Vec<Answer> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let uri: hyper::Uri = format!("http://127.0.0.1:{frontend}/db")
        .parse()
        .expect("a valid URI");
    let mut requests = JoinSet::new();
    for due in Arrivals::new(settings.seed, settings.rate).take_while(|due| *due < load_for) {
        tokio::time::sleep_until((t0 + due).into()).await;
        let (client, uri) = (client.clone(), uri.clone());
        requests.spawn(async move {
            let ask = async {
                let response = client.get(uri).await.ok()?;
                let status = response.status();
                response.into_body().collect().await.ok()?;
                Some(status == hyper::StatusCode::OK)
            };
            let ok = matches!(
                tokio::time::timeout(REQUEST_LIMIT, ask).await,
                Ok(Some(true))
            );
            Answer {
                due,
                latency: (t0 + due).elapsed(),
                ok,
            }
        });
    }
    let mut answers = Vec::new();
    while let Some(answer) = requests.join_next().await {
        if let Ok(answer) = answer {
            answers.push(answer);
        }
    }
    answers
}

/// `show stat` every [`SAMPLE_EVERY`] from `t0` for `sample_for`: each server's state, timed
/// from `t0`.
async fn sample(haproxy: &Haproxy, t0: Instant, sample_for: Duration) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut next = t0;
    while next.duration_since(t0) <= sample_for {
        tokio::time::sleep_until(next.into()).await;
        let servers = haproxy.servers().await;
        if !servers.is_empty() {
            samples.push(Sample {
                at: t0.elapsed(),
                servers,
            });
        }
        next += SAMPLE_EVERY;
    }
    samples
}

/// HAProxy's view of the servers at one instant.
struct Sample {
    at: Duration,
    servers: BTreeMap<String, ServerStat>,
}

impl Sample {
    fn weight(&self, server: &str) -> Option<u32> {
        self.servers.get(server).map(|stat| stat.weight)
    }

    fn sessions(&self, server: &str) -> u64 {
        self.servers.get(server).map_or(0, |stat| stat.sessions)
    }
}

async fn run_scenario(
    settings: &Settings,
    scenario: Scenario,
    dir: &Path,
) -> Result<Outcome, BoxError> {
    let env = |latency: Duration| {
        let mut env = vec![
            (
                "INSTANCE_POOL_SIZE".to_owned(),
                settings.pool_size.to_string(),
            ),
            (
                "TOWER_HEALTH_LOAD_CAPACITY".to_owned(),
                settings.capacity.to_string(),
            ),
        ];
        if !latency.is_zero() {
            let micros = latency.as_micros();
            env.push(("INSTANCE_LATENCY".to_owned(), format!("{micros}us")));
        }
        env
    };
    let mut instances = [
        Instance::spawn("app1", env(settings.latency))?,
        Instance::spawn("app2", env(Duration::ZERO))?,
    ];
    let started = Instant::now();
    processes::wait_ready(&mut instances, started, START_LIMIT).await?;
    let frontend = free_port()?;
    let config = haproxy_config(settings, scenario, dir, frontend, &instances);
    let haproxy = Haproxy::start(&settings.haproxy, dir, &config)?;
    haproxy
        .both_up(scenario.agent(), started, START_LIMIT)
        .await?;

    let load_for = settings.load_for(scenario);
    let t0 = Instant::now();
    let heal = async {
        if scenario == Scenario::Heal {
            tokio::time::sleep_until((t0 + settings.heal_at).into()).await;
            instances[0].signal("USR1")?;
        }
        Ok::<_, BoxError>(())
    };
    let (answers, samples, healed) = tokio::join!(
        open_loop(settings, frontend, t0, load_for),
        sample(&haproxy, t0, load_for),
        heal,
    );
    healed?;
    let [app1, app2] = instances;
    let logs = [
        ("app1", Lines::take(&app1.stderr)),
        ("app2", Lines::take(&app2.stderr)),
        ("haproxy", Lines::take(&haproxy.stderr)),
    ];
    drop((app1, app2));
    let mut haproxy = haproxy;
    let _ = haproxy.child.kill().await;
    Ok(Outcome::new(settings, scenario, &answers, samples, logs))
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Copy, Default)]
struct Percentiles {
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

impl Percentiles {
    /// Of `latencies`, sorted in place.
    fn of(latencies: &mut [Duration]) -> Self {
        latencies.sort_unstable();
        let at = |quantile: f64| {
            let Some(last) = latencies.len().checked_sub(1) else {
                return 0.0;
            };
            // The smallest latency that `quantile` of the requests did not exceed.
            let rank = ((quantile * latencies.len() as f64).ceil() as usize).saturating_sub(1);
            latencies[rank.min(last)].as_secs_f64() * 1000.0
        };
        Self {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
            max: at(1.0),
        }
    }
}

/// How a server's weight moved over a span of samples.
#[derive(Default)]
struct WeightSpan {
    least: u32,
    mean: f64,
    most: u32,
    /// How many times it turned: a rise after a fall, or a fall after a rise.
    turns: usize,
    /// How many times it turned by [`SWING`] points or more: a move of that size against the
    /// last, from the highest or lowest point that move reached.
    swings: usize,
}

impl WeightSpan {
    fn of(weights: &[u32]) -> Self {
        if weights.is_empty() {
            return Self::default();
        }
        let mut turns = 0;
        let mut rising: Option<bool> = None;
        for pair in weights.windows(2) {
            if pair[0] == pair[1] {
                continue;
            }
            let rises = pair[1] > pair[0];
            if rising.is_some_and(|was| was != rises) {
                turns += 1;
            }
            rising = Some(rises);
        }
        let mut swings = 0;
        // The direction of the last swing and the farthest point it reached.
        let (mut rising, mut extreme): (Option<bool>, u32) = (None, weights[0]);
        for &weight in &weights[1..] {
            match rising {
                Some(true) if weight > extreme => extreme = weight,
                Some(false) if weight < extreme => extreme = weight,
                Some(true) if weight + SWING <= extreme => {
                    (rising, extreme, swings) = (Some(false), weight, swings + 1);
                }
                Some(false) if weight >= extreme + SWING => {
                    (rising, extreme, swings) = (Some(true), weight, swings + 1);
                }
                None if weight.abs_diff(extreme) >= SWING => {
                    (rising, extreme) = (Some(weight > extreme), weight);
                }
                _ => {}
            }
        }
        Self {
            least: weights.iter().copied().min().unwrap_or(0),
            mean: weights.iter().map(|&w| f64::from(w)).sum::<f64>() / weights.len() as f64,
            most: weights.iter().copied().max().unwrap_or(0),
            turns,
            swings,
        }
    }

    fn text(&self) -> String {
        format!(
            "{} / {:.0} / {}, {} turns, {} swings",
            self.least, self.mean, self.most, self.turns, self.swings
        )
    }
}

/// What the `heal` scenario saw after the heal.
struct Healing {
    /// From the heal until app1's weight was [`FULL`] or more, and 100 (seconds).
    to_full: Option<f64>,
    to_100: Option<f64>,
    /// app1's weight from when it first reached [`FULL`] to the end.
    after_full: WeightSpan,
}

/// What one scenario saw.
struct Outcome {
    /// Requests due in the measured window, and those of them answered 200 in time.
    requests: u64,
    ok: u64,
    measure: Duration,
    latency: Percentiles,
    /// app1's share of the requests HAProxy sent in the window.
    app1_share: f64,
    /// app1's weight in the window (before the heal, for `heal`).
    app1_weight: WeightSpan,
    healing: Option<Healing>,
    samples: Vec<Sample>,
    logs: [(&'static str, Lines); 3],
}

impl Outcome {
    fn new(
        settings: &Settings,
        scenario: Scenario,
        answers: &[Answer],
        samples: Vec<Sample>,
        logs: [(&'static str, Lines); 3],
    ) -> Self {
        // The window measured: after the warm-up, or for `heal` from the warm-up to the heal
        // (the slowed instance at its steady state), as long as it fits.
        let (from, until) = match scenario {
            Scenario::Heal => (settings.warmup.min(settings.heal_at), settings.heal_at),
            _ => (settings.warmup, settings.warmup + settings.measure),
        };
        let in_window = |at: Duration| at >= from && at < until;
        let measured: Vec<&Answer> = answers
            .iter()
            .filter(|answer| in_window(answer.due))
            .collect();
        let ok = measured.iter().filter(|answer| answer.ok).count() as u64;
        // A failed request counts at the limit it was given up at, or at what it took.
        let mut latencies: Vec<Duration> = measured.iter().map(|answer| answer.latency).collect();
        let latency = Percentiles::of(&mut latencies);

        let window: Vec<&Sample> = samples
            .iter()
            .filter(|sample| in_window(sample.at))
            .collect();
        let app1_share = match (window.first(), window.last()) {
            (Some(first), Some(last)) => {
                let app1 = last.sessions("app1").saturating_sub(first.sessions("app1"));
                let app2 = last.sessions("app2").saturating_sub(first.sessions("app2"));
                app1 as f64 / (app1 + app2).max(1) as f64
            }
            _ => 0.0,
        };
        let weights: Vec<u32> = window
            .iter()
            .filter_map(|sample| sample.weight("app1"))
            .collect();
        let healing = (scenario == Scenario::Heal).then(|| {
            let after: Vec<(Duration, u32)> = samples
                .iter()
                .filter(|sample| sample.at >= settings.heal_at)
                .filter_map(|sample| Some((sample.at - settings.heal_at, sample.weight("app1")?)))
                .collect();
            let first = |least: u32| after.iter().position(|&(_, weight)| weight >= least);
            let full_at = first(FULL);
            Healing {
                to_full: full_at.map(|index| after[index].0.as_secs_f64()),
                to_100: first(100).map(|index| after[index].0.as_secs_f64()),
                after_full: full_at.map_or_else(WeightSpan::default, |index| {
                    let weights: Vec<u32> = after[index..].iter().map(|&(_, w)| w).collect();
                    WeightSpan::of(&weights)
                }),
            }
        });
        Self {
            requests: measured.len() as u64,
            ok,
            measure: until.saturating_sub(from),
            latency,
            app1_share,
            app1_weight: WeightSpan::of(&weights),
            healing,
            samples,
            logs,
        }
    }

    fn per_second(&self) -> f64 {
        self.ok as f64 / self.measure.as_secs_f64().max(f64::EPSILON)
    }

    fn report(&self, settings: &Settings) -> String {
        let mut out = String::new();
        let latency = &self.latency;
        let _ = writeln!(
            out,
            "   measured {:.0} s: {} requests due, {} answered 200 ({:.0}/s), {} failed",
            self.measure.as_secs_f64(),
            thousands(self.requests),
            thousands(self.ok),
            self.per_second(),
            thousands(self.requests - self.ok),
        );
        let _ = writeln!(
            out,
            "   latency (ms): p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}",
            latency.p50, latency.p90, latency.p99, latency.p999, latency.max
        );
        let _ = writeln!(
            out,
            "   app1: {:.1}% of the requests; weight least / mean / most {}",
            self.app1_share * 100.0,
            self.app1_weight.text()
        );
        if let Some(healing) = &self.healing {
            let seconds =
                |at: Option<f64>| at.map_or_else(|| "never".to_owned(), |at| format!("{at:.1} s"));
            let _ = writeln!(
                out,
                "   healed at +{:.1} s: app1's weight >= {FULL} after {}, 100 after {}; from {FULL} on: {}",
                settings.heal_at.as_secs_f64(),
                seconds(healing.to_full),
                seconds(healing.to_100),
                healing.after_full.text(),
            );
            // The weights from shortly before the heal, each change with its time.
            let mut line = String::from("   app1's weight from the heal (s: weight):");
            let mut last = None;
            for sample in &self.samples {
                let Some(weight) = sample.weight("app1") else {
                    continue;
                };
                let at = sample.at.as_secs_f64() - settings.heal_at.as_secs_f64();
                if at >= -BEFORE_HEAL.as_secs_f64() && last != Some(weight) {
                    let _ = write!(line, " {at:+.1}: {weight}");
                }
                last = Some(weight);
            }
            let _ = writeln!(out, "{line}");
            let app2: Vec<u32> = self
                .samples
                .iter()
                .filter_map(|sample| sample.weight("app2"))
                .collect();
            let _ = writeln!(
                out,
                "   app2's weight over the run: {}",
                WeightSpan::of(&app2).text()
            );
        }
        for (name, lines) in &self.logs {
            let warnings: Vec<&String> = lines
                .lines
                .iter()
                .map(|(_, line)| line)
                // The instances' warnings and heal, HAProxy's servers changing state.
                .filter(|line| {
                    line.contains("WARN") || line.contains(HEALED) || line.contains("Server ")
                })
                .collect();
            let _ = writeln!(
                out,
                "   {name}'s log: {} lines, {} warnings",
                lines.lines.len(),
                warnings.iter().filter(|line| line.contains("WARN")).count()
            );
            for line in warnings.iter().take(6) {
                let line: String = line.chars().take(200).collect();
                let _ = writeln!(out, "      {line}");
            }
        }
        out
    }

    /// Each process's whole log into `dir` (`app1.log`, `app2.log`, `haproxy.log`).
    fn write_logs(&self, dir: &Path) -> std::io::Result<()> {
        for (name, lines) in &self.logs {
            let text: String = lines
                .lines
                .iter()
                .map(|(_, line)| format!("{line}\n"))
                .collect();
            std::fs::write(dir.join(format!("{name}.log")), text)?;
        }
        Ok(())
    }
}

/// Every run in one Markdown table, for `benches/README.md`, each p99 against its baseline's
/// in the same run.
fn table(rows: &[(u32, Scenario, Outcome)]) -> String {
    let mut out = String::from(
        "| run | scenario | answered/s | failed | p50 ms | p90 ms | p99 ms | p99.9 ms | p99 / baseline's | app1's share | app1's weight: least / mean / most | healed: >= 95, 100 after; from 95 on |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (run, scenario, outcome) in rows {
        let baseline = scenario.baseline().and_then(|baseline| {
            rows.iter()
                .find(|(other_run, other, _)| other_run == run && *other == baseline)
        });
        let ratio = baseline.map_or_else(String::new, |(_, _, base)| {
            format!(
                "{:.2}",
                outcome.latency.p99 / base.latency.p99.max(f64::EPSILON)
            )
        });
        let healed = outcome
            .healing
            .as_ref()
            .map_or_else(String::new, |healing| {
                let seconds = |at: Option<f64>| {
                    at.map_or_else(|| "never".to_owned(), |at| format!("{at:.1} s"))
                };
                format!(
                    "{}, {}; {}",
                    seconds(healing.to_full),
                    seconds(healing.to_100),
                    healing.after_full.text()
                )
            });
        let latency = &outcome.latency;
        let _ = writeln!(
            out,
            "| {run} | `{}` | {:.0} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {ratio} | {:.0}% | {} | {healed} |",
            scenario.name(),
            outcome.per_second(),
            thousands(outcome.requests - outcome.ok),
            latency.p50,
            latency.p90,
            latency.p99,
            latency.p999,
            outcome.app1_share * 100.0,
            outcome.app1_weight.text(),
        );
    }
    out
}
