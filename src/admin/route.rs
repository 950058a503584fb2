//! What an admin path asks for, and who may ask: one exhaustive `match` per fact, so a new
//! route cannot come out public by accident.

use std::sync::LazyLock;

use http::StatusCode;

use super::control::Control;
use crate::http::render::Rendered;
use crate::http::request::{ADMIN_GROUP_PREFIX, GROUP_PATH, Target};
use crate::probe::Probe;

/// The admin server's answer to a path it does not serve: the paths it does, from the probe
/// table, a health group's among them.
pub(crate) static ADMIN_NOT_FOUND: LazyLock<Rendered> =
    LazyLock::new(|| not_found(serde_json::Map::new()));

/// The paths the admin server serves only when the crate is built with a feature: the
/// feature, and whether this build has it.
const FEATURE_PATHS: [(&str, &str, bool); 3] = [
    ("/health/page", "page", cfg!(feature = "page")),
    ("/health/page/updates", "page", cfg!(feature = "page")),
    ("/metrics", "metrics", cfg!(feature = "metrics")),
];

/// The answer to a path this build does not serve: for a path a feature would serve (the
/// operator's page, `/metrics`), a 404 that says which feature is missing, beside the paths
/// it does serve; for any other, [`ADMIN_NOT_FOUND`].
pub(crate) fn not_found_for(path: &str) -> &'static Rendered {
    let path = crate::http::request::trim_trailing_slash(path);
    FEATURE_PATHS
        .iter()
        .find(|(served, _, built)| *served == path && !built)
        .map_or(&*ADMIN_NOT_FOUND, |(_, feature, _)| missing(feature))
}

/// The 404 of a path `feature` serves, in a build without it.
pub(crate) fn missing(feature: &str) -> &'static Rendered {
    static MISSING: LazyLock<[(&str, Rendered); 2]> = LazyLock::new(|| {
        ["page", "metrics"].map(|feature| {
            let paths: Vec<&str> = FEATURE_PATHS
                .iter()
                .filter(|(_, needs, _)| *needs == feature)
                .map(|(path, _, _)| *path)
                .collect();
            let mut extra = serde_json::Map::new();
            extra.insert("missing_feature".into(), feature.into());
            extra.insert(
                "reason".into(),
                format!(
                    "{} is served with tower-health's `{feature}` feature, which this build does not have: add it to the crate's features",
                    paths.join(" and ")
                )
                .into(),
            );
            (feature, not_found(extra))
        })
    });
    MISSING
        .iter()
        .find(|(name, _)| *name == feature)
        .map_or(&*ADMIN_NOT_FOUND, |(_, rendered)| rendered)
}

/// A 404 with `extra` keys before the paths the server serves.
fn not_found(extra: serde_json::Map<String, serde_json::Value>) -> Rendered {
    let group = format!("{ADMIN_GROUP_PREFIX}{GROUP_PATH}<name>");
    let mut paths: Vec<&str> = Probe::ALL.into_iter().map(Probe::admin_path).collect();
    paths.push(&group);
    paths.push(HISTORY_PATH);
    #[cfg(feature = "page")]
    paths.extend(PagePath::ALL.map(PagePath::path));
    // A closure, not `Control::path`: the list holds the group's path, borrowed for less
    // than `'static`.
    paths.extend(Control::ALL.into_iter().map(|control| control.path()));
    paths.extend(cfg!(feature = "metrics").then_some("/metrics"));
    let mut body = serde_json::Map::new();
    body.insert("error".into(), "not found".into());
    body.extend(extra);
    body.insert("paths".into(), paths.into());
    let body = serde_json::to_vec(&body).expect("a serde_json::Value always serializes");
    Rendered::fixed_bytes(StatusCode::NOT_FOUND, "no-store", body.into(), &[])
}

/// `GET /health/history`: every check's history, as JSON.
pub(crate) const HISTORY_PATH: &str = "/health/history";

/// A path the admin server answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// One of the probes, or one of its checks, at the admin server's paths.
    Probe(Target<'a>),
    /// An operator's control (`POST /hold`, `POST /release`).
    Control(Control),
    /// `GET /health/history`: every check's history, as JSON.
    History,
    /// The operator's page, or its updates (feature `page`).
    #[cfg(feature = "page")]
    Page(PagePath),
    /// `GET /metrics`: the Prometheus exposition (feature `metrics`).
    #[cfg(feature = "metrics")]
    Metrics,
}

#[cfg(feature = "page")]
/// One of the page's paths.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PagePath {
    /// `GET /health/page`: the page.
    Document,
    /// `GET /health/page/updates?after=<token>`: the page's `<main>` once it differs from
    /// the one `token` names.
    Updates,
}

#[cfg(feature = "page")]
impl PagePath {
    pub(crate) const ALL: [Self; 2] = [Self::Document, Self::Updates];

    pub(crate) const fn path(self) -> &'static str {
        match self {
            Self::Document => "/health/page",
            Self::Updates => "/health/page/updates",
        }
    }

    /// The page path `path` names (its trailing slash trimmed already).
    pub(crate) fn from_path(path: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|page| page.path() == path)
    }
}

