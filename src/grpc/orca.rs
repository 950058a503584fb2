//! `xds.service.orca.v3.OpenRcaService`: out-of-band ORCA load reports for gRPC clients that
//! weigh their backends by them (`weighted_round_robin` with `enableOobLoadReport`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};
use tonic::codegen::BoxStream;
use tonic::{Request, Response, Status};

use super::pb::orca::open_rca_service_server::{OpenRcaService, OpenRcaServiceServer};
use super::pb::orca::{OrcaLoadReport, OrcaLoadReportRequest};
use crate::dialect::orca;
use crate::monitor::HealthHandle;
use crate::util::race;

/// The shortest interval between two reports of a stream: the load estimate moves with a
/// time constant of two seconds, so a report more often says nothing new. A client that
/// asks for less (or for nothing) gets this.
pub const MIN_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// The longest interval between two reports of a stream: a client that asks for more gets
/// this.
pub const MAX_REPORT_INTERVAL: Duration = Duration::from_secs(600);

/// `xds.service.orca.v3.OpenRcaService` (`StreamCoreMetrics`): the monitor's load estimate
/// and request rates, as out-of-band ORCA reports, for gRPC clients whose
/// `weighted_round_robin` asks for them (`enableOobLoadReport: true`) rather than reading the
/// report each response's trailers carry.
///
/// A stream sends a report at once, then one at the interval the client asks for, within
/// [`MIN_REPORT_INTERVAL`] and [`MAX_REPORT_INTERVAL`]. Each carries the figures the
/// per-call reports carry (`application_utilization`, `rps_fractional`, `eps`), read when it
/// is sent: a report costs a few atomic loads and one small message, never a check. With
/// load feedback off (no [`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)),
/// a call answers `UNIMPLEMENTED`, which tells a client this server reports nothing, and the
/// client balances without weights.
///
/// Streams end when the server's graceful shutdown begins, as
/// [`HealthService`](super::HealthService#streams-and-the-shutdown)'s `Watch` streams do:
/// when the drain delay has passed, or at [`close_streams`](Self::close_streams).
///
/// ```
/// use tower_health::grpc::OrcaService;
/// use tower_health::{HealthConfig, HealthMonitor};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let monitor = HealthMonitor::spawn(HealthConfig::new().load_capacity(64))?;
/// let orca = OrcaService::new(&monitor);
/// // Server::builder().layer(HealthLayer::new(&monitor)).add_service(orca.server())...
/// # drop(orca.server());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OrcaService {
    handle: HealthHandle,
    closed: Arc<watch::Sender<bool>>,
}

impl OrcaService {
    /// Reports the load estimate of `health`'s monitor.
    #[must_use]
    pub fn new(health: &HealthHandle) -> Self {
        Self {
            handle: health.clone(),
            closed: Arc::new(watch::Sender::new(false)),
        }
    }

    /// The service to add to a tonic server (`Server::builder().add_service(..)`).
    #[must_use]
    pub fn server(self) -> OpenRcaServiceServer<Self> {
        OpenRcaServiceServer::new(self)
    }

    /// Ends every stream of this service (and its clones) now; a later call gets one report
    /// and its stream ends. For a server whose graceful shutdown does not come from
    /// [`DrainHandle::serve`](crate::DrainHandle::serve): call it when its shutdown begins.
    pub fn close_streams(&self) {
        self.closed.send_replace(true);
    }
}

impl fmt::Debug for OrcaService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrcaService")
            .field("handle", &self.handle)
            .field("streams_closed", &*self.closed.borrow())
            .finish()
    }
}

#[tonic::async_trait]
impl OpenRcaService for OrcaService {
    type StreamCoreMetricsStream = BoxStream<OrcaLoadReport>;

