//! Kubernetes' plain-text answers: what kube-apiserver, etcd and most operators answer on
//! `/livez` and `/readyz`, so that an operator's habits work here too.
//!
//! - `?verbose`: one line per check (`[+]name ok`, `[-]name failed: reason withheld`), then
//!   `readyz check passed` or `readyz check failed`.
//! - `?exclude=<check>` (repeatable): the named checks do not count (`[+]name excluded: ok`);
//!   a name that matches no check gets a `warn:` line. Without `?verbose`, a passing answer
//!   is `ok` and a failing one lists every check, as kube-apiserver's does.
//! - `<probe path>/<check>`: that check alone, `ok` or why not.
//!
//! The statuses stay this crate's (200, or 503 where kube-apiserver says 500). Names are
//! shown at every detail level, as the JSON bodies show them; the reason after `failed:` only
//! to the audience that sees details, `reason withheld` to the others.
//!
//! The lines are known once per round, and so is everything but the drain and the verdict's
//! staleness: the `?verbose` answer is rendered for each of those four cases, so that it is
//! served like the JSON one. Only `?exclude` and a check's own path write their answer per
//! request (text, no JSON), for the operator who typed them.

use std::fmt::Write as _;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};

use super::{ProbeBody, Rendered};
use crate::probe::{BodyMode, Form};
use crate::verdict::Audience;

/// How one check stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Fine: `[+]name ok`.
    Ok,
    /// In trouble without failing the probe (an optional database, a non-critical
    /// component): `[+]name degraded: <reason>`.
    Degraded,
    /// Fails the probe: `[-]name failed: <reason>`.
    Failed,
}

/// One check of a probe, as its kube-style answers list it.
#[derive(Clone, Debug)]
pub(crate) struct KubeCheck {
    /// `database/<name>`, `component/<name>`, `hold`, `monitor`, `shutdown`, `ping`,
    /// `started`.
    pub(crate) name: Box<str>,
    pub(crate) mark: Mark,
    /// Why it is not [`Mark::Ok`], for the audience that sees details.
    pub(crate) reason: Box<str>,
    /// What the other audience reads instead; `None`: `reason withheld`.
    pub(crate) minimal: Option<Box<str>>,
}

impl KubeCheck {
    /// A check whose reason names what only the audience that sees details may read
    /// (targets, error text): `reason withheld` for the others.
    pub(crate) fn withheld(
        name: impl Into<Box<str>>,
        mark: Mark,
        reason: impl Into<Box<str>>,
    ) -> Self {
        Self {
            name: name.into(),
            mark,
            reason: reason.into(),
            minimal: None,
        }
    }

    /// A check whose reason names nothing (the drain, the monitor, the start): shown to
    /// every audience.
    pub(crate) fn public(name: impl Into<Box<str>>, mark: Mark, reason: &str) -> Self {
        Self {
            minimal: Some(reason.into()),
            ..Self::withheld(name, mark, reason)
        }
    }

    pub(crate) fn ok(name: impl Into<Box<str>>) -> Self {
        Self::public(name, Mark::Ok, "")
    }

    /// The line's text after the name: `ok`, `degraded: <reason>`, `failed: <reason>`.
    fn state(&self, audience: Audience) -> String {
        let reason = match (audience, &self.minimal) {
            (Audience::Full, _) => &*self.reason,
            (Audience::Minimal, Some(minimal)) => minimal,
            (Audience::Minimal, None) => "",
        };
        let reason = if reason.is_empty() {
            "reason withheld"
        } else {
            reason
        };
        match self.mark {
            Mark::Ok => "ok".to_owned(),
            Mark::Degraded => format!("degraded: {reason}"),
            Mark::Failed => format!("failed: {reason}"),
        }
    }
}

/// The checks that depend on the moment of the request rather than on the round: whether
/// the server drains (`shutdown`, for the probes a drain fails) and whether the verdict is
/// stale (`monitor`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Moment {
    pub(crate) draining: bool,
    pub(crate) stale: bool,
}

impl Moment {
    const ALL: [Self; 4] = [
        Self {
            draining: false,
            stale: false,
        },
        Self {
            draining: false,
            stale: true,
        },
        Self {
            draining: true,
            stale: false,
        },
        Self {
            draining: true,
            stale: true,
        },
    ];

    const fn index(self) -> usize {
        self.draining as usize * 2 + self.stale as usize
    }
}

