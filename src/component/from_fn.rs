use std::fmt;
use std::future::Future;

use super::Component;
use crate::check::{CheckError, CheckFuture, CheckReport};

/// A [`Component`] from a closure returning a future; built by [`from_fn`].
struct FromFn<F> {
    f: F,
}

/// A [`Component`] that calls `f` for each check.
///
/// The future passes with `()` (fine, nothing to add) or a [`CheckReport`] (fine, with a
/// target and details), or fails with a [`CheckError`].
///
/// See the [module docs](super) for an example, and [`CheckReport`]'s for one that reports
/// details.
pub fn from_fn<F, Fut, R>(f: F) -> impl Component
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, CheckError>> + Send + 'static,
    R: Into<CheckReport>,
{
    FromFn { f }
}

impl<F, Fut, R> Component for FromFn<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, CheckError>> + Send + 'static,
    R: Into<CheckReport>,
{
    fn check(&self) -> CheckFuture {
        let check = (self.f)();
        Box::pin(async move { check.await.map(Into::into) })
    }
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromFn").finish_non_exhaustive()
    }
}
