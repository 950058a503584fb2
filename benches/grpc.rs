//! What a gRPC health `Check` costs, beside a bare tonic service that answers a constant,
//! measured in the same run.
//!
//! ```text
//! cargo bench --bench grpc --features grpc
//! ```
//!
//! - `grpc/check` (printed first): one unary `Check("")` at a time from a tonic client, over
//!   one HTTP/2 connection on 127.0.0.1, to a tonic server on a thread (and a one-thread
//!   runtime) of its own; the servers interleaved over rounds, each ratio the median of the
//!   per-round ratios. `constant` is `grpc.health.v1` answering `SERVING` to everything, on a bare
//!   `Server::builder()`; `tower-health` is [`HealthService`] on the same builder; `stack` is
//!   the `tonic` example's server (`accept_http1(true)`, `HealthLayer`) with
//!   [`HealthService`]; `stack, load on` the same with load feedback on
//!   (`HealthConfig::load_capacity`): each call counted, and its trailers carrying the ORCA
//!   report (`endpoint-load-metrics-bin`). The first two are
//!   `benches/support/grpc_servers.rs`, which the storm bench's gRPC rows (callgrind
//!   instruction counts) serve as well.
//! - `grpc/service/*`: the `Check` method itself, called in-process: what the view read costs
//!   beside building a constant answer.

use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::Request;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tower_health::grpc::HealthService;
use tower_health::grpc::pb::HealthCheckRequest;
use tower_health::grpc::pb::health_check_response::ServingStatus;
use tower_health::grpc::pb::health_client::HealthClient;
use tower_health::grpc::pb::health_server::Health;
use tower_health::{HealthConfig, HealthLayer, HealthMonitor, Probe};

#[path = "support/grpc_servers.rs"]
mod grpc_servers;
use grpc_servers::{Constant, serve_constant, serve_health_service};

/// Which server answers.
#[derive(Copy, Clone)]
enum Kind {
    Constant,
    TowerHealth,
    Stack,
    StackLoaded,
}

/// A server thread: where it listens, its CPU time's file, and what stops it.
struct Running {
    addr: SocketAddr,
    /// `/proc/<pid>/task/<tid>/schedstat`: the thread's time on a CPU, in nanoseconds, first.
    schedstat: PathBuf,
    _stop: oneshot::Sender<()>,
}

impl Running {
    /// Nanoseconds the server thread has spent on a CPU so far.
    fn cpu_ns(&self) -> u64 {
        let stat = std::fs::read_to_string(&self.schedstat).unwrap();
        stat.split_whitespace().next().unwrap().parse().unwrap()
    }
}

/// Starts `which` on a thread of its own (every connection and call runs on it: a one-thread
/// runtime).
fn start(which: Kind) -> Running {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let thread = std::fs::read_link("/proc/thread-self").unwrap();
        let schedstat = Path::new("/proc").join(thread).join("schedstat");
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx
                .send((listener.local_addr().unwrap(), schedstat))
                .unwrap();
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            let stopped = async {
                let _ = stopped.await;
            };
            let config = match which {
                Kind::StackLoaded => HealthConfig::new().load_capacity(64),
                _ => HealthConfig::new(),
            };
            let health = HealthMonitor::spawn(config).unwrap();
            let mut watch = health.watch();
            while !watch.changed().await.unwrap().answer(Probe::Ready).passing {}
            match which {
                Kind::Constant => serve_constant(incoming, stopped).await.unwrap(),
                Kind::TowerHealth => serve_health_service(health, incoming, stopped)
                    .await
                    .unwrap(),
                Kind::Stack | Kind::StackLoaded => Server::builder()
                    .accept_http1(true)
                    .layer(HealthLayer::new(&health))
                    .add_service(HealthService::new(&health).server())
                    .serve_with_incoming_shutdown(incoming, stopped)
                    .await
                    .unwrap(),
            }
        });
    });
    let (addr, schedstat) = addr_rx.recv().unwrap();
    Running {
        addr,
        schedstat,
        _stop: stop,
    }
}

