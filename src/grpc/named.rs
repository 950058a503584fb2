//! tonic routes by service name: a [`Drain`] around one of the application's services keeps
//! its name, so the drain can count that service's calls and leave gRPC health alone.

use tonic::server::NamedService;

use crate::drain::Drain;

/// `Server::builder().add_service(drain_layer.layer(GreeterServer::new(greeter)))`: the
/// application's service counted by the drain, under its own name.
impl<S: NamedService> NamedService for Drain<S> {
    const NAME: &'static str = S::NAME;
}