const DRAINING: &str =
    "the server is draining: it finishes in-flight requests and takes no new traffic";

/// The kube-style answers of one probe's verdict: its checks as the round left them, and the
/// `?verbose` answer rendered for every [`Moment`] and audience.
#[derive(Clone, Debug)]
pub(crate) struct KubeAnswers {
    /// The endpoint's kube name, for the last line: `readyz`, `healthz`, `poolz`,
    /// `group/<name>`.
    kube: Box<str>,
    /// Whether the verdict itself passes (before the drain and staleness).
    passes: bool,
    checks: Box<[KubeCheck]>,
    /// Why the round left no verdict (none yet, the monitor stopped, the round panicked).
    no_verdict: Option<Box<str>>,
    /// What `monitor` says once the verdict is stale.
    stale: Box<str>,
    /// Whether the answers are a verdict's: `monitor` and `shutdown` lines follow the checks
    /// (liveness and startup have neither).
    of_verdict: bool,
    /// Indexed by audience, then [`Moment`].
    verbose: Box<[Rendered]>,
}

impl KubeAnswers {
    /// The answers of a verdict whose checks are `checks`, which `passes` or not;
    /// `no_verdict` says why there is no round's verdict, `stale` what a stale one means.
    pub(crate) fn of_verdict(
        kube: impl Into<Box<str>>,
        passes: bool,
        checks: Vec<KubeCheck>,
        no_verdict: Option<&str>,
        stale: String,
    ) -> Self {
        Self {
            kube: kube.into(),
            passes,
            checks: checks.into_boxed_slice(),
            no_verdict: no_verdict.map(Into::into),
            stale: stale.into_boxed_str(),
            of_verdict: true,
            verbose: Box::default(),
        }
        .rendered()
    }

    /// The answers of a probe without a verdict (liveness, startup): its one check.
    pub(crate) fn fixed(kube: &'static str, check: KubeCheck) -> Self {
        Self {
            kube: kube.into(),
            passes: check.mark != Mark::Failed,
            checks: Box::new([check]),
            no_verdict: None,
            stale: "".into(),
            of_verdict: false,
            verbose: Box::default(),
        }
        .rendered()
    }

    /// With the `?verbose` answers rendered.
    fn rendered(mut self) -> Self {
        let answers = &self;
        let verbose = Audience::ALL
            .into_iter()
            .flat_map(|audience| Moment::ALL.map(|moment| (audience, moment)))
            .map(|(audience, moment)| {
                let (status, text) = answers.write(moment, audience, &Excluded::none(), true);
                text_response(status, text)
            })
            .collect();
        self.verbose = verbose;
        self
    }

    /// The response to a request for `form` (anything but [`Form::Json`]) at `moment`.
    pub(crate) fn response(
        &self,
        moment: Moment,
        audience: Audience,
        form: Form<'_>,
        mode: BodyMode,
    ) -> Response<ProbeBody> {
        match form {
            Form::Json | Form::Verbose => self.verbose(moment, audience).response(mode),
            Form::Excluding { verbose, query } => {
                let (status, text) = self.write(moment, audience, &Excluded::of(query), verbose);
                text_response(status, text).response(mode)
            }
            Form::Check(name) => self.check(moment, audience, name).response(mode),
        }
    }

    /// The `?verbose` answer, rendered with the round.
    fn verbose(&self, moment: Moment, audience: Audience) -> &Rendered {
        &self.verbose[audience.index() * Moment::ALL.len() + moment.index()]
    }

    /// The answer of one check's own path: `ok` (200), `degraded: <reason>` (200) or
    /// `failed: <reason>` (503); 404 with the probe's checks for a name that is none of
    /// them.
    fn check(&self, moment: Moment, audience: Audience, name: &str) -> Rendered {
        let Some(check) = self.lines(moment).find(|check| &*check.name == name) else {
            let names: Vec<Box<str>> = self.lines(moment).map(|check| check.name).collect();
            let text = format!(
                "no such check: {name:?}; the checks: {}\n",
                names.join(", ")
            );
            return text_response(StatusCode::NOT_FOUND, text);
        };
        let status = if check.mark == Mark::Failed {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        text_response(status, check.state(audience) + "\n")
    }

    /// Every check at `moment`: the round's, then `monitor` (failing when the round left no
    /// verdict or the verdict is stale), then `shutdown` for a probe that a drain fails.
    fn lines(&self, moment: Moment) -> impl Iterator<Item = KubeCheck> + '_ {
        let moment = if self.of_verdict {
            moment
        } else {
            Moment::default()
        };
        let monitor = match (moment.stale, &self.no_verdict) {
            (true, _) => KubeCheck::public("monitor", Mark::Failed, &self.stale),
            (false, Some(why)) => KubeCheck::public("monitor", Mark::Failed, why),
            (false, None) => KubeCheck::ok("monitor"),
        };
        let monitor = self.of_verdict.then_some(monitor);
        let shutdown = self.of_verdict.then(|| {
            if moment.draining {
                KubeCheck::public("shutdown", Mark::Failed, DRAINING)
            } else {
                KubeCheck::ok("shutdown")
            }
        });
        self.checks.iter().cloned().chain(monitor).chain(shutdown)
    }