/// Calls per server per round.
const CALLS: u32 = 2_000;
/// Measured rounds.
const ROUNDS: usize = 9;

/// The servers run interleaved (a, b, c, a, b, c, ...), each round making `CALLS` sequential
/// calls to each; a ratio is the median of the per-round ratios. The server's CPU time per
/// call (its thread's, from `/proc`) is far steadier than wall time on a shared machine.
fn over_http2() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let servers = [
        ("constant", Kind::Constant),
        ("tower-health", Kind::TowerHealth),
        ("stack", Kind::Stack),
        ("stack, load on", Kind::StackLoaded),
    ];
    let mut clients: Vec<_> = servers
        .iter()
        .map(|(name, which)| {
            let server = start(*which);
            let client = runtime.block_on(async {
                let channel = Channel::from_shared(format!("http://{}", server.addr))
                    .unwrap()
                    .connect()
                    .await
                    .unwrap();
                HealthClient::new(channel)
            });
            (*name, client, server)
        })
        .collect();
    let mut per_call = vec![Vec::new(); clients.len()];
    let mut cpu_per_call = vec![Vec::new(); clients.len()];
    // A first round warms every connection up, and is not counted.
    for round in 0..=ROUNDS {
        for (index, (_, client, server)) in clients.iter_mut().enumerate() {
            let cpu_before = server.cpu_ns();
            let elapsed = runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..CALLS {
                    let status = client
                        .check(HealthCheckRequest::default())
                        .await
                        .unwrap()
                        .into_inner()
                        .status();
                    assert_eq!(status, ServingStatus::Serving);
                }
                start.elapsed()
            });
            let cpu = server.cpu_ns() - cpu_before;
            if round > 0 {
                per_call[index].push(elapsed.as_secs_f64() / f64::from(CALLS));
                cpu_per_call[index].push(cpu as f64 / f64::from(CALLS));
            }
        }
    }
    println!(
        "grpc/check: one Check(\"\") at a time over HTTP/2 on 127.0.0.1, {ROUNDS} interleaved rounds of {CALLS} calls"
    );
    println!(
        "{:<14} {:>18} {:>10} {:>16} {:>10}",
        "server", "server CPU per call", "ratio", "wall per call", "ratio"
    );
    for (index, (name, _, _)) in clients.iter().enumerate() {
        println!(
            "{name:<14} {:>16.2} µs {:>9.3}x {:>13.1} µs {:>9.3}x",
            median(cpu_per_call[index].clone()) / 1e3,
            median_ratio(&cpu_per_call[index], &cpu_per_call[0]),
            median(per_call[index].clone()) * 1e6,
            median_ratio(&per_call[index], &per_call[0]),
        );
    }
    clients.clear();
}

/// The median of the per-round ratios of `mine` to `baseline`.
fn median_ratio(mine: &[f64], baseline: &[f64]) -> f64 {
    median(mine.iter().zip(baseline).map(|(m, b)| m / b).collect())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn in_process(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let service = runtime.block_on(async {
        let health = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        let mut watch = health.watch();
        while !watch.changed().await.unwrap().answer(Probe::Ready).passing {}
        HealthService::new(&health)
    });
    let mut group = c.benchmark_group("grpc/service");
    group.bench_function("constant", |b| {
        b.iter(|| {
            black_box(now(
                Constant.check(Request::new(HealthCheckRequest::default()))
            ))
        })
    });
    group.bench_function("tower-health", |b| {
        b.iter(|| {
            black_box(now(
                service.check(Request::new(HealthCheckRequest::default()))
            ))
        })
    });
    group.finish();
}

/// The output of a future that is ready at its first poll (`Check` never waits).
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("Check waited"),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = in_process
}

fn main() {
    over_http2();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
