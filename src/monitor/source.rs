use super::{HealthHandle, HealthMonitor};
use crate::config::HealthConfig;

/// What a [`HealthLayer`](crate::HealthLayer) answers from: a [`HealthConfig`], for which the
/// layer starts a monitor of its own, or a [`HealthHandle`] on a monitor already running, to
/// share one monitor between several readers.
///
/// Sealed: implemented for [`HealthConfig`], [`HealthHandle`] and `&HealthHandle` only.
pub trait MonitorSource: sealed::Sealed {
    /// The handle the layer reads from, starting a monitor if there is none yet.
    ///
    /// # Panics
    ///
    /// For a [`HealthConfig`], when called outside a Tokio runtime.
    fn into_handle(self) -> HealthHandle;
}

impl MonitorSource for HealthConfig {
    fn into_handle(self) -> HealthHandle {
        HealthMonitor::spawn(self)
    }
}

impl MonitorSource for HealthHandle {
    fn into_handle(self) -> HealthHandle {
        self
    }
}

impl MonitorSource for &HealthHandle {
    fn into_handle(self) -> HealthHandle {
        self.clone()
    }
}

mod sealed {
    pub trait Sealed {}

    impl Sealed for crate::config::HealthConfig {}
    impl Sealed for super::HealthHandle {}
    impl Sealed for &super::HealthHandle {}
}
