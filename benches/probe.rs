//! Criterion micro-benchmarks of the probe path, each beside its baseline measured in the same
//! run, and a count of heap allocations per answer.
//!
//! ```text
//! cargo bench --bench probe
//! ```
//!
//! - `probe/*`: `Health::call` on each probe path (the future is ready at once), beside
//!   `probe/floor`: a method and path match, one `ArcSwap` load, and a response built from a
//!   cloned `HeaderMap` and cloned `Bytes`, the least any pre-rendered answer can cost.
//! - `passthrough/*`: an ordinary request (call, future, body to its end) through
//!   `HealthLayer` + `DrainLayer` (as `examples/hyper.rs` stacks them), beside the bare inner
//!   service; with
//!   `--features axum`, `passthrough/router` (an axum `Router` with one route) beside
//!   `passthrough/around`, the same router in the form the README recommends,
//!   `health.around(router)` with a drain; `passthrough/router_empty` and
//!   `passthrough/around_empty` the same for a response without a body (204).
//!   `PROBE_LOOP` runs one of these cases alone, for callgrind (see `pass_through_loop`).
//! - `components/*`: the health and readiness probes of a monitor with 20 components
//!   registered, to compare with `probe/health` and `probe/ready`: the body is longer, the
//!   work per probe is not (components change what a round renders, not what a probe does).
//! - `metrics/*` (with `--features metrics`): `HealthMetrics::exposition` on a monitor whose
//!   view stands still (the rendering is cached: a pointer load, the staleness and drain checks,
//!   a `Bytes` clone), beside `metrics/ready`, the ready probe through `HealthLayer` measured
//!   in the same run; `metrics/exposition_rendered`, a scrape after the drain's figures moved
//!   (as the in-flight count does between two scrapes under traffic), which renders.
//! - `noise/*`: the probe path while another thread publishes new verdicts as fast as it can
//!   (arc-swap's "noise" pattern): reads stay lock-free under updates.
//!
//! Allocations per answer are counted with a counting global allocator and printed first.

use std::alloc::{GlobalAlloc, Layout, System};
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::Full;
use tower::{Layer, Service};
use tower_health::check::{CheckFuture, CheckReport, DatabaseCheck};
use tower_health::component::{self, ComponentSpec};
use tower_health::{DrainLayer, HealthConfig, HealthHandle, HealthLayer, HealthMonitor};

/// Counts allocations while `COUNTING` is on.
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counter has no
// bearing on memory.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// A database check that succeeds at once, so verdicts are healthy without any I/O.
#[derive(Debug)]
struct Instant;

impl DatabaseCheck for Instant {
    fn vendor(&self) -> &'static str {
        "bench"
    }

    fn check(&self) -> CheckFuture {
        Box::pin(async { Ok(CheckReport::default()) })
    }
}

/// The inner service: answers `ok` at once.
#[derive(Clone)]
struct Inner;

impl Service<Request<()>> for Inner {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        ready(Ok(Response::new(Full::new(Bytes::from_static(b"ok")))))
    }
}

/// Polls a future that must be ready at once.
///
/// Always inlined, so that every case polls its future where the call left it: left to
/// itself, LLVM inlined this for the bare router's future and not for the stack's, whose
/// pass-through then paid one more copy of the future (64 instructions) that only this
/// helper made.
#[inline(always)]
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future was not ready at once"),
    }
}

/// Reads a body to its end (its frames are ready at once).
fn consume<B: Body + Unpin>(mut body: B) {
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
        black_box(frame.ok());
    }
}

