//! The `shared_cache` component: how the last round went with Redis, this process's own
//! watcher, never shared.

use super::store::SharedVerdicts;
use crate::check::CheckFuture;
use crate::component::Component;

/// The name of the component that reports the shared cache.
pub(crate) const SHARED_CACHE_COMPONENT: &str = "shared_cache";

/// The `shared_cache` component: in trouble while the last round could not read or write
/// the entry, or found one it could not serve; well again with the first round that could.
#[derive(Debug)]
pub(crate) struct CacheStatus {
    pub(crate) verdicts: SharedVerdicts,
    pub(crate) target: Option<String>,
}

impl Component for CacheStatus {
    fn check(&self) -> CheckFuture {
        let problem = self.verdicts.problem();
        Box::pin(async move {
            match problem {
                Some(error) => Err(error),
                None => Ok(crate::check::CheckReport::default()),
            }
        })
    }

    fn target(&self) -> Option<String> {
        self.target.clone()
    }
}
