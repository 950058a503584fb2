//! What one [`HealthLayer`](crate::HealthLayer) answers with: the monitor's handle, the
//! monitor's paths, and the layer's own settings (`?nocache` policy, who sees details, keys),
//! which default to the monitor's configuration and can differ between two layers of one
//! monitor.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use http::{HeaderMap, Request, header};

use crate::access::KeyDigests;
use crate::config::readers::{DetailsDefault, Own};
use crate::config::{Details, NoCache};
use crate::http::render::fixed::METHOD_NOT_ALLOWED;
use crate::http::request::{self, BodyMode, Form, Freshness, ProbePaths};
use crate::http::{Edge, Marks, ProbeResponse, Respond};
use crate::monitor::HealthHandle;
use crate::probe::Probe;
use crate::verdict::Audience;

/// What a request asks a reader: see [`Reader::ask`].
#[derive(Copy, Clone, Debug)]
pub(crate) enum Asked<'a> {
    /// One of the probes, in the form the request asks for.
    Probe {
        probe: Probe,
        mode: BodyMode,
        freshness: Freshness,
        audience: Audience,
        form: Form<'a>,
    },
    /// A health group's path (`<prefix>/group/<name>`), in the form the request asks for.
    Group {
        name: &'a str,
        mode: BodyMode,
        audience: Audience,
        form: Form<'a>,
    },
    /// A probe path (or the metrics path) with a method other than GET and HEAD.
    MethodNotAllowed,
    /// The opt-in metrics path; `allowed` is whether the caller may read it.
    #[cfg(feature = "metrics")]
    Metrics { mode: BodyMode, allowed: bool },
}

/// Shared by the layer and every service it makes, behind one `Arc`: one reference count per
/// request, as the handle alone cost.
#[derive(Clone, Debug)]
pub(crate) struct Reader {
    pub(crate) handle: HealthHandle,
    /// The layers' probe paths ([`HealthConfig::path_prefix`](crate::HealthConfig::path_prefix),
    /// [`kubernetes_aliases`](crate::HealthConfig::kubernetes_aliases)).
    pub(crate) paths: ProbePaths,
    pub(crate) nocache: NoCache,
    pub(crate) details: Details,
    /// The warning about details shown on a port reached from elsewhere than loopback.
    public_details: PublicDetails,
    pub(crate) keys: KeyDigests,
    /// This layer's own settings of what it shows, over the readers' (the layer's setters).
    own: Own,
    /// Whether an application request that finds the inner service not ready gets 503 at
    /// once instead of waiting ([`HealthLayer::shed_load`](crate::HealthLayer::shed_load)).
    pub(crate) shed_load: bool,
    /// What an application request reads on its way in.
    edge: Edge,
    /// The monitor's opt-in metrics path
    /// ([`HealthConfig::metrics_path`](crate::HealthConfig::metrics_path)) and its
    /// exposition; `None` (the default) answers nothing.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<(Box<str>, crate::metrics::HealthMetrics)>,
}

impl Reader {
    /// The settings of the monitor's configuration.
    pub(crate) fn new(handle: HealthHandle) -> Self {
        // Each verdict is rendered once, as it is published, from now on.
        crate::http::render::attach(&handle);
        let readers = handle.readers();
        let own = Own::default();
        let shown = readers.shown.for_reader(&own, DetailsDefault::Readers);
        Self {
            paths: ProbePaths::new(&readers.prefix, readers.kubernetes_aliases),
            nocache: shown.nocache,
            details: shown.details,
            public_details: PublicDetails::default(),
            keys: shown.keys.digests(),
            own,
            shed_load: false,
            edge: Edge::new(&handle),
            #[cfg(feature = "metrics")]
            metrics: readers
                .metrics_path
                .clone()
                .map(|path| (path, crate::metrics::HealthMetrics::new(&handle))),
            handle,
        }
    }

    /// This layer's own settings of what it shows become `own`: what it shows is decided
    /// again by the one rule ([`Shown::for_reader`]).
    pub(crate) fn set_own(&mut self, own: impl FnOnce(&mut Own)) {
        own(&mut self.own);
        let shown = self
            .handle
            .readers()
            .shown
            .for_reader(&self.own, DetailsDefault::Readers);
        self.nocache = shown.nocache;
        self.details = shown.details;
        self.keys = shown.keys.digests();
    }

