//! Kubernetes' plain-text answers as HTTP responses ([`crate::dialect::kube`] writes the
//! words): the `?verbose` answer of each verdict rendered when first asked, at most once per
//! publication for each moment (draining or not, stale or not, returning or not), audience
//! and answer, then served like the JSON one; `?exclude` and a check's own path written per
//! request (text, no JSON). Only an operator types these: a round renders none of them.

use std::sync::OnceLock;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};

use super::{ProbeBody, Rendered};
use crate::dialect::kube::{Excluded, Lines, Moment};
use crate::http::request::{BodyMode, Form};
use crate::verdict::Audience;
use crate::view::Check;

/// The kube-style answers of one probe's verdict: its checks as the round left them, and the
/// `?verbose` answer of each [`Moment`], audience and answer, rendered when first asked.
#[derive(Clone, Debug)]
pub(crate) struct KubeAnswers {
    /// The endpoint's kube name, for the last line: `readyz`, `healthz`, `poolz`,
    /// `group/<name>`.
    kube: Box<str>,
    checks: Box<[Check]>,
    /// Why the round left no verdict (none yet, the monitor stopped, the round panicked).
    no_verdict: Option<Box<str>>,
    /// What `monitor` says once the verdict is stale.
    stale: Box<str>,
    /// Whether the answers are a verdict's: `monitor` and `shutdown` lines follow the checks
    /// (liveness and startup have neither).
    of_verdict: bool,
    /// Indexed by audience, then [`Moment`], then whether the probe passes.
    verbose: Box<[OnceLock<Rendered>]>,
}

impl KubeAnswers {
    /// The answers of a verdict whose checks are `checks`; `no_verdict` says why there is no
    /// round's verdict, `stale` what a stale one means.
    pub(crate) fn of_verdict(
        kube: impl Into<Box<str>>,
        checks: Vec<Check>,
        no_verdict: Option<&str>,
        stale: String,
    ) -> Self {
        Self {
            kube: kube.into(),
            checks: checks.into_boxed_slice(),
            no_verdict: no_verdict.map(Into::into),
            stale: stale.into_boxed_str(),
            of_verdict: true,
            verbose: unrendered(),
        }
    }

    /// The answers of a probe without a verdict (liveness, startup): its one check.
    pub(crate) fn fixed(kube: &'static str, check: Check) -> Self {
        Self {
            kube: kube.into(),
            checks: Box::new([check]),
            no_verdict: None,
            stale: "".into(),
            of_verdict: false,
            verbose: unrendered(),
        }
    }

    fn lines(&self) -> Lines<'_> {
        Lines {
            kube: &self.kube,
            checks: &self.checks,
            no_verdict: self.no_verdict.as_deref(),
            stale: &self.stale,
            of_verdict: self.of_verdict,
        }
    }

    /// The response to a request for `form` (anything but [`Form::Json`]) at `moment`, to a
    /// probe that `passing` or not (the reading's answer).
    pub(crate) fn response(
        &self,
        moment: Moment,
        passing: bool,
        audience: Audience,
        form: Form<'_>,
        mode: BodyMode,
    ) -> Response<ProbeBody> {
        let lines = self.lines();
        match form {
            Form::Json | Form::Verbose => self.verbose(moment, passing, audience).response(mode),
            Form::Excluding { verbose, query } => {
                let answer = lines.answer(moment, audience, &Excluded::of(query), verbose, passing);
                text_response(answer).response(mode)
            }
            Form::Check(name) => match lines.check(moment, audience, name) {
                Ok(answer) => text_response(answer).response(mode),
                Err(text) => text_rendered(StatusCode::NOT_FOUND, text).response(mode),
            },
        }
    }

    /// The `?verbose` answer, rendered the first time it is asked.
    fn verbose(&self, moment: Moment, passing: bool, audience: Audience) -> &Rendered {
        let index = (audience.index() * Moment::ALL.len() + moment.index()) * 2;
        self.verbose[index + usize::from(passing)].get_or_init(|| {
            let answer = self
                .lines()
                .answer(moment, audience, &Excluded::none(), true, passing);
            text_response(answer)
        })
    }

    /// How many `?verbose` answers have been rendered.
    #[cfg(test)]
    fn rendered(&self) -> usize {
        self.verbose
            .iter()
            .filter(|slot| slot.get().is_some())
            .count()
    }
}

/// A place for each `?verbose` answer, none rendered yet.
fn unrendered() -> Box<[OnceLock<Rendered>]> {
    let answers = Audience::ALL.len() * Moment::ALL.len() * 2;
    (0..answers).map(|_| OnceLock::new()).collect()
}

/// A plain-text answer that passes (200) or not (503).
fn text_response((passes, text): (bool, String)) -> Rendered {
    let status = if passes {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    text_rendered(status, text)
}

const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");
const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");

/// A plain-text answer, with the headers kube-apiserver sends with it.
fn text_rendered(status: StatusCode, text: String) -> Rendered {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert(header::CONTENT_TYPE, TEXT);
    headers.insert(header::CACHE_CONTROL, NO_STORE);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, NOSNIFF);
    Rendered::with_headers(status, headers, Bytes::from(text), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Mark;

    #[test]
    fn verbose_is_rendered_once_when_asked_and_never_otherwise() {
        let checks = vec![Check::withheld("database/default", Mark::Failed, "refused")];
        let answers = KubeAnswers::of_verdict("readyz", checks, None, "stale".to_owned());
        assert_eq!(answers.rendered(), 0, "a publication renders no ?verbose");
        let moment = Moment::default();
        let ask = || answers.response(moment, false, Audience::Full, Form::Verbose, BodyMode::Full);
        let first = ask();
        let second = ask();
        assert_eq!(
            answers.rendered(),
            1,
            "one answer asked twice is rendered once"
        );
        assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(first.headers(), second.headers());
        answers.response(moment, true, Audience::Full, Form::Verbose, BodyMode::Full);
        assert_eq!(answers.rendered(), 2);
    }

    #[test]
    fn the_rendered_answers_are_the_written_ones() {
        let checks = vec![Check::withheld("database/default", Mark::Failed, "refused")];
        let answers = KubeAnswers::of_verdict("readyz", checks, None, "stale".to_owned());
        for audience in Audience::ALL {
            for moment in Moment::ALL {
                for passing in [false, true] {
                    let rendered = answers.verbose(moment, passing, audience);
                    let (passes, _) =
                        answers
                            .lines()
                            .answer(moment, audience, &Excluded::none(), true, passing);
                    let status = if passes {
                        StatusCode::OK
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    };
                    assert_eq!(rendered.status(), status, "{moment:?} {passing}");
                }
            }
        }
    }
}