    /// The answer's status and text.
    fn write(
        &self,
        moment: Moment,
        audience: Audience,
        excluded: &Excluded<'_>,
        verbose: bool,
    ) -> (StatusCode, String) {
        let mut text = String::new();
        let (mut failing, mut failing_counted) = (false, false);
        let mut matched = vec![false; excluded.names.len()];
        for check in self.lines(moment) {
            let failed = check.mark == Mark::Failed;
            failing |= failed;
            if let Some(at) = excluded.position(&check.name) {
                matched[at] = true;
                // Writing to a String cannot fail.
                let _ = writeln!(text, "[+]{} excluded: ok", check.name);
                continue;
            }
            failing_counted |= failed;
            let sign = if failed { '-' } else { '+' };
            let _ = writeln!(text, "[{sign}]{} {}", check.name, check.state(audience));
        }
        let unmatched: Vec<String> = excluded
            .names
            .iter()
            .zip(&matched)
            .filter(|(_, matched)| !**matched)
            .map(|(name, _)| format!("{name:?}"))
            .collect();
        if !unmatched.is_empty() {
            let _ = writeln!(
                text,
                "warn: some health checks cannot be excluded: no matches for {}",
                unmatched.join(",")
            );
        }
        let passes = self.passes && !(self.of_verdict && (moment.draining || moment.stale));
        // Excluding the checks that fail passes; a failure that no line shows cannot be
        // excluded away.
        let passes = passes || failing && !failing_counted;
        if passes {
            if verbose {
                let _ = writeln!(text, "{} check passed", self.kube);
            } else {
                text = "ok".to_owned();
            }
            (StatusCode::OK, text)
        } else {
            // Always verbose on failure, as kube-apiserver is.
            let _ = writeln!(text, "{} check failed", self.kube);
            (StatusCode::SERVICE_UNAVAILABLE, text)
        }
    }
}

/// The checks a request excludes (`?exclude=<check>`, repeatable), percent-decoded.
#[derive(Debug, Default)]
struct Excluded<'a> {
    names: Vec<std::borrow::Cow<'a, str>>,
}

/// The most `exclude` values read from one query: more are ignored (the crate's probes have
/// a handful of checks; a query of thousands is not an operator's).
const MAX_EXCLUDED: usize = 64;

impl<'a> Excluded<'a> {
    fn none() -> Self {
        Self::default()
    }

    /// The `exclude` values of `query`.
    fn of(query: &'a str) -> Self {
        let names = query
            .split('&')
            .filter_map(|pair| pair.strip_prefix("exclude="))
            .take(MAX_EXCLUDED)
            .map(percent_decode)
            .collect();
        Self { names }
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|excluded| excluded == name)
    }
}

