//! gRPC's `weighted_round_robin` against `round_robin`, over two instances of
//! `examples/tonic.rs` with load feedback on, one slower than the other: what the ORCA
//! reports buy a real gRPC client (PyPI's grpcio, gRPC's C core). Issue 39.
//!
//! Run with
//!
//! ```not_rust
//! cargo bench --bench wrr --features grpc -- --runs 3
//! cargo bench --bench wrr --features grpc -- --fast-ms 10 --slow-ms 30 --seconds 20
//! ```
//!
//! The instances are the tonic example itself, built in release by this bench
//! (`cargo build --release --example tonic --features grpc`), started on free ports with no
//! database, `TOWER_HEALTH_LOAD_CAPACITY` (`--capacity`, default 32 calls in flight) and
//! `GREETER_DELAY_MS` (`--fast-ms`, default 10, and `--slow-ms`, default 100: latency
//! injected, each `SayHello` that much slower). The client is `tests/python/wrr.py` (the
//! tests' own), run with the Python of the tests' virtual environment (`TOWER_HEALTH_VENV`,
//! default `~/.cache/tower-health/venv`, with grpcio: `.ci/run` makes it), keeping
//! `--concurrency` calls (default 16) in flight through one channel over both addresses,
//! with each policy in turn: `round_robin`, `wrr` (per-call reports, in each call's
//! trailers) and `wrr-oob` (the out-of-band stream, one report a second), each with a new
//! channel, 8 s to settle (the estimate's time constant is 2 s), then `--seconds` (default
//! 15) measured. `--runs N` repeats the three, interleaved. The client shares the machine's
//! cores with both servers: compare the policies within a run, not runs across machines.
//!
//! It prints, per policy and run, the calls a second, the latency's p50/p90/p99 as the
//! client saw it, the slow instance's share of the calls and of the reports' prediction,
//! then the medians' ratios against `round_robin`. Nothing is asserted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const POLICIES: [&str; 3] = ["round_robin", "wrr", "wrr-oob"];
const SETTLE: Duration = Duration::from_secs(8);

type BoxError = Box<dyn std::error::Error>;

// The tests' virtual environment, found as the tests find it.
#[allow(unreachable_pub)] // `pub` for the tests' support module
#[path = "../tests/it/support/venv.rs"]
mod venv;

