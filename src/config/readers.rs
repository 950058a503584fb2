//! What the readers of one monitor answer on and show: one value, apart from what the
//! monitor's rounds need, with one rule for a reader's own settings.
//!
//! The layers' paths (the prefix, Kubernetes' aliases, the opt-in metrics path) and Envoy's
//! switch are the layers' alone. Who sees details, who may bypass the cache and the keys that
//! decide both ([`Shown`]) are every reader's: each reader (a [`HealthLayer`], the admin
//! server, the HAProxy agent) may set its own ([`Own`]), and [`Shown::for_reader`] is the one
//! rule that applies it, so that who sees what is decided in one place whatever reader asks.
//!
//! [`HealthLayer`]: crate::HealthLayer

use crate::access::AccessKeys;
use crate::env::{Details, NoCache};

/// The readers' settings of one monitor: set with [`HealthConfig`](crate::HealthConfig)'s
/// reader setters and variables, read by every reader as its defaults.
#[derive(Clone, Debug)]
pub(crate) struct Readers {
    /// The prefix of the layers' probe paths, validated.
    pub(crate) prefix: String,
    /// Whether the layers also answer `/livez` and `/readyz`.
    pub(crate) kubernetes_aliases: bool,
    /// The layers' opt-in metrics path, trimmed; `None` answers nothing.
    #[cfg(feature = "metrics")]
    pub(crate) metrics_path: Option<Box<str>>,
    /// Whether the layers tell Envoy to fail its health checks at once while held or
    /// draining ([`crate::dialect::envoy`]).
    pub(crate) envoy_immediate_fail: bool,
    /// Who sees what, unless a reader says otherwise.
    pub(crate) shown: Shown,
    /// The instance's name, as the operator's page shows it; `None`: the program's name.
    #[cfg_attr(not(feature = "page"), allow(dead_code))]
    pub(crate) instance: Option<std::sync::Arc<str>>,
}

impl Default for Readers {
    fn default() -> Self {
        Self {
            prefix: "/health".to_owned(),
            kubernetes_aliases: false,
            #[cfg(feature = "metrics")]
            metrics_path: None,
            envoy_immediate_fail: false,
            shown: Shown::default(),
            instance: None,
        }
    }
}

/// Who sees what on a reader: the detail level, who may bypass the cache, and the keys that
/// tell who a caller is.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shown {
    pub(crate) details: Details,
    pub(crate) nocache: NoCache,
    pub(crate) keys: AccessKeys,
}

/// A reader's own settings of what it shows; `None` keeps the readers' value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Own {
    pub(crate) details: Option<Details>,
    pub(crate) nocache: Option<NoCache>,
    pub(crate) keys: Option<AccessKeys>,
}

/// Where a reader's detail level comes from when it sets none.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum DetailsDefault {
    /// The readers' value ([`HealthConfig::details`](crate::HealthConfig::details)): readers
    /// on ports the application's operators choose (a layer, the admin server).
    Readers,
    /// A level of the reader's own, whatever the readers' value: a reader the docs bind
    /// beyond loopback with no keys to tell callers apart (the HAProxy agent: `never`).
    #[cfg_attr(not(feature = "haproxy-agent"), allow(dead_code))]
    Own(Details),
}

impl Shown {
    /// What a reader shows: its `own` settings over these, its detail level from
    /// `details_default` when it sets none. The one rule every reader applies.
    pub(crate) fn for_reader(&self, own: &Own, details_default: DetailsDefault) -> Self {
        let details = own.details.unwrap_or(match details_default {
            DetailsDefault::Readers => self.details,
            DetailsDefault::Own(details) => details,
        });
        Self {
            details,
            nocache: own.nocache.unwrap_or(self.nocache),
            keys: own.keys.clone().unwrap_or_else(|| self.keys.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readers_own_settings_win_and_its_default_decides_the_rest() {
        let readers = Shown {
            details: Details::Authorized,
            nocache: NoCache::Off,
            keys: AccessKeys::new(),
        };
        let none = Own::default();
        let shown = readers.for_reader(&none, DetailsDefault::Readers);
        assert_eq!(
            (shown.details, shown.nocache),
            (Details::Authorized, NoCache::Off)
        );
        let shown = readers.for_reader(&none, DetailsDefault::Own(Details::Never));
        assert_eq!(shown.details, Details::Never, "a reader's own default");
        let own = Own {
            details: Some(Details::Always),
            nocache: Some(NoCache::Allowed),
            keys: None,
        };
        for default in [DetailsDefault::Readers, DetailsDefault::Own(Details::Never)] {
            let shown = readers.for_reader(&own, default);
            assert_eq!(
                (shown.details, shown.nocache),
                (Details::Always, NoCache::Allowed)
            );
        }
    }
}