    async fn stream_core_metrics(
        &self,
        request: Request<OrcaLoadReportRequest>,
    ) -> Result<Response<Self::StreamCoreMetricsStream>, Status> {
        if self.handle.load().is_none() {
            return Err(Status::unimplemented(
                "load feedback is off: no load reports (TOWER_HEALTH_LOAD_CAPACITY)",
            ));
        }
        let every = report_interval(request.get_ref().report_interval.as_ref());
        let mut ticks = tokio::time::interval(every);
        // A report the stream could not send on time is late, not owed twice.
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut closed = self.closed.subscribe();
        let drain = self.handle.drain().clone();
        let ended = async move {
            let closed = async {
                // A service dropped (every clone) closes nothing: its streams run on.
                if closed.wait_for(|closed| *closed).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            // The moment `DrainHandle::serve` begins the server's graceful shutdown.
            race(closed, drain.delay_elapsed()).await;
        };
        Ok(Response::new(Box::pin(Reports {
            handle: self.handle.clone(),
            ticks,
            ended: Some(Box::pin(ended)),
        })))
    }
}

/// The interval a client asked for, within the bounds; an interval that is absent, negative
/// or malformed (nanoseconds out of `0..1e9`) reads as the shortest.
fn report_interval(asked: Option<&super::pb::orca::Duration>) -> Duration {
    let asked = asked.and_then(|asked| {
        let seconds = u64::try_from(asked.seconds).ok()?;
        let nanos = u32::try_from(asked.nanos)
            .ok()
            .filter(|nanos| *nanos < 1_000_000_000)?;
        Some(Duration::new(seconds, nanos))
    });
    asked.map_or(MIN_REPORT_INTERVAL, |asked| {
        asked.clamp(MIN_REPORT_INTERVAL, MAX_REPORT_INTERVAL)
    })
}

/// One stream's reports: the figures now at every tick, until the shutdown.
struct Reports {
    handle: HealthHandle,
    ticks: Interval,
    /// Resolves when the stream must end; `None` once it has.
    ended: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Stream for Reports {
    type Item = Result<OrcaLoadReport, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(ended) = self.ended.as_mut() else {
            return Poll::Ready(None);
        };
        if ended.as_mut().poll(cx).is_ready() {
            self.ended = None;
            return Poll::Ready(None);
        }
        ready!(self.ticks.poll_tick(cx));
        let handle = &self.handle;
        // Load feedback is set once, at the monitor's start: it is on for the stream's life.
        let (Some(utilization), Some(rates)) = (handle.load(), handle.rates()) else {
            return Poll::Ready(None);
        };
        Poll::Ready(Some(Ok(message(orca::Figures::of(utilization, rates)))))
    }
}

/// The message of `figures`: what the per-call binary form serializes
/// ([`orca::message`]).
fn message(figures: orca::Figures) -> OrcaLoadReport {
    OrcaLoadReport {
        application_utilization: figures.utilization,
        rps_fractional: figures.requests,
        eps: figures.errors,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::VecDeque;
    use std::convert::Infallible;

    use base64::Engine as _;
    use bytes::Bytes;
    use http::{HeaderMap, HeaderValue, StatusCode};
    use http_body::{Body, Frame};
    use prost::Message as _;
    use tower::ServiceExt as _;
    use tower_layer::Layer as _;

    use crate::{HealthConfig, HealthMonitor};

    /// A gRPC response's body: a message, then the trailers.
    struct GrpcBody(VecDeque<Frame<Bytes>>);

    impl Body for GrpcBody {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    /// A gRPC application: `/ok` answers `OK` in its trailers, `/fail` `INTERNAL` (13),
    /// `/invalid` a trailers-only `INVALID_ARGUMENT` (3), anything else a plain HTTP 200.
    fn app() -> impl tower::Service<
        http::Request<http_body_util::Empty<Bytes>>,
        Response = http::Response<GrpcBody>,
        Error = Infallible,
        Future = impl Future<Output = Result<http::Response<GrpcBody>, Infallible>>,
    > + Clone {
        tower::service_fn(|request: http::Request<http_body_util::Empty<Bytes>>| {
            let grpc = HeaderValue::from_static("application/grpc");
            let status = |code: &'static str| {
                let mut trailers = HeaderMap::new();
                trailers.insert("grpc-status", HeaderValue::from_static(code));
                trailers
            };
            let mut frames = VecDeque::new();
            let mut response = http::Response::new(());
            match request.uri().path() {
                "/invalid" => {
                    response.headers_mut().insert("content-type", grpc);
                    response.headers_mut().extend(status("3"));
                }
                path @ ("/ok" | "/fail") => {
                    response.headers_mut().insert("content-type", grpc);
                    frames.push_back(Frame::data(Bytes::from_static(b"\0\0\0\0\0")));
                    let code = if path == "/ok" { "0" } else { "13" };
                    frames.push_back(Frame::trailers(status(code)));
                }
                _ => frames.push_back(Frame::data(Bytes::from_static(b"plain"))),
            }
            std::future::ready(Ok(response.map(|()| GrpcBody(frames))))
        })
    }

    /// What a call to `path` carried: its head's headers and its trailers.
    async fn call<S, B>(service: &S, path: &str) -> (HeaderMap, Option<HeaderMap>)
    where
        S: tower::Service<
                http::Request<http_body_util::Empty<Bytes>>,
                Response = http::Response<B>,
                Error = Infallible,
            > + Clone,
        B: Body<Data = Bytes>,
        B::Error: fmt::Debug,
    {
        use http_body_util::BodyExt as _;
        let request = http::Request::post(path)
            .body(http_body_util::Empty::new())
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let (head, body) = response.into_parts();
        let collected = body.collect().await.unwrap();
        (head.headers, collected.trailers().cloned())
    }

    fn decoded(value: &HeaderValue) -> OrcaLoadReport {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.as_bytes())
            .unwrap();
        OrcaLoadReport::decode(bytes.as_slice()).unwrap()
    }

    #[test]
    fn the_per_call_form_is_the_message_prost_writes_and_reads() {
        use crate::load::{Rates, Utilization};
        for (utilization, requests, errors) in [
            (0.0, 0.0, 0.0),
            (0.42, 120.5, 0.3),
            (1.0, 1e8, 1e8),
            (1e-9, 0.0, 7.0),
            (f64::NAN, f64::INFINITY, -1.0),
        ] {
            let figures =
                orca::Figures::of(Utilization::new(utilization), Rates { requests, errors });
            let written = orca::message(figures);
            assert_eq!(written, message(figures).encode_to_vec(), "{figures:?}");
            assert_eq!(
                OrcaLoadReport::decode(written.as_slice()).unwrap(),
                message(figures)
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_grpc_call_carries_its_report_in_its_trailers_and_its_status_counts() {
        let health = HealthMonitor::spawn(HealthConfig::new().load_capacity(10)).unwrap();
        let service = crate::HealthLayer::new(&health)
            .layer(crate::DrainLayer::new(health.drain()).layer(app()));
        // Ten calls a second for twenty seconds (ten time constants), a third of them
        // failing with `INTERNAL`, a third refused as the client's error (trailers-only).
        for round in 0..200 {
            let path = ["/ok", "/fail", "/invalid"][round % 3];
            let (head, trailers) = call(&service, path).await;
            assert_eq!(head.get(orca::HEADER), None, "{path}: one form, gRPC's");
            let report = match trailers {
                Some(trailers) => {
                    assert_eq!(head.get(orca::BINARY_HEADER), None, "{path}");
                    trailers.get(orca::BINARY_HEADER).cloned()
                }
                // Trailers-only: the one header block carries it.
                None => head.get(orca::BINARY_HEADER).cloned(),
            };
            let report = decoded(&report.unwrap_or_else(|| panic!("{path}: no report")));
            assert!((0.0..=1.0).contains(&report.application_utilization));
            assert_eq!(report.cpu_utilization, 0.0, "not read, not sent");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let requests = health.requests_per_second().unwrap();
        let errors = health.errors_per_second().unwrap();
        assert!((requests - 10.0).abs() < 1.5, "{requests} calls/s, not 10");
        // `INTERNAL` is the server's error; `INVALID_ARGUMENT` the client's.
        assert!(
            (errors - 10.0 / 3.0).abs() < 0.6,
            "{errors} errors/s, not 3.3"
        );
        let (_, trailers) = call(&service, "/ok").await;
        let report = decoded(trailers.unwrap().get(orca::BINARY_HEADER).unwrap());
        assert!((report.rps_fractional - requests).abs() < 0.5, "{report:?}");
        assert!((report.eps - errors).abs() < 0.5, "{report:?}");
        // A plain HTTP response beside them gets Envoy's form in its head.
        let (head, trailers) = call(&service, "/plain").await;
        assert!(head.get(orca::HEADER).is_some());
        assert_eq!(head.get(orca::BINARY_HEADER), None);
        assert_eq!(trailers, None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_reports_at_once_then_at_its_interval_until_closed() {
        use tokio_stream::StreamExt as _;
        let health = HealthMonitor::spawn(HealthConfig::new().load_capacity(10)).unwrap();
        let orca = OrcaService::new(&health);
        let request = |seconds| {
            Request::new(OrcaLoadReportRequest {
                report_interval: Some(super::super::pb::orca::Duration { seconds, nanos: 0 }),
                request_cost_names: Vec::new(),
            })
        };
        let mut stream = orca
            .stream_core_metrics(request(5))
            .await
            .unwrap()
            .into_inner();
        let start = tokio::time::Instant::now();
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "the first report at once");
        assert_eq!(first.application_utilization, 0.0, "idle");
        stream.next().await.unwrap().unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        orca.close_streams();
        assert!(stream.next().await.is_none(), "closed");
        // A stream ends when the server's graceful shutdown begins: the drain delay's end.
        let mut stream = OrcaService::new(&health)
            .stream_core_metrics(request(1))
            .await
            .unwrap()
            .into_inner();
        stream.next().await.unwrap().unwrap();
        let drain = health.drain();
        drain.start();
        let started = tokio::time::Instant::now();
        while let Some(report) = stream.next().await {
            report.unwrap();
        }
        assert_eq!(started.elapsed(), drain.config().delay);
        // Off: nothing to report, and the client is told so.
        let off = HealthMonitor::spawn(HealthConfig::new()).unwrap();
        let status = OrcaService::new(&off)
            .stream_core_metrics(request(1))
            .await
            .err()
            .unwrap();
        assert_eq!(status.code(), tonic::Code::Unimplemented);
    }

    #[test]
    fn the_interval_asked_for_is_bounded_and_a_malformed_one_is_the_shortest() {
        let asked = |seconds: i64, nanos: i32| {
            report_interval(Some(&super::super::pb::orca::Duration { seconds, nanos }))
        };
        assert_eq!(report_interval(None), MIN_REPORT_INTERVAL);
        assert_eq!(asked(0, 0), MIN_REPORT_INTERVAL);
        assert_eq!(asked(0, 100_000_000), MIN_REPORT_INTERVAL);
        assert_eq!(asked(2, 500_000_000), Duration::from_millis(2_500));
        assert_eq!(asked(10, 0), Duration::from_secs(10));
        assert_eq!(asked(i64::MAX, 999_999_999), MAX_REPORT_INTERVAL);
        assert_eq!(asked(-5, 0), MIN_REPORT_INTERVAL);
        assert_eq!(asked(5, -1), MIN_REPORT_INTERVAL);
        assert_eq!(asked(5, 1_000_000_000), MIN_REPORT_INTERVAL);
    }
}