    /// What `request` asks this reader, if it asks one of its probes (or its metrics path);
    /// `None` for every other request, which goes to the application. Small and returned in
    /// registers: the response itself is built by [`answer`](Self::answer) straight into the
    /// layer's future (the response is large, and each move of it costs a `memcpy`).
    #[inline(always)]
    pub(crate) fn ask<'a, B>(&self, request: &'a Request<B>) -> Option<Asked<'a>> {
        let path = request.uri().path();
        let under = self.paths.strip(path);
        // What nearly every application request takes: a path outside the prefix, and no
        // other path to look at.
        if under.is_none() && !self.paths.has_aliases() && !self.has_metrics() {
            return None;
        }
        self.ask_path(request, path, under)
    }

    /// [`ask`](Self::ask) for a path that may be this reader's; `under` is what follows the
    /// prefix, if the path is under it.
    #[inline(never)]
    fn ask_path<'a, B>(
        &self,
        request: &'a Request<B>,
        path: &'a str,
        under: Option<&'a str>,
    ) -> Option<Asked<'a>> {
        #[cfg(feature = "metrics")]
        if self.metrics_at(path).is_some() {
            return Some(match BodyMode::of(request.method()) {
                None => Asked::MethodNotAllowed,
                Some(mode) => Asked::Metrics {
                    mode,
                    allowed: match self.details {
                        Details::Always | Details::Never => true,
                        Details::Authorized => self.keys.grants_viewer(request.headers()),
                    },
                },
            });
        }
        let target = self.paths.classify_split(path, under)?;
        let probe = target.probe;
        let Some(mode) = BodyMode::of(request.method()) else {
            return Some(Asked::MethodNotAllowed);
        };
        let headers = request.headers();
        let query = request.uri().query();
        let freshness =
            if probe.takes_nocache() && request::wants_nocache(query) && self.bypasses(headers) {
                Freshness::Bypass
            } else {
                Freshness::Published
            };
        let audience = if probe.has_details() {
            self.audience(headers)
        } else {
            Audience::Minimal
        };
        if let Some(name) = target.group {
            return Some(Asked::Group {
                name,
                mode,
                audience,
                form: Form::of(target, query),
            });
        }
        Some(Asked::Probe {
            probe,
            mode,
            freshness,
            audience,
            form: Form::of(target, query),
        })
    }

    /// What an application's response carries to its dialects' words: the process's intent
    /// and its load estimate (off, a branch: see [`Edge`]).
    #[inline(always)]
    pub(crate) fn marks(&self) -> Marks {
        self.edge.marks(&self.handle)
    }

    /// The answer to what a request [asked](Self::ask).
    pub(crate) fn answer(&self, asked: Asked<'_>) -> ProbeResponse {
        match asked {
            Asked::Probe {
                probe,
                mode,
                freshness,
                audience,
                form,
            } => self
                .handle
                .probe_response(probe, mode, freshness, audience, form),
            Asked::Group {
                name,
                mode,
                audience,
                form,
            } => self.handle.group_response(name, mode, audience, form),
            Asked::MethodNotAllowed => ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full),
            #[cfg(feature = "metrics")]
            Asked::Metrics { mode, allowed } => self.metrics_response(mode, allowed),
        }
    }

    /// The opt-in metrics path's answer: the exposition for GET and HEAD; under
    /// `Details::Authorized`, for key holders only (`allowed`).
    #[cfg(feature = "metrics")]
    fn metrics_response(&self, mode: BodyMode, allowed: bool) -> ProbeResponse {
        use crate::http::render::fixed::METRICS_UNAUTHORIZED;

        match &self.metrics {
            Some((_, metrics)) if allowed => ProbeResponse::ready(metrics.response(mode)),
            _ => ProbeResponse::fixed(&METRICS_UNAUTHORIZED, BodyMode::Full),
        }
    }

    /// Whether this reader answers a metrics path.
    #[inline]
    fn has_metrics(&self) -> bool {
        #[cfg(feature = "metrics")]
        return self.metrics.is_some();
        #[cfg(not(feature = "metrics"))]
        false
    }

    /// Whether `path` is the opt-in metrics path.
    #[cfg(feature = "metrics")]
    #[inline]
    pub(crate) fn metrics_at(&self, path: &str) -> Option<&crate::metrics::HealthMetrics> {
        self.metrics
            .as_ref()
            .filter(|(at, _)| crate::http::request::trim_trailing_slash(path) == &**at)
            .map(|(_, metrics)| metrics)
    }

    /// Who a request is, for the bodies: only `authorized` looks at its credentials (and
    /// only for the probes that carry details).
    pub(crate) fn audience(&self, headers: &HeaderMap) -> Audience {
        if self.details == Details::Always {
            self.public_details.look(headers);
        }
        // Only `authorized` looks at the credentials.
        let viewer = self.details == Details::Authorized && self.keys.grants_viewer(headers);
        crate::access::audience(self.details, viewer)
    }

    /// Whether a request that asks for `?nocache=true` gets a fresh computation. The
    /// layers know a caller only by its key: `authorized` bypasses for key holders.
    pub(crate) fn bypasses(&self, headers: &HeaderMap) -> bool {
        let viewer = self.nocache != NoCache::Off && self.keys.grants_viewer(headers);
        crate::access::may_bypass(self.nocache, self.keys.enabled(), viewer)
    }
}

