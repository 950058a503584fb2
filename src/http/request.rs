//! How a request asks a probe: the layer's paths (its prefix, Kubernetes' aliases), the admin
//! server's, a check's own path and a group's, the form of the answer (JSON or Kubernetes'
//! text), HEAD or GET, and `?nocache=true`.

use http::Method;

use crate::probe::Probe;

/// What a probe path asks: a probe, one of its checks (`<probe path>/<check>`, as
/// kube-apiserver's `/readyz/etcd`), or a health group (`<prefix>/group/<name>`), which is
/// judged as readiness is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    pub(crate) probe: Probe,
    pub(crate) check: Option<&'a str>,
    pub(crate) group: Option<&'a str>,
}

/// Where a health group's path starts, after the layer's prefix (after
/// [`ADMIN_GROUP_PREFIX`] on the admin server).
pub(crate) const GROUP_PATH: &str = "/group/";

/// The admin server's prefix of a health group's path: `/health/group/<name>`.
pub(crate) const ADMIN_GROUP_PREFIX: &str = "/health";

impl<'a> Target<'a> {
    /// The probe itself, not one of its checks.
    pub(crate) const fn of(probe: Probe) -> Self {
        Self {
            probe,
            check: None,
            group: None,
        }
    }

    /// The health group `<name>` of `/group/<name>` (`rest`, a trailing slash trimmed).
    fn group(rest: &'a str) -> Option<Self> {
        let name = rest.strip_prefix(GROUP_PATH)?;
        (!name.is_empty() && !name.contains('/')).then_some(Self {
            group: Some(name),
            ..Self::of(Probe::Ready)
        })
    }

    /// The target of `path` (its trailing slash already trimmed) among the probes whose path
    /// is `path_of(probe)` (`None`: a probe without one there): a probe's own path first,
    /// then a check's.
    fn find(path: &'a str, path_of: impl Fn(Probe) -> Option<&'static str>) -> Option<Self> {
        if let Some(probe) = Probe::ALL
            .into_iter()
            .find(|&probe| path_of(probe) == Some(path))
        {
            return Some(Self::of(probe));
        }
        Probe::ALL.into_iter().find_map(|probe| {
            let check = path.strip_prefix(path_of(probe)?)?.strip_prefix('/')?;
            probe.may_name_check(check).then_some(Self {
                check: Some(check),
                ..Self::of(probe)
            })
        })
    }
}

/// How a probe's answer is written: the crate's JSON, or Kubernetes' plain text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Form<'a> {
    /// The JSON body (every probe, nearly always).
    Json,
    /// `?verbose`: one line per check, rendered with the round.
    Verbose,
    /// `?exclude=<check>` (repeatable), with `?verbose` or not: written per request from
    /// the `query`.
    Excluding { verbose: bool, query: &'a str },
    /// `<probe path>/<check>`: that check alone.
    Check(&'a str),
}

impl<'a> Form<'a> {
    /// The form `query` asks `target` for: a check's path is that check's; `verbose` or
    /// `exclude` in the query ask for the plain-text list; anything else is JSON.
    pub(crate) fn of(target: Target<'a>, query: Option<&'a str>) -> Self {
        if let Some(check) = target.check {
            return Self::Check(check);
        }
        let Some(query) = query.filter(|_| target.probe.kube_name().is_some()) else {
            return Self::Json;
        };
        let (mut verbose, mut exclude) = (false, false);
        for pair in query.split('&') {
            let key = pair.split_once('=').map_or(pair, |(key, _)| key);
            verbose |= key == "verbose";
            exclude |= key == "exclude";
        }
        match (verbose, exclude) {
            (_, true) => Self::Excluding { verbose, query },
            (true, false) => Self::Verbose,
            (false, false) => Self::Json,
        }
    }
}

/// The layer's probe paths: `<prefix><suffix>` for every probe, each also with a trailing
/// slash, and the Kubernetes aliases when asked for.
#[derive(Clone, Debug)]
pub(crate) struct ProbePaths {
    prefix: Box<str>,
    kubernetes_aliases: bool,
}

impl ProbePaths {
    pub(crate) fn new(prefix: &str, kubernetes_aliases: bool) -> Self {
        Self {
            prefix: prefix.into(),
            kubernetes_aliases,
        }
    }

    /// What `path` asks for, if anything (the layer splits this in two: see
    /// [`strip`](Self::strip) and [`classify_split`](Self::classify_split)).
    pub(crate) fn classify<'a>(&self, path: &'a str) -> Option<Target<'a>> {
        self.classify_split(path, self.strip(path))
    }

    /// What follows the prefix in `path`, if `path` is under it: one comparison, all that a
    /// path outside the prefix costs when [`has_aliases`](Self::has_aliases) is off.
    #[inline]
    pub(crate) fn strip<'a>(&self, path: &'a str) -> Option<&'a str> {
        path.strip_prefix(&*self.prefix)
    }

    /// Whether a path outside the prefix may be a probe (a Kubernetes alias).
    #[inline]
    pub(crate) fn has_aliases(&self) -> bool {
        self.kubernetes_aliases
    }

    /// What `path` asks for, given [`strip`](Self::strip)'s answer for it.
    pub(crate) fn classify_split<'a>(
        &self,
        path: &'a str,
        under: Option<&'a str>,
    ) -> Option<Target<'a>> {
        match under {
            // A path may start with the prefix and be an alias all the same (`/livez` under
            // the prefix `/live`).
            Some(rest) => Self::under_prefix(rest).or_else(|| {
                self.kubernetes_aliases
                    .then(|| Self::classify_alias(path))
                    .flatten()
            }),
            None if self.kubernetes_aliases => Self::classify_alias(path),
            None => None,
        }
    }

    /// What a path under the prefix asks for, given what follows the prefix.
    fn under_prefix(rest: &str) -> Option<Target<'_>> {
        // `<prefix>/` is `<prefix>`.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        Target::find(rest, |probe| Some(probe.layer_suffix())).or_else(|| Target::group(rest))
    }

    fn classify_alias(path: &str) -> Option<Target<'_>> {
        Target::find(trim_trailing_slash(path), Probe::kubernetes_alias)
    }
}

