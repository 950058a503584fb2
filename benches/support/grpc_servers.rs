//! The two tonic servers a gRPC `Check` is measured on, shared by `benches/grpc.rs` (in-process
//! client, server CPU time) and `benches/storm.rs` (callgrind instruction counts), which include
//! this file with `#[path]`.
//!
//! - [`serve_constant`]: a bare `Server::builder()` whose `grpc.health.v1` answers `SERVING` to
//!   every `Check` ([`Constant`]): the floor.
//! - [`serve_health_service`]: the same builder with [`HealthService`], as `examples/tonic.rs`
//!   wires it.

use std::future::Future;

use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};
use tower_health::HealthHandle;
use tower_health::grpc::HealthService;
use tower_health::grpc::pb::health_check_response::ServingStatus;
use tower_health::grpc::pb::health_server::{Health, HealthServer};
use tower_health::grpc::pb::{
    HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse,
};

/// `grpc.health.v1` answering `SERVING` to every `Check`: the floor.
pub(crate) struct Constant;

#[tonic::async_trait]
impl Health for Constant {
    async fn check(
        &self,
        _request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(HealthCheckResponse {
            status: ServingStatus::Serving.into(),
        }))
    }

    async fn list(
        &self,
        _request: Request<HealthListRequest>,
    ) -> Result<Response<HealthListResponse>, Status> {
        Err(Status::unimplemented("not measured"))
    }

    type WatchStream = tonic::codegen::BoxStream<HealthCheckResponse>;

    async fn watch(
        &self,
        _request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        Err(Status::unimplemented("not measured"))
    }
}

/// Serves [`Constant`] on a bare `Server::builder()` until `shutdown` completes.
pub(crate) async fn serve_constant(
    incoming: TcpIncoming,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    Server::builder()
        .add_service(HealthServer::new(Constant))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

/// Serves [`HealthService`] over `health` on a bare `Server::builder()` until `shutdown`
/// completes.
pub(crate) async fn serve_health_service(
    health: HealthHandle,
    incoming: TcpIncoming,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    Server::builder()
        .add_service(HealthService::new(&health).server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