/// What a request must hold once keys are configured.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Nothing: what orchestrators poll stays public.
    Nothing,
    /// The viewer key (or the operator key).
    Viewer,
    /// The operator key.
    Operator,
}

impl<'a> Route<'a> {
    /// The route `path` names, if any (a trailing slash accepted).
    pub(crate) fn from_path(path: &'a str) -> Option<Self> {
        #[cfg(feature = "metrics")]
        if crate::http::request::trim_trailing_slash(path) == "/metrics" {
            return Some(Self::Metrics);
        }
        let trimmed = crate::http::request::trim_trailing_slash(path);
        if trimmed == HISTORY_PATH {
            return Some(Self::History);
        }
        #[cfg(feature = "page")]
        if let Some(page) = PagePath::from_path(trimmed) {
            return Some(Self::Page(page));
        }
        Control::from_path(path)
            .map(Self::Control)
            .or_else(|| crate::http::request::admin_target(path).map(Self::Probe))
    }

    /// Who may ask, once an operator key is configured.
    pub(crate) const fn needs(self) -> Needs {
        match self {
            Self::Probe(target) if target.probe.needs_viewer() => Needs::Viewer,
            Self::Probe(_) => Needs::Nothing,
            Self::Control(_) => Needs::Operator,
            // Every check's error text, targets and timings, as `/health` shows them.
            Self::History => Needs::Viewer,
            #[cfg(feature = "page")]
            Self::Page(_) => Needs::Viewer,
            // Names every database and component, and the monitor's figures.
            #[cfg(feature = "metrics")]
            Self::Metrics => Needs::Viewer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admin_not_found_lists_every_admin_path() {
        let page = if cfg!(feature = "page") {
            r#","/health/page","/health/page/updates""#
        } else {
            ""
        };
        let metrics = if cfg!(feature = "metrics") {
            r#","/metrics""#
        } else {
            ""
        };
        assert_eq!(
            ADMIN_NOT_FOUND.body_text().await,
            format!(
                r#"{{"error":"not found","paths":["/health","/liveness","/readiness","/startup","/health/pool","/health/ping","/health/group/<name>","/health/history"{page},"/hold","/release"{metrics}]}}"#
            )
        );
    }

    /// Issue 36 D: a path a feature serves, in a build without the feature, says which
    /// feature is missing beside the paths served.
    #[tokio::test]
    async fn a_path_of_a_missing_feature_names_the_feature() {
        for (feature, paths) in [
            ("page", "/health/page and /health/page/updates"),
            ("metrics", "/metrics"),
        ] {
            let body: serde_json::Value =
                serde_json::from_str(&missing(feature).body_text().await).unwrap();
            assert_eq!(body["error"], "not found");
            assert_eq!(body["missing_feature"], feature);
            assert_eq!(
                body["reason"],
                format!(
                    "{paths} is served with tower-health's `{feature}` feature, which this build does not have: add it to the crate's features"
                )
            );
            let served: serde_json::Value =
                serde_json::from_str(&ADMIN_NOT_FOUND.body_text().await).unwrap();
            assert_eq!(body["paths"], served["paths"]);
        }
        // In this build: the feature's own answer where it is built, else the hint.
        for (path, built) in [
            ("/health/page/", cfg!(feature = "page")),
            ("/health/page/updates", cfg!(feature = "page")),
            ("/metrics", cfg!(feature = "metrics")),
        ] {
            let answer = not_found_for(path);
            assert_eq!(std::ptr::eq(answer, &*ADMIN_NOT_FOUND), built, "{path}");
        }
        assert!(std::ptr::eq(not_found_for("/nothing"), &*ADMIN_NOT_FOUND));
    }

    #[test]
    fn only_what_orchestrators_poll_is_public() {
        let public: Vec<_> = Probe::ALL
            .into_iter()
            .map(|probe| Route::Probe(Target::of(probe)))
            .filter(|route| route.needs() == Needs::Nothing)
            .collect();
        assert_eq!(
            public,
            [
                Probe::Live,
                Probe::Ready,
                Probe::Startup,
                Probe::Pool,
                Probe::Ping
            ]
            .map(|probe| Route::Probe(Target::of(probe)))
        );
        assert_eq!(
            Route::Probe(Target::of(Probe::Health)).needs(),
            Needs::Viewer
        );
        for control in Control::ALL {
            assert_eq!(Route::Control(control).needs(), Needs::Operator);
        }
        #[cfg(feature = "metrics")]
        assert_eq!(
            Route::from_path("/metrics/").map(Route::needs),
            Some(Needs::Viewer)
        );
        assert_eq!(
            Route::from_path("/health/history/").map(Route::needs),
            Some(Needs::Viewer)
        );
        #[cfg(feature = "page")]
        for path in ["/health/page", "/health/page/", "/health/page/updates"] {
            assert_eq!(
                Route::from_path(path).map(Route::needs),
                Some(Needs::Viewer),
                "{path}"
            );
        }
    }
}