/// `value` with its `%XX` escapes (and `+` for a space) decoded; an invalid escape or a
/// result that is not UTF-8 is left as written.
fn percent_decode(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.contains(['%', '+']) {
        return value.into();
    }
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let escaped = (byte == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (byte, escaped) {
            (_, Some(escaped)) => {
                decoded.push(escaped);
                at += 3;
            }
            (b'+', None) => {
                decoded.push(b' ');
                at += 1;
            }
            (byte, None) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).map_or_else(|_| value.into(), Into::into)
}

const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");

/// A plain-text answer, with the headers kube-apiserver sends with it.
fn text_response(status: StatusCode, text: String) -> Rendered {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert(header::CONTENT_TYPE, TEXT);
    headers.insert(header::CACHE_CONTROL, NO_STORE);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
    Rendered::with_headers(status, headers, Bytes::from(text), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(passes: bool, checks: Vec<KubeCheck>) -> KubeAnswers {
        KubeAnswers::of_verdict("readyz", passes, checks, None, "stale".to_owned())
    }

    fn text(answers: &KubeAnswers, query: &str, verbose: bool) -> (StatusCode, String) {
        answers.write(
            Moment::default(),
            Audience::Minimal,
            &Excluded::of(query),
            verbose,
        )
    }

    #[test]
    fn a_failure_no_line_shows_cannot_be_excluded_away() {
        // A verdict that fails with every line passing (it cannot happen by construction:
        // a safety net, not a path).
        let unexplained = answers(false, vec![KubeCheck::ok("database/default")]);
        let (status, body) = text(&unexplained, "exclude=database/default", true);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let explained = answers(
            false,
            vec![KubeCheck::withheld(
                "database/default",
                Mark::Failed,
                "refused",
            )],
        );
        let (status, body) = text(&explained, "exclude=database/default", false);
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
    }

    #[test]
    fn stale_and_draining_fail_their_own_lines() {
        let fine = answers(true, vec![KubeCheck::ok("database/default")]);
        let (status, body) = fine.write(
            Moment {
                draining: true,
                stale: true,
            },
            Audience::Minimal,
            &Excluded::none(),
            true,
        );
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            format!(
                "[+]database/default ok\n[-]monitor failed: stale\n[-]shutdown failed: {DRAINING}\nreadyz check failed\n"
            )
        );
        // The pre-rendered answer is the same text.
        let rendered = fine.verbose(
            Moment {
                draining: true,
                stale: true,
            },
            Audience::Minimal,
        );
        assert_eq!(rendered.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn exclude_values_are_percent_decoded_and_bounded() {
        assert_eq!(percent_decode("database%2Fdefault"), "database/default");
        assert_eq!(percent_decode("a+b"), "a b");
        assert_eq!(percent_decode("bad%zz%"), "bad%zz%");
        assert_eq!(percent_decode("%ff"), "%ff", "not UTF-8: as written");
        let many = vec!["exclude=x"; 1000].join("&");
        assert_eq!(Excluded::of(&many).names.len(), MAX_EXCLUDED);
        assert_eq!(
            Excluded::of("verbose&exclude=a&excludex=b&exclude=c").names,
            ["a", "c"]
        );
    }
}

#[cfg(test)]
mod proptests {
    use proptest::prelude::*;

    use super::*;

    fn answers() -> KubeAnswers {
        KubeAnswers::of_verdict(
            "readyz",
            false,
            vec![
                KubeCheck::withheld("database/default", Mark::Failed, "refused"),
                KubeCheck::withheld("component/cache", Mark::Degraded, "slow"),
                KubeCheck::ok("hold"),
            ],
            None,
            "stale".to_owned(),
        )
    }

    proptest! {
        /// Whatever a query says (any bytes a URI's query can hold, escapes broken or not,
        /// thousands of `exclude`s), the answer is 200 or 503 with kube-apiserver's last line,
        /// and it passes only when every failing check is excluded.
        #[test]
        fn any_query_gets_a_well_formed_answer(
            pairs in proptest::collection::vec(
                prop_oneof![
                    Just("verbose".to_owned()),
                    Just("exclude=database%2Fdefault".to_owned()),
                    Just("exclude=database/default".to_owned()),
                    "exclude=[ -~]{0,12}",
                    "[ -~]{0,16}",
                ],
                0..80,
            ),
            draining in any::<bool>(),
            stale in any::<bool>(),
        ) {
            let query = pairs.join("&");
            let answers = answers();
            let excluded = Excluded::of(&query);
            let verbose = query.split('&').any(|pair| pair.split('=').next() == Some("verbose"));
            let (status, text) =
                answers.write(Moment { draining, stale }, Audience::Minimal, &excluded, verbose);
            let passes = excluded.position("database/default").is_some()
                && !(draining && excluded.position("shutdown").is_none())
                && !(stale && excluded.position("monitor").is_none());
            prop_assert_eq!(status == StatusCode::OK, passes, "{}", text);
            let last = text.lines().last().unwrap_or_default();
            match (passes, verbose) {
                (true, false) => prop_assert_eq!(&text, "ok"),
                (true, true) => prop_assert_eq!(last, "readyz check passed"),
                (false, _) => prop_assert_eq!(last, "readyz check failed"),
            }
            prop_assert!(text.lines().count() <= 6 + MAX_EXCLUDED.min(excluded.names.len()) + 1);
        }
    }
}
