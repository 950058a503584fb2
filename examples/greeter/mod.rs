//! The application's own gRPC service in the `tonic` example (and the tests that run it):
//! `greeter.v1.Greeter`, generated once from `proto/greeter/v1/greeter.proto` by
//! `proto/codegen` and checked in, as the crate's `grpc.health.v1` code is.
#![allow(dead_code, unused_imports)] // the tests use the client, the example the server

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::IntervalStream;
use tonic::{Request, Response, Status};
use tower_health::DrainHandle;

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic, clippy::nursery)]
mod generated;

pub(crate) use self::generated::greeter_client::GreeterClient;
pub(crate) use self::generated::greeter_server::GreeterServer;
pub(crate) use self::generated::{HelloReply, HelloRequest};

/// The longest `delay_ms` a call may ask for.
const MAX_DELAY: Duration = Duration::from_secs(10);

/// Answers `hello, <name>`, after the `delay_ms` the request asks for; `KeepGreeting`
/// streams greetings until the drain's turn to close the stream comes. Every reply says
/// which server answered.
#[derive(Debug, Clone)]
pub(crate) struct Greeter {
    /// The drain the greeting streams are registered with.
    drain: DrainHandle,
    /// Where this server listens: which instance a balanced call reached.
    server: String,
    /// Added to every `SayHello`'s own delay: an instance slower than its peers, for the
    /// load feedback's tests and benches (the example's `GREETER_DELAY_MS`).
    slower_by: Duration,
}

impl Greeter {
    /// A greeter listening on `server`, whose streams close when `drain` says so.
    pub(crate) fn new(drain: &DrainHandle, server: SocketAddr) -> Self {
        Self {
            drain: drain.clone(),
            server: server.to_string(),
            slower_by: Duration::ZERO,
        }
    }

    /// Every `SayHello` takes `delay` longer (at most 10 s in all).
    pub(crate) fn slower_by(mut self, delay: Duration) -> Self {
        self.slower_by = delay;
        self
    }
}

/// A `KeepGreeting` stream.
type Greetings = Pin<Box<dyn tokio_stream::Stream<Item = Result<HelloReply, Status>> + Send>>;

#[tonic::async_trait]
impl generated::greeter_server::Greeter for Greeter {
    type KeepGreetingStream = Greetings;

    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let HelloRequest { name, delay_ms } = request.into_inner();
        let delay = Duration::from_millis(delay_ms.into());
        if delay > MAX_DELAY {
            return Err(Status::invalid_argument(format!(
                "delay_ms: at most {}",
                MAX_DELAY.as_millis()
            )));
        }
        tokio::time::sleep((delay + self.slower_by).min(MAX_DELAY)).await;
        Ok(Response::new(HelloReply {
            message: format!("hello, {name}"),
            server: self.server.clone(),
        }))
    }

    async fn keep_greeting(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<Self::KeepGreetingStream>, Status> {
        let HelloRequest { name, delay_ms } = request.into_inner();
        let every = match Duration::from_millis(delay_ms.into()) {
            Duration::ZERO => Duration::from_secs(1),
            every if every > MAX_DELAY => {
                return Err(Status::invalid_argument(format!(
                    "delay_ms: at most {}",
                    MAX_DELAY.as_millis()
                )));
            }
            every => every,
        };
        let server = self.server.clone();
        let greetings = IntervalStream::new(tokio::time::interval(every)).map(move |_| {
            Ok(HelloReply {
                message: format!("hello, {name}"),
                server: server.clone(),
            })
        });
        // Registered with the drain: counted while it lasts, and ended at its turn with
        // UNAVAILABLE, which gRPC clients retry (on another instance).
        let goodbye = Status::unavailable("the server is shutting down: call again");
        let stream = self
            .drain
            .long_lived("greeter/KeepGreeting")
            .until_closing_with(greetings, Err(goodbye));
        Ok(Response::new(Box::pin(stream)))
    }
}