/// How many probes' `Host` [`PublicDetails`] looks at before it stops looking.
const HOSTS_LOOKED_AT: u32 = 64;

/// Warns, once per layer, when details are `always` (the default) and a probe was addressed
/// to a host that is not loopback: the targets, error text and versions the bodies show then
/// reach whoever reaches the port. The layer cannot see its listener, so it reads the `Host`
/// of the first probes, then no more: a kubelet's, a load balancer's or a curl from elsewhere
/// comes among the first, and from then on the probe path pays one relaxed load.
#[derive(Clone, Debug, Default)]
struct PublicDetails(Arc<AtomicU32>);

impl PublicDetails {
    fn look(&self, headers: &HeaderMap) {
        if self.0.load(Ordering::Relaxed) >= HOSTS_LOOKED_AT
            || self.0.fetch_add(1, Ordering::Relaxed) >= HOSTS_LOOKED_AT
        {
            return;
        }
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
        else {
            return;
        };
        if is_loopback(host) {
            return;
        }
        self.0.store(HOSTS_LOOKED_AT, Ordering::Relaxed);
        let host: String = host.chars().take(255).collect();
        tracing::warn!(
            %host,
            "details are `always` and a probe was addressed to a host that is not loopback: targets, error text and versions are shown to anyone who reaches this port. Set TOWER_HEALTH_DETAILS to `authorized` (with keys) or `never`, or read the details on the admin server"
        );
    }
}

/// Whether a `Host` header (a name or an address, with a port or not) names this machine
/// through loopback.
fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // `[::1]:8080`
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => name,
            _ => host,
        },
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HealthConfig;
    use crate::test_helpers::logged;

    #[test]
    fn loopback_hosts_are_told_apart() {
        for host in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost",
            "LOCALHOST:80",
            "[::1]:8080",
            "app.localhost",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "10.0.0.7:8080",
            "api.example.com",
            "[2001:db8::1]:443",
            "0.0.0.0:80",
            "localhost.example",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    fn probe(host: &str) -> Request<()> {
        Request::get("/health/ready")
            .header(header::HOST, host)
            .body(())
            .unwrap()
    }

    #[tokio::test]
    async fn details_always_on_a_host_that_is_not_loopback_is_a_warning_once() {
        let (health, _monitor) = crate::HealthMonitor::new(HealthConfig::new()).unwrap();
        let reader = Reader::new(health.clone());
        let local = logged(|| {
            for _ in 0..3 {
                reader.ask(&probe("127.0.0.1:8080"));
            }
        });
        assert_eq!(local, "", "loopback is no concern");
        let public = logged(|| {
            for _ in 0..3 {
                reader.ask(&probe("10.1.2.3:8080"));
            }
        });
        assert_eq!(public.matches("not loopback").count(), 1, "{public}");
        assert!(public.contains("host=10.1.2.3:8080"), "{public}");
        // Any other level: nothing to warn about.
        let mut never = Reader::new(health);
        never.details = Details::Never;
        assert_eq!(
            logged(|| assert!(never.ask(&probe("10.1.2.3:8080")).is_some())),
            ""
        );
    }
}
