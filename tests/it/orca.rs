//! ORCA load reports read by a client nobody here wrote: PyPI's `grpcio` (gRPC's C core)
//! balancing with `weighted_round_robin` over two instances of the tonic example, one slower
//! than the other, by the reports each call's trailers carry and by the out-of-band stream;
//! then one instance restarted without load feedback: its reports stop, and the split is
//! even again. The client is `tests/python/wrr.py`, run with the Python of the tests' own
//! virtual environment (`.ci/run` makes it: [`support::python_with_grpcio`]).

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::Value;
use support::child::{Example, ready_example_at};
use support::refused_addr;

/// The instances' capacity: calls in flight.
const CAPACITY: &str = "32";
/// How much longer the slow instance's calls take than the fast one's (10 ms and 30 ms).
const FAST_MS: &str = "10";
const SLOW_MS: &str = "30";

/// `wrr.py` running against `target` with `policy`, answering `measure` commands.
struct Balancer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Balancer {
    fn start(python: &std::path::Path, target: &str, policy: &str) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/wrr.py");
        let mut child = Command::new(python)
            .args([script, "--target", target, "--policy", policy])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start wrr.py");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// The calls and reports of the next `seconds`.
    async fn measure(&mut self, seconds: u32) -> Value {
        writeln!(self.stdin, "measure {seconds}").unwrap();
        let mut line = String::new();
        tokio::task::block_in_place(|| self.stdout.read_line(&mut line)).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("wrr.py said {line:?}"))
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An instance of the tonic example on `addr` with no database, calls `delay_ms` slower,
/// and load feedback on (`capacity`) or off.
async fn instance(addr: SocketAddr, delay_ms: &str, capacity: Option<&str>) -> Example {
    let mut env = vec![("GREETER_DELAY_MS", delay_ms.to_owned())];
    if let Some(capacity) = capacity {
        env.push(("TOWER_HEALTH_LOAD_CAPACITY", capacity.to_owned()));
    }
    ready_example_at("tonic", addr, &env).await
}

fn share(result: &Value, kind: &str, server: SocketAddr) -> f64 {
    result[kind][server.to_string()]
        .as_f64()
        .unwrap_or_else(|| panic!("no {kind} share for {server}: {result}"))
}

/// Two instances, the second three times slower; `policy`'s split followed, then the slow one
/// restarted without load feedback.
async fn weighs_by_the_reports_then_evenly_once_they_stop(policy: &str) {
    let Some(python) = support::python_with_grpcio() else {
        return;
    };
    let (fast, slow) = (refused_addr().await, refused_addr().await);
    let _fast = instance(fast, FAST_MS, Some(CAPACITY)).await;
    let slow_instance = instance(slow, SLOW_MS, Some(CAPACITY)).await;
    let mut balancer = Balancer::start(&python, &format!("ipv4:{fast},{slow}"), policy);

    // The estimate's time constant is 2 s: 8 s settle it, then a window.
    balancer.measure(8).await;
    let weighed = balancer.measure(6).await;
    eprintln!("{policy}, both reporting: {weighed}");
    let (observed, predicted) = (
        share(&weighed, "observed", slow),
        share(&weighed, "predicted", slow),
    );
    assert!(
        (observed - predicted).abs() <= 0.05,
        "the slow instance got {observed:.3} of the calls, the reports predict {predicted:.3}: {weighed}"
    );
    // Little's law: a server's calls in flight over its capacity grow with its latency, so
    // its weight (rps / utilization) is capacity / latency: a third of the fast one's.
    assert!(
        predicted < 0.4,
        "the reports weigh the slow instance as much as the fast one: {weighed}"
    );
    assert_eq!(weighed["failures"], 0, "{weighed}");

    // The slow instance comes back on its address without load feedback: no more reports.
    slow_instance.kill();
    let _slow_again = instance(slow, SLOW_MS, None).await;
    // Its weight expires 2 s after its last report (the service config's); then it takes
    // the mean weight, which is the fast one's.
    balancer.measure(4).await;
    let even = balancer.measure(6).await;
    eprintln!("{policy}, one silent: {even}");
    let observed = share(&even, "observed", slow);
    assert!(
        (observed - 0.5).abs() <= 0.05,
        "the slow instance got {observed:.3} of the calls once its reports stopped: {even}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_weighted_round_robin_follows_the_per_call_reports() {
    weighs_by_the_reports_then_evenly_once_they_stop("wrr").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_weighted_round_robin_follows_the_out_of_band_reports() {
    weighs_by_the_reports_then_evenly_once_they_stop("wrr-oob").await;
}
