use tower_layer::Layer;

use super::{Drain, DrainConfig, DrainHandle};

/// Layer that counts requests in flight for a [`DrainHandle`] and applies its drain policy.
///
/// See the [module docs](super) for an example.
#[derive(Debug, Clone)]
#[must_use]
pub struct DrainLayer {
    handle: DrainHandle,
}

impl DrainLayer {
    /// A layer reporting to an existing handle.
    pub fn new(handle: DrainHandle) -> Self {
        Self { handle }
    }

    /// A layer and a new handle with the given settings.
    pub fn pair(config: DrainConfig) -> (Self, DrainHandle) {
        let handle = DrainHandle::new(config);
        (Self::new(handle.clone()), handle)
    }
}

impl<S> Layer<S> for DrainLayer {
    type Service = Drain<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Drain::new(inner, self.handle.clone())
    }
}
