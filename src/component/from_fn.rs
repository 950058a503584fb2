use std::fmt;
use std::future::Future;

use super::Component;
use crate::check::{CheckError, CheckFuture};

/// A [`Component`] from a closure returning a future; built by [`from_fn`].
#[derive(Clone)]
pub struct FromFn<F> {
    f: F,
}

/// A [`Component`] that calls `f` for each check.
///
/// See the [module docs](super) for an example.
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), CheckError>> + Send + 'static,
{
    FromFn { f }
}

impl<F, Fut> Component for FromFn<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), CheckError>> + Send + 'static,
{
    fn check(&self) -> CheckFuture {
        Box::pin((self.f)())
    }
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFn").finish_non_exhaustive()
    }
}