struct Settings {
    runs: usize,
    seconds: u64,
    fast_ms: u64,
    slow_ms: u64,
    capacity: u32,
    concurrency: u32,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--list" || arg == "--test") {
        return ExitCode::SUCCESS; // `cargo bench -- --list`, `cargo test --benches`
    }
    match settings(&args).and_then(|settings| run(&settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn settings(args: &[String]) -> Result<Settings, BoxError> {
    let mut settings = Settings {
        runs: 1,
        seconds: 15,
        fast_ms: 10,
        slow_ms: 100,
        capacity: 32,
        concurrency: 16,
    };
    let mut args = args.iter().filter(|arg| *arg != "--bench");
    while let Some(flag) = args.next() {
        let mut value = || -> Result<u64, BoxError> {
            let value = args.next().ok_or(format!("{flag}: a value"))?;
            Ok(value
                .parse()
                .map_err(|_| format!("{flag}: not a number: {value:?}"))?)
        };
        match flag.as_str() {
            "--runs" => settings.runs = usize::try_from(value()?)?,
            "--seconds" => settings.seconds = value()?,
            "--fast-ms" => settings.fast_ms = value()?,
            "--slow-ms" => settings.slow_ms = value()?,
            "--capacity" => settings.capacity = u32::try_from(value()?)?,
            "--concurrency" => settings.concurrency = u32::try_from(value()?)?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    Ok(settings)
}

fn run(settings: &Settings) -> Result<(), BoxError> {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--example",
            "tonic",
            "--features",
            "grpc",
        ])
        .current_dir(manifest)
        .status()?;
    if !built.success() {
        return Err("building the tonic example failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from(manifest).join("target"), PathBuf::from);
    let example = target.join("release/examples/tonic");
    let python = venv::python_with_grpcio()?;

    let fast = Instance::start(&example, settings.fast_ms, settings.capacity)?;
    let slow = Instance::start(&example, settings.slow_ms, settings.capacity)?;
    println!(
        "fast {} ({} ms), slow {} ({} ms), capacity {}, {} calls in flight, {} s a window",
        fast.addr,
        settings.fast_ms,
        slow.addr,
        settings.slow_ms,
        settings.capacity,
        settings.concurrency,
        settings.seconds
    );
    let target = format!("ipv4:{},{}", fast.addr, slow.addr);
    let mut rows: Vec<(usize, &str, Value)> = Vec::new();
    for run in 1..=settings.runs {
        for policy in POLICIES {
            let result = measure(&python, &target, policy, settings)?;
            let slow_share = |kind: &str| result[kind][slow.addr.to_string()].as_f64();
            println!(
                "run {run} {policy:<11} {:>7.1} calls/s  p50 {:>6.1} ms  p90 {:>6.1} ms  p99 {:>6.1} ms  slow share {:.3} (predicted {:.3})  failures {}",
                result["calls_per_second"].as_f64().unwrap_or(0.0),
                result["p50_ms"].as_f64().unwrap_or(f64::NAN),
                result["p90_ms"].as_f64().unwrap_or(f64::NAN),
                result["p99_ms"].as_f64().unwrap_or(f64::NAN),
                slow_share("observed").unwrap_or(f64::NAN),
                slow_share("predicted").unwrap_or(f64::NAN),
                result["failures"],
            );
            rows.push((run, policy, result));
        }
    }
    println!(
        "\nmedians over {} run(s), and against round_robin:",
        settings.runs
    );
    let median = |policy: &str, key: &str| {
        let mut values: Vec<f64> = rows
            .iter()
            .filter(|(_, p, _)| *p == policy)
            .filter_map(|(_, _, result)| result[key].as_f64())
            .collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    };
    for policy in POLICIES {
        let (rate, p90, p99) = (
            median(policy, "calls_per_second"),
            median(policy, "p90_ms"),
            median(policy, "p99_ms"),
        );
        println!(
            "{policy:<11} {rate:>7.1} calls/s ({:.2}x)  p90 {p90:>6.1} ms ({:.2}x)  p99 {p99:>6.1} ms ({:.2}x)",
            rate / median("round_robin", "calls_per_second"),
            p90 / median("round_robin", "p90_ms"),
            p99 / median("round_robin", "p99_ms"),
        );
    }
    Ok(())
}

/// One policy's window: `wrr.py` started, settled, measured, ended.
fn measure(
    python: &PathBuf,
    target: &str,
    policy: &str,
    settings: &Settings,
) -> Result<Value, BoxError> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/wrr.py");
    let mut child = Command::new(python)
        .args([script, "--target", target, "--policy", policy])
        .args(["--concurrency", &settings.concurrency.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("stdout")?);
    let mut ask = |seconds: u64| -> Result<Value, BoxError> {
        writeln!(stdin, "measure {seconds}")?;
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        Ok(serde_json::from_str(&line).map_err(|_| format!("wrr.py said {line:?}"))?)
    };
    ask(SETTLE.as_secs())?;
    let result = ask(settings.seconds)?;
    writeln!(stdin, "quit")?;
    let _ = child.wait();
    Ok(result)
}

/// A running tonic example, killed when dropped.
struct Instance {
    child: Child,
    addr: SocketAddr,
}

impl Instance {
    fn start(example: &PathBuf, delay_ms: u64, capacity: u32) -> Result<Self, BoxError> {
        let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let child = Command::new(example)
            .env("LISTEN_ADDR", addr.to_string())
            .env("DATABASE_URL", "")
            .env("GREETER_DELAY_MS", delay_ms.to_string())
            .env("TOWER_HEALTH_LOAD_CAPACITY", capacity.to_string())
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .spawn()?;
        let instance = Self { child, addr };
        let start = Instant::now();
        while !instance.ready() {
            if start.elapsed() > Duration::from_secs(30) {
                return Err(format!("the instance on {addr} did not become ready").into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(instance)
    }

    /// Whether `/health/ready` answers 200, over HTTP/1.1.
    fn ready(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(self.addr) else {
            return false;
        };
        let request = "GET /health/ready HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
