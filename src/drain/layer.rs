use tower_layer::Layer;

use super::Drain;
use crate::shutdown::DrainHandle;

/// Layer that counts requests in flight for a [`DrainHandle`] and applies its drain policy.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct DrainLayer {
    handle: DrainHandle,
}

impl DrainLayer {
    /// A layer counting the requests it sees in `drain`, a monitor's
    /// ([`HealthHandle::drain`](crate::HealthHandle::drain)): the one its probes follow.
    pub fn new(drain: &DrainHandle) -> Self {
        Self {
            handle: drain.clone(),
        }
    }
}

impl<S> Layer<S> for DrainLayer {
    type Service = Drain<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Drain::new(inner, &self.handle)
    }
}
