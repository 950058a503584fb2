//! What every HTTP reader (the three layers, the fused axum stack, the admin server) shares:
//! the response built from a published verdict's pre-rendered bytes, the drain's admission of
//! an application request, how that request reaches the inner service, and the layers' one
//! response future and one body.

mod admission;
#[cfg(test)]
mod answers;
mod body;
mod call;
mod edge;
mod future;
pub(crate) mod render;
pub(crate) mod request;
mod response;
#[cfg(test)]
mod response_tests;

#[cfg(feature = "axum")]
pub(crate) use self::admission::{Admitted, Held};
pub(crate) use self::admission::{admit, rejection};
pub use self::body::ResponseBody;
#[cfg(feature = "axum")]
pub(crate) use self::body::{Counted, Reported};
pub(crate) use self::call::{Count, WhenBusy, call_inner};
#[cfg(feature = "axum")]
pub(crate) use self::call::{not_ready, poll_ready_now};
#[cfg(feature = "axum")]
pub(crate) use self::edge::Trailer;
pub(crate) use self::edge::{Edge, Marks, mark};
pub use self::future::ResponseFuture;
pub(crate) use self::response::{ProbeResponse, Respond};
