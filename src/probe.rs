//! The six questions, and every fact about each: its paths, whether a drain turns it into
//! 503, whether it takes `?nocache=true`, which checks it may name. Each fact is one `match`
//! here, so adding a probe is a compiler-guided change. How a request asks one is HTTP's
//! ([`crate::http`]).

/// The questions a probe asks: the six endpoints, whatever transport answers them.
///
/// Every reader of a monitor (the HTTP layers, the admin server, metrics, your own code
/// through [`HealthHandle::view`](crate::HealthHandle::view)) answers these from the same
/// [`View`](crate::view::View).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Probe {
    /// The full picture (`/health`): 200 healthy or degraded, 503 otherwise.
    Health,
    /// Is the process alive (`/health/live`)? Always yes while it answers.
    Live,
    /// Can it take traffic (`/health/ready`)?
    Ready,
    /// Has it finished starting (`/health/startup`)?
    Startup,
    /// Is the default database usable (`/health/pool`)?
    Pool,
    /// The fastest possible yes (`/health/ping`): no verdict read at all.
    Ping,
}

impl Probe {
    /// Every probe, in the order of the endpoint table.
    pub const ALL: [Self; 6] = {
        // Built from `next`, an exhaustive match: a new probe must be placed in the chain,
        // and a chain that does not fit the array fails to compile.
        let mut all = [Self::Health; 6];
        let mut index = 1;
        while index < all.len() {
            all[index] = match all[index - 1].next() {
                Some(next) => next,
                None => panic!("Probe::ALL is longer than the chain of Probe::next"),
            };
            index += 1;
        }
        assert!(
            all[all.len() - 1].next().is_none(),
            "Probe::ALL is shorter than the chain of Probe::next"
        );
        all
    };

    /// The probe after this one in [`Probe::ALL`].
    const fn next(self) -> Option<Self> {
        match self {
            Self::Health => Some(Self::Live),
            Self::Live => Some(Self::Ready),
            Self::Ready => Some(Self::Startup),
            Self::Startup => Some(Self::Pool),
            Self::Pool => Some(Self::Ping),
            Self::Ping => None,
        }
    }