/// `path` without one trailing slash (`/` stays `/`).
pub(crate) fn trim_trailing_slash(path: &str) -> &str {
    match path.strip_suffix('/') {
        Some(trimmed) if !trimmed.is_empty() => trimmed,
        _ => path,
    }
}

/// How much of a response a request's method asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum BodyMode {
    /// GET: status, headers and body.
    Full,
    /// HEAD: the same status and headers (with the GET body's `Content-Length`), no body.
    HeadOnly,
}

impl BodyMode {
    /// The mode for `method`; `None` for a method a probe path does not answer (405).
    pub(crate) fn of(method: &Method) -> Option<Self> {
        if method == Method::GET {
            Some(Self::Full)
        } else if method == Method::HEAD {
            Some(Self::HeadOnly)
        } else {
            None
        }
    }
}

/// Whether a probe is answered from the published verdict or computed afresh.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Freshness {
    /// The published verdict (every probe, nearly always).
    Published,
    /// A fresh computation, for an allowed `?nocache=true`.
    Bypass,
}

/// Whether the query string asks to bypass the cache (`nocache=true`, `nocache=1`, or a bare
/// `nocache`).
pub(crate) fn wants_nocache(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query.split('&').any(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
            key == "nocache" && (value.eq_ignore_ascii_case("true") || value == "1")
        })
    })
}

/// What the admin server's `path` asks for (a trailing slash accepted).
#[cfg_attr(not(feature = "admin"), allow(dead_code))]
pub(crate) fn admin_target(path: &str) -> Option<Target<'_>> {
    let path = trim_trailing_slash(path);
    Target::find(path, |probe| Some(probe.admin_path()))
        .or_else(|| Target::group(path.strip_prefix(ADMIN_GROUP_PREFIX)?))
}