fn request(path: &'static str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

/// A monitor with one always-ready database, its first rounds done.
fn monitor(runtime: &tokio::runtime::Runtime, config: HealthConfig) -> HealthHandle {
    let _entered = runtime.enter();
    let health = HealthMonitor::spawn(config.database("default", Instant)).unwrap();
    runtime.block_on(async {
        while health.view().readiness.checked_at.is_none()
            || health.view().health.checked_at.is_none()
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    health
}

/// What the floor reads: a pre-rendered answer.
struct Rendered {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

fn floor_answer(request: &Request<()>, swap: &ArcSwap<Rendered>) -> Option<Response<Full<Bytes>>> {
    if request.method() != Method::GET || request.uri().path() != "/health/ready" {
        return None;
    }
    let rendered = swap.load();
    let mut response = Response::new(Full::new(rendered.body.clone()));
    *response.status_mut() = rendered.status;
    *response.headers_mut() = rendered.headers.clone();
    Some(response)
}

fn floor() -> ArcSwap<Rendered> {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    ArcSwap::from_pointee(Rendered {
        status: StatusCode::OK,
        headers,
        body: Bytes::from(br#"{"status":"ready","checks":{"database_default":"ready"}}"#.to_vec()),
    })
}

const PATHS: [(&str, &str); 5] = [
    ("ready", "/health/ready"),
    ("live", "/health/live"),
    ("ping", "/health/ping"),
    ("health", "/health"),
    ("pool", "/health/pool"),
];

/// 20 components that answer at once.
fn with_components(config: HealthConfig) -> HealthConfig {
    (0..20).fold(config, |config, index| {
        config.component(ComponentSpec::new(
            &format!("component-{index}"),
            component::from_fn(|| async { Ok(()) }),
        ))
    })
}

fn components(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let health = monitor(&runtime, with_components(HealthConfig::new()));
    let mut service = HealthLayer::new(&health).layer(Inner);
    let mut group = c.benchmark_group("components");
    for (name, path) in [("health", "/health"), ("ready", "/health/ready")] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || request(path),
                |request| black_box(now(service.call(request))),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn probes(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let health = monitor(&runtime, HealthConfig::new());
    let mut service = HealthLayer::new(&health).layer(Inner);
    let swap = floor();

    let mut group = c.benchmark_group("probe");
    group.bench_function("floor", |b| {
        b.iter_batched(
            || request("/health/ready"),
            |request| black_box(floor_answer(&request, &swap)),
            BatchSize::SmallInput,
        );
    });
    for (name, path) in PATHS {
        group.bench_function(name, |b| {
            b.iter_batched(
                || request(path),
                |request| black_box(now(service.call(request))),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn passthrough(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let health = monitor(&runtime, HealthConfig::new());
    let drain = health.drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let mut stack = HealthLayer::new(&health).layer(drain_layer.layer(Inner));
    let mut bare = Inner;

    let mut group = c.benchmark_group("passthrough");
    group.bench_function("bare", |b| {
        b.iter_batched(
            || request("/"),
            |request| consume(now(bare.call(request)).unwrap().into_body()),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("stack", |b| {
        b.iter_batched(
            || request("/"),
            |request| {
                now(std::future::poll_fn(|cx| stack.poll_ready(cx))).unwrap();
                consume(now(stack.call(request)).unwrap().into_body());
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn noise(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = HealthConfig::new()
        .readiness_interval(Duration::from_millis(1))
        .nocache_min_interval(Duration::ZERO);
    let health = monitor(&runtime, config);
    let mut service = HealthLayer::new(&health).layer(Inner);

    let mut group = c.benchmark_group("noise");
    for (name, path) in [("ready", "/health/ready"), ("health", "/health")] {
        group.bench_function(format!("{name}/uncontended"), |b| {
            b.iter_batched(
                || request(path),
                |request| black_box(now(service.call(request))),
                BatchSize::SmallInput,
            );
        });
    }
    // A writer publishing fresh health and pool verdicts back to back, and readiness every
    // millisecond.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut published = 0_u64;
            runtime.block_on(async {
                while !stop.load(Ordering::Relaxed) {
                    health.refresh().await;
                    published += 1;
                }
            });
            published
        })
    };
    for (name, path) in [("ready", "/health/ready"), ("health", "/health")] {
        group.bench_function(format!("{name}/writer"), |b| {
            b.iter_batched(
                || request(path),
                |request| black_box(now(service.call(request))),
                BatchSize::SmallInput,
            );
        });
    }
    stop.store(true, Ordering::Relaxed);
    let published = writer.join().unwrap();
    eprintln!("noise: the writer published {published} health verdicts during the writer benches");
    group.finish();
}

/// Allocations per call of `routine`, averaged over many calls after a warm-up.
fn allocations_per_call(mut routine: impl FnMut()) -> f64 {
    const CALLS: u64 = 10_000;
    for _ in 0..100 {
        routine();
    }
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..CALLS {
        routine();
    }
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::SeqCst) as f64 / CALLS as f64
}

fn report_allocations() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Long intervals: no round allocates while counting.
    let hour = Duration::from_secs(3600);
    let health = monitor(
        &runtime,
        HealthConfig::new()
            .readiness_interval(hour)
            .health_interval(hour),
    );
    let mut service = HealthLayer::new(&health).layer(Inner);
    let drain = health.drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let mut stack = HealthLayer::new(&health).layer(drain_layer.layer(Inner));
    let swap = floor();

    eprintln!("allocations per answer (request construction excluded):");
    let mut pending = Vec::with_capacity(20_000);
    let mut measure =
        |name: &str, mut routine: Box<dyn FnMut(Request<()>) + '_>, path: &'static str| {
            pending.clear();
            pending.extend((0..10_200).map(|_| request(path)));
            let mut requests = pending.drain(..);
            let per_call = allocations_per_call(|| routine(requests.next().unwrap()));
            eprintln!("  {name:<24} {per_call:.2}");
        };
    measure(
        "probe/floor",
        Box::new(|request| drop(black_box(floor_answer(&request, &swap)))),
        "/health/ready",
    );
    for (name, path) in PATHS {
        let service = &mut service;
        measure(
            &format!("probe/{name}"),
            Box::new(move |request| drop(black_box(now(service.call(request))))),
            path,
        );
    }
    let mut with_components = HealthLayer::new(monitor(
        &runtime,
        with_components(
            HealthConfig::new()
                .readiness_interval(hour)
                .health_interval(hour),
        ),
    ))
    .layer(Inner);
    for (name, path) in [("health", "/health"), ("ready", "/health/ready")] {
        let service = &mut with_components;
        measure(
            &format!("components/{name}"),
            Box::new(move |request| drop(black_box(now(service.call(request))))),
            path,
        );
    }
    let mut bare = Inner;
    measure(
        "passthrough/bare",
        Box::new(|request| consume(now(bare.call(request)).unwrap().into_body())),
        "/",
    );
    measure(
        "passthrough/stack",
        Box::new(|request| {
            now(std::future::poll_fn(|cx| stack.poll_ready(cx))).unwrap();
            consume(now(stack.call(request)).unwrap().into_body());
        }),
        "/",
    );
}

#[cfg(feature = "metrics")]
fn metrics(c: &mut Criterion) {
    use tower_health::metrics::HealthMetrics;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Long intervals: the view stands still, as between two rounds.
    let hour = Duration::from_secs(3600);
    let health = monitor(
        &runtime,
        HealthConfig::new()
            .readiness_interval(hour)
            .health_interval(hour),
    );
    let metrics = HealthMetrics::new(&health);
    let mut service = HealthLayer::new(&health).layer(Inner);

    let mut group = c.benchmark_group("metrics");
    group.bench_function("ready", |b| {
        b.iter_batched(
            || request("/health/ready"),
            |request| black_box(now(service.call(request))),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("exposition", |b| b.iter(|| black_box(metrics.exposition())));
    // A scrape that renders: the drain's figures moved since the last one (a long-lived
    // connection registered and gone, as under traffic, where the in-flight count moves
    // between two scrapes), so the exposition is rendered again.
    let drain = health.drain().clone();
    group.bench_function("exposition_rendered", |b| {
        b.iter(|| {
            drop(drain.long_lived("bench"));
            black_box(metrics.exposition())
        });
    });
    group.finish();
}

#[cfg(not(feature = "metrics"))]
fn metrics(_: &mut Criterion) {}

/// An axum router with one route answering `ok` (`/`) and one answering 204 without a body
/// (`/empty`), routes prepared as `axum::serve` prepares them for each connection; and the
/// same router in the recommended form, `health.around(router)` with a drain.
#[cfg(feature = "axum")]
fn axum_pair(
    runtime: &tokio::runtime::Runtime,
) -> (
    axum::Router,
    tower_health::axum::Stack<axum::Router>,
    tower_health::DrainHandle,
) {
    // Long intervals: no round runs while requests are counted.
    let hour = Duration::from_secs(3600);
    let config = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour);
    let health = HealthLayer::new(monitor(runtime, config));
    let drain = health.handle().drain().clone();
    // `with_state` prepares the routes once, as `axum::serve` does for each connection.
    let router = axum::Router::new()
        .route("/", axum::routing::get(|| async { "ok" }))
        .route(
            "/empty",
            axum::routing::get(|| async { StatusCode::NO_CONTENT }),
        )
        .with_state(());
    let around = health.around(router.clone());
    (router, around, drain)
}

#[cfg(feature = "axum")]
fn axum_request(path: &'static str) -> Request<axum::body::Body> {
    Request::get(path).body(axum::body::Body::empty()).unwrap()
}

/// The recommended axum form against the bare router: the same request through both, with a
/// body (`router`, `around`) and without (`router_empty`, `around_empty`).
#[cfg(feature = "axum")]
fn passthrough_axum(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut bare, mut around, _drain) = axum_pair(&runtime);

    let mut group = c.benchmark_group("passthrough");
    for (suffix, path) in [("", "/"), ("_empty", "/empty")] {
        group.bench_function(format!("router{suffix}"), |b| {
            b.iter_batched(
                || axum_request(path),
                |request| consume(now(bare.call(request)).unwrap().into_body()),
                BatchSize::SmallInput,
            );
        });
        group.bench_function(format!("around{suffix}"), |b| {
            b.iter_batched(
                || axum_request(path),
                |request| consume(now(around.call(request)).unwrap().into_body()),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

#[cfg(not(feature = "axum"))]
fn passthrough_axum(_: &mut Criterion) {}

/// `PROBE_LOOP=<case> PROBE_REQUESTS=<n>`: only `n` pass-through requests of one case, built
/// in advance, and nothing else, for callgrind to count. Two runs with different `n` give the
/// instructions per request (the difference over the difference in `n`):
///
/// ```text
/// PROBE_LOOP=around PROBE_REQUESTS=10000 valgrind --tool=callgrind target/release/deps/probe-<hash>
/// ```
///
/// Cases: `bare` and `stack` (the layers under `ServiceBuilder`); with `--features axum`,
/// `router`, `around`, `router_empty`, `around_empty`.
fn pass_through_loop(case: &str, requests: usize) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Long intervals: no round runs while requests are counted.
    let hour = Duration::from_secs(3600);
    let config = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour);
    let health = monitor(&runtime, config);
    let drain = health.drain().clone();
    let drain_layer = DrainLayer::new(&drain);
    let mut stack = HealthLayer::new(&health).layer(drain_layer.layer(Inner));
    match case {
        "bare" => {
            let mut pending: Vec<_> = (0..requests).map(|_| request("/")).collect();
            for request in pending.drain(..) {
                consume(now(Inner.call(request)).unwrap().into_body());
            }
        }
        "stack" => {
            let mut pending: Vec<_> = (0..requests).map(|_| request("/")).collect();
            for request in pending.drain(..) {
                now(std::future::poll_fn(|cx| stack.poll_ready(cx))).unwrap();
                consume(now(stack.call(request)).unwrap().into_body());
            }
        }
        #[cfg(feature = "axum")]
        "router" | "around" | "router_empty" | "around_empty" => {
            let (mut bare, mut around, _drain) = axum_pair(&runtime);
            let path = if case.ends_with("_empty") {
                "/empty"
            } else {
                "/"
            };
            let mut pending: Vec<_> = (0..requests).map(|_| axum_request(path)).collect();
            if case.starts_with("router") {
                for request in pending.drain(..) {
                    consume(now(bare.call(request)).unwrap().into_body());
                }
            } else {
                for request in pending.drain(..) {
                    consume(now(around.call(request)).unwrap().into_body());
                }
            }
        }
        other => panic!("PROBE_LOOP={other}: not a case (see `pass_through_loop`)"),
    }
}

/// `PROBE_MIN=<rounds>` (with `--features axum`): the least time per request of the axum
/// pass-through cases over `rounds` batches of 1,000 requests each, the cases interleaved
/// batch by batch. On a machine shared with other jobs, a batch that was never preempted is
/// the one that shows what the code costs; criterion's mean shows the machine's load as well.
#[cfg(feature = "axum")]
fn least_times(rounds: usize) {
    use std::time::Instant;

    const BATCH: usize = 1_000;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut bare, mut around, _drain) = axum_pair(&runtime);
    let cases = ["router", "around", "router_empty", "around_empty"];
    let mut least = [f64::INFINITY; 4];
    let mut pending = Vec::with_capacity(BATCH);
    for _ in 0..rounds {
        for (index, case) in cases.iter().enumerate() {
            let path = if case.ends_with("_empty") {
                "/empty"
            } else {
                "/"
            };
            pending.extend((0..BATCH).map(|_| axum_request(path)));
            let started = Instant::now();
            if case.starts_with("router") {
                for request in pending.drain(..) {
                    consume(now(bare.call(request)).unwrap().into_body());
                }
            } else {
                for request in pending.drain(..) {
                    consume(now(around.call(request)).unwrap().into_body());
                }
            }
            let per_request = started.elapsed().as_nanos() as f64 / BATCH as f64;
            least[index] = least[index].min(per_request);
        }
    }
    for (case, ns) in cases.iter().zip(least) {
        eprintln!("  {case:<14} {ns:7.1} ns");
    }
    eprintln!(
        "  around over router: {:.1} ns; around_empty over router_empty: {:.1} ns",
        least[1] - least[0],
        least[3] - least[2]
    );
}

criterion_group!(
    benches,
    probes,
    components,
    passthrough,
    passthrough_axum,
    metrics,
    noise
);

fn main() {
    if let Ok(case) = std::env::var("PROBE_LOOP") {
        let requests = std::env::var("PROBE_REQUESTS")
            .ok()
            .map_or(10_000, |n| n.parse().expect("PROBE_REQUESTS: a number"));
        pass_through_loop(&case, requests);
        return;
    }
    #[cfg(feature = "axum")]
    if let Ok(rounds) = std::env::var("PROBE_MIN") {
        least_times(rounds.parse().expect("PROBE_MIN: a number"));
        return;
    }
    report_allocations();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
