//! The dialects of whatever acts on a verdict: each a pure function of the reading (a
//! probe's judgement, a verdict's checks) to the words its reader speaks, one file each,
//! tested as tables, without I/O. A new balancer's conventions are one more file here.
//!
//! - [`kube`]: Kubernetes' plain-text `?verbose`, `?exclude` and per-check answers.
//! - `debounce` (features `grpc`, `haproxy-agent`): what the readers whose consumer acts on
//!   a single answer say of a failure shorter than the debounce.
//! - `envoy`: Envoy's `x-envoy-degraded` and `x-envoy-immediate-health-check-fail`.
//! - `haproxy` (feature `haproxy-agent`): the agent check's words and weight.
//! - `orca`: the ORCA load report (`endpoint-load-metrics`) on the application's responses.
//! - `grpc` (feature `grpc`): `grpc.health.v1`'s services and serving statuses.

#[cfg(any(feature = "grpc", feature = "haproxy-agent", test))]
pub(crate) mod debounce;
pub(crate) mod envoy;
#[cfg(feature = "grpc")]
pub(crate) mod grpc;
#[cfg(feature = "haproxy-agent")]
pub(crate) mod haproxy;
pub(crate) mod kube;
pub(crate) mod orca;