    /// A short name for logs, metrics labels and gRPC: `health`, `live`, `ready`,
    /// `startup`, `pool`, `ping`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Health => "health",
            Self::Live => "live",
            Self::Ready => "ready",
            Self::Startup => "startup",
            Self::Pool => "pool",
            Self::Ping => "ping",
        }
    }

    /// The endpoint's name in Kubernetes' plain-text answers (`readyz check passed`):
    /// `healthz`, `livez`, `readyz`, `startupz`, `poolz`; `None` for ping, which reads no
    /// verdict and lists no check.
    pub(crate) const fn kube_name(self) -> Option<&'static str> {
        match self {
            Self::Health => Some("healthz"),
            Self::Live => Some("livez"),
            Self::Ready => Some("readyz"),
            Self::Startup => Some("startupz"),
            Self::Pool => Some("poolz"),
            Self::Ping => None,
        }
    }

    /// Whether `check` has the shape of one of this probe's checks, so that
    /// `<probe path>/<check>` is that check's own path: `ping` for liveness, `started` for
    /// startup, and for the probes that read a verdict `database/<name>`,
    /// `component/<name>`, `database`, `hold`, `monitor`, `shutdown` and `fleet-guard`.
    /// Whether such a check exists is the verdict's to say (a 404 otherwise).
    pub(crate) const fn may_name_check(self, check: &str) -> bool {
        match self {
            Self::Live => str_eq(check, "ping"),
            Self::Startup => str_eq(check, "started"),
            Self::Health | Self::Ready | Self::Pool => {
                named_under(check, "database/")
                    || named_under(check, "component/")
                    || str_eq(check, "database")
                    || str_eq(check, "hold")
                    || str_eq(check, "monitor")
                    || str_eq(check, "shutdown")
                    || str_eq(check, "fleet-guard")
            }
            Self::Ping => false,
        }
    }

    /// Whether the admin server asks for the viewer role on this probe once keys are
    /// configured: the full picture names databases and components; the others are what
    /// orchestrators poll, and stay public.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) const fn needs_viewer(self) -> bool {
        match self {
            Self::Health => true,
            Self::Live | Self::Ready | Self::Startup | Self::Pool | Self::Ping => false,
        }
    }

    /// The path under the layer's prefix (`/health` by default).
    pub(crate) const fn layer_suffix(self) -> &'static str {
        match self {
            Self::Health => "",
            Self::Live => "/live",
            Self::Ready => "/ready",
            Self::Startup => "/startup",
            Self::Pool => "/pool",
            Self::Ping => "/ping",
        }
    }

    /// The admin server's path: `/liveness` and `/readiness` rather than the layer's names, the
    /// paths operators' tooling already probes.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) const fn admin_path(self) -> &'static str {
        match self {
            Self::Health => "/health",
            Self::Live => "/liveness",
            Self::Ready => "/readiness",
            Self::Startup => "/startup",
            Self::Pool => "/health/pool",
            Self::Ping => "/health/ping",
        }
    }

    /// The Kubernetes-style alias at the root, answered by the layer when
    /// [`HealthConfig::kubernetes_aliases`](crate::HealthConfig::kubernetes_aliases) is on.
    pub(crate) const fn kubernetes_alias(self) -> Option<&'static str> {
        match self {
            Self::Live => Some("/livez"),
            Self::Ready => Some("/readyz"),
            Self::Health | Self::Startup | Self::Pool | Self::Ping => None,
        }
    }

    /// Whether a drain turns this probe's answer into 503 (liveness, startup and ping stay
    /// 200, so that the orchestrator does not restart a pod that is merely draining).
    pub(crate) const fn drains(self) -> bool {
        match self {
            Self::Health | Self::Ready | Self::Pool => true,
            Self::Live | Self::Startup | Self::Ping => false,
        }
    }

    /// Whether this probe's body carries details (error text, targets, figures, timings)
    /// that [`Details`](crate::config::Details) may hide: only those look at a caller's key.
    pub(crate) const fn has_details(self) -> bool {
        match self {
            Self::Health | Self::Ready | Self::Pool => true,
            Self::Live | Self::Startup | Self::Ping => false,
        }
    }

    /// Whether `?nocache=true` means anything for this probe.
    pub(crate) const fn takes_nocache(self) -> bool {
        match self {
            Self::Health | Self::Pool => true,
            Self::Live | Self::Ready | Self::Startup | Self::Ping => false,
        }
    }
}

/// `a == b`, in a `const fn`.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut at = 0;
    while at < a.len() {
        if a[at] != b[at] {
            return false;
        }
        at += 1;
    }
    true
}

/// Whether `check` is `<prefix><a name>`, the name not empty.
const fn named_under(check: &str, prefix: &str) -> bool {
    let (check, prefix) = (check.as_bytes(), prefix.as_bytes());
    if check.len() <= prefix.len() {
        return false;
    }
    let mut at = 0;
    while at < prefix.len() {
        if check[at] != prefix[at] {
            return false;
        }
        at += 1;
    }
    true
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The endpoint table of the docs and the README is written once, in `docs/endpoints.md`;
    /// its paths must be the ones this file answers.
    #[test]
    fn the_endpoint_table_lists_every_probe_with_its_paths() {
        let table = include_str!("docs/endpoints.md");
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(rows.len(), Probe::ALL.len(), "one row per probe");
        for (row, probe) in rows.iter().zip(Probe::ALL) {
            let layer = format!(
                "| `/health{}` | `{}` |",
                probe.layer_suffix(),
                probe.admin_path()
            );
            assert!(row.starts_with(&layer), "{probe:?}: {row}");
        }
        let readme = include_str!("../README.md");
        assert!(
            readme.contains(table),
            "README.md's endpoint table differs from docs/endpoints.md"
        );
    }
}
