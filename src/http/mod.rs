//! What every HTTP reader (the layers, the fused axum stack, the admin server) shares: the
//! response built from a published verdict's pre-rendered bytes, the one response future of
//! the probe layers, and their response body.

mod body;
mod future;
mod response;
#[cfg(test)]
mod response_tests;

pub use self::body::ResponseBody;
pub use self::future::ResponseFuture;
pub(crate) use self::response::{ProbeResponse, Respond};
