//! The application's own gRPC service in the `tonic` example (and the tests that run it):
//! `greeter.v1.Greeter`, generated once from `proto/greeter/v1/greeter.proto` by
//! `proto/codegen` and checked in, as the crate's `grpc.health.v1` code is.
#![allow(dead_code, unused_imports)] // the tests use the client, the example the server

use std::time::Duration;

use tonic::{Request, Response, Status};

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic, clippy::nursery)]
mod generated;

pub(crate) use self::generated::greeter_client::GreeterClient;
pub(crate) use self::generated::greeter_server::GreeterServer;
pub(crate) use self::generated::{HelloReply, HelloRequest};

/// The longest `delay_ms` a call may ask for.
const MAX_DELAY: Duration = Duration::from_secs(10);

/// Answers `hello, <name>`, after the `delay_ms` the request asks for.
#[derive(Debug, Default)]
pub(crate) struct Greeter;

#[tonic::async_trait]
impl generated::greeter_server::Greeter for Greeter {
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
        tokio::time::sleep(delay).await;
        Ok(Response::new(HelloReply {
            message: format!("hello, {name}"),
        }))
    }
}