#[cfg(test)]
#[path = "request_proptests.rs"]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_prefix() {
        let paths = ProbePaths::new("/health", false);
        assert_eq!(paths.classify("/health"), Some(Target::of(Probe::Health)));
        assert_eq!(paths.classify("/health/"), Some(Target::of(Probe::Health)));
        assert_eq!(
            paths.classify("/health/live"),
            Some(Target::of(Probe::Live))
        );
        assert_eq!(
            paths.classify("/health/ready/"),
            Some(Target::of(Probe::Ready))
        );
        assert_eq!(
            paths.classify("/health/startup"),
            Some(Target::of(Probe::Startup))
        );
        assert_eq!(
            paths.classify("/health/pool"),
            Some(Target::of(Probe::Pool))
        );
        assert_eq!(
            paths.classify("/health/ping"),
            Some(Target::of(Probe::Ping))
        );
        for other in [
            "/",
            "/healthz",
            "/health/other",
            "/health//",
            "/health/live/x",
            "/api/health",
            "/livez",
            "/readyz",
        ] {
            assert_eq!(paths.classify(other), None, "{other}");
        }
    }

    #[test]
    fn kubernetes_aliases_only_when_asked() {
        let paths = ProbePaths::new("/probes", true);
        assert_eq!(paths.classify("/livez"), Some(Target::of(Probe::Live)));
        assert_eq!(paths.classify("/readyz/"), Some(Target::of(Probe::Ready)));
        assert_eq!(
            paths.classify("/probes/startup"),
            Some(Target::of(Probe::Startup))
        );
        assert_eq!(paths.classify("/healthz"), None);
        assert_eq!(paths.classify("/health/ready"), None);
    }

    #[test]
    fn admin_paths() {
        assert_eq!(admin_target("/health"), Some(Target::of(Probe::Health)));
        assert_eq!(admin_target("/health/"), Some(Target::of(Probe::Health)));
        assert_eq!(admin_target("/liveness"), Some(Target::of(Probe::Live)));
        assert_eq!(admin_target("/readiness/"), Some(Target::of(Probe::Ready)));
        assert_eq!(admin_target("/startup"), Some(Target::of(Probe::Startup)));
        assert_eq!(admin_target("/health/pool"), Some(Target::of(Probe::Pool)));
        assert_eq!(admin_target("/health/ping"), Some(Target::of(Probe::Ping)));
        for other in [
            "/",
            "//",
            "/health/live",
            "/health/ready",
            "/livez",
            "/metrics",
        ] {
            assert_eq!(admin_target(other), None, "{other}");
        }
    }

    #[test]
    fn check_paths_and_forms() {
        let paths = ProbePaths::new("/health", true);
        let target = |path| {
            paths
                .classify(path)
                .map(|target| (target.probe, target.check))
        };
        assert_eq!(
            target("/health/ready/database/db"),
            Some((Probe::Ready, Some("database/db")))
        );
        assert_eq!(target("/readyz/hold/"), Some((Probe::Ready, Some("hold"))));
        assert_eq!(target("/livez/ping"), Some((Probe::Live, Some("ping"))));
        assert_eq!(
            target("/health/live/ping"),
            Some((Probe::Live, Some("ping")))
        );
        assert_eq!(
            target("/health/component/redis"),
            Some((Probe::Health, Some("component/redis")))
        );
        assert_eq!(
            target("/health/pool/database/db"),
            Some((Probe::Pool, Some("database/db")))
        );
        assert_eq!(
            target("/health/startup/started"),
            Some((Probe::Startup, Some("started")))
        );
        // The ping probe, not a check of `/health`.
        assert_eq!(target("/health/ping"), Some((Probe::Ping, None)));
        for other in [
            "/readyz/other",
            "/health/ready/database//",
            "/health/ping/x",
            "/livez/started",
            "/health/x/hold",
        ] {
            assert_eq!(target(other), None, "{other}");
        }
        let form = |path: &'static str, query| Form::of(paths.classify(path).unwrap(), query);
        assert_eq!(form("/readyz", None), Form::Json);
        assert_eq!(form("/readyz", Some("nocache=true")), Form::Json);
        assert_eq!(form("/readyz", Some("verbose")), Form::Verbose);
        assert_eq!(
            form("/readyz", Some("verbose=false")),
            Form::Verbose,
            "present is on, as kube reads it"
        );
        assert_eq!(
            form("/readyz", Some("exclude=hold")),
            Form::Excluding {
                verbose: false,
                query: "exclude=hold"
            }
        );
        assert_eq!(
            form("/health/ping", Some("verbose")),
            Form::Json,
            "ping lists no check"
        );
        assert_eq!(form("/readyz/hold", Some("verbose")), Form::Check("hold"));
        assert_eq!(
            admin_target("/readiness/database/db").map(|target| target.check),
            Some(Some("database/db"))
        );
    }

    #[test]
    fn methods() {
        assert_eq!(BodyMode::of(&Method::GET), Some(BodyMode::Full));
        assert_eq!(BodyMode::of(&Method::HEAD), Some(BodyMode::HeadOnly));
        assert_eq!(BodyMode::of(&Method::POST), None);
    }

    #[test]
    fn nocache_query() {
        assert!(wants_nocache(Some("nocache=true")));
        assert!(wants_nocache(Some("a=b&nocache=TRUE")));
        assert!(wants_nocache(Some("nocache=1")));
        assert!(wants_nocache(Some("nocache")));
        assert!(!wants_nocache(Some("nocache=false")));
        assert!(!wants_nocache(Some("xnocache=true")));
        assert!(!wants_nocache(None));
    }
}
