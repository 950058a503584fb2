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
//! A pure function of the reading: the checks (decided once per verdict, [`Check`]), the
//! moment (draining or not, stale or not, returning or not) and whether the probe passes,
//! to words. The HTTP side renders the `?verbose` answers ahead of time with it, and writes
//! `?exclude` and a check's own path per request.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::verdict::{Audience, Return};
use crate::view::{Check, Mark};

/// The checks that depend on the moment of the request rather than on the round: whether
/// the server drains (`shutdown`, for the probes a drain fails), whether the verdict is stale
/// (`monitor`), and whether readiness waits out its return after an outage (`return`, listed
/// only then).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Moment {
    pub(crate) draining: bool,
    pub(crate) stale: bool,
    pub(crate) returning: bool,
}

impl Moment {
    pub(crate) const ALL: [Self; 8] = {
        let mut all = [Self {
            draining: false,
            stale: false,
            returning: false,
        }; 8];
        let mut index = 0;
        while index < all.len() {
            all[index] = Self {
                draining: index & 4 != 0,
                stale: index & 2 != 0,
                returning: index & 1 != 0,
            };
            index += 1;
        }
        all
    };

    pub(crate) const fn index(self) -> usize {
        self.draining as usize * 4 + self.stale as usize * 2 + self.returning as usize
    }
}

const DRAINING: &str =
    "the server is draining: it finishes in-flight requests and takes no new traffic";

/// One probe's checks as Kubernetes lists them: the verdict's, then `monitor` and `shutdown`
/// for a probe that reads a verdict.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Lines<'a> {
    /// The endpoint's name, for the last line: `readyz`, `healthz`, `poolz`, `group/<name>`.
    pub(crate) kube: &'a str,
    pub(crate) checks: &'a [Check],
    /// Why the round left no verdict (none yet, the monitor stopped, the round panicked).
    pub(crate) no_verdict: Option<&'a str>,
    /// What `monitor` says once the verdict is stale.
    pub(crate) stale: &'a str,
    /// Whether the checks are a verdict's: `monitor` and `shutdown` follow them (liveness
    /// and startup have neither).
    pub(crate) of_verdict: bool,
}

impl Lines<'_> {
    /// Every line at `moment`: the round's checks, then `monitor` (failing when the round
    /// left no verdict or the verdict is stale), then `shutdown` (failing while draining),
    /// then `return` while readiness waits out its return.
    fn at(&self, moment: Moment) -> impl Iterator<Item = Check> + '_ {
        let moment = if self.of_verdict {
            moment
        } else {
            Moment::default()
        };
        let monitor = match (moment.stale, self.no_verdict) {
            (true, _) => Check::public("monitor", Mark::Failed, self.stale),
            (false, Some(why)) => Check::public("monitor", Mark::Failed, why),
            (false, None) => Check::ok("monitor"),
        };
        let monitor = self.of_verdict.then_some(monitor);
        let shutdown = self.of_verdict.then(|| {
            if moment.draining {
                Check::public("shutdown", Mark::Failed, DRAINING)
            } else {
                Check::ok("shutdown")
            }
        });
        let returning = (self.of_verdict && moment.returning)
            .then(|| Check::public("return", Mark::Failed, Return::REASON));
        self.checks
            .iter()
            .cloned()
            .chain(monitor)
            .chain(shutdown)
            .chain(returning)
    }

    /// The answer at `moment` to a probe that `passing` or not (the reading's answer), for
    /// `audience`, without the `excluded` checks: whether it passes, and its text.
    pub(crate) fn answer(
        &self,
        moment: Moment,
        audience: Audience,
        excluded: &Excluded<'_>,
        verbose: bool,
        passing: bool,
    ) -> (bool, String) {
        let mut text = String::new();
        let (mut failing, mut failing_counted) = (false, false);
        let mut matched = vec![false; excluded.names.len()];
        for check in self.at(moment) {
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
            let _ = writeln!(text, "[{sign}]{} {}", check.name, state(&check, audience));
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
        // Excluding the checks that fail passes; a failure that no line shows cannot be
        // excluded away.
        let passes = passing || failing && !failing_counted;
        if passes {
            if verbose {
                let _ = writeln!(text, "{} check passed", self.kube);
            } else {
                text = "ok".to_owned();
            }
        } else {
            // Always verbose on failure, as kube-apiserver is.
            let _ = writeln!(text, "{} check failed", self.kube);
        }
        (passes, text)
    }

    /// The answer of one check's own path at `moment`: `ok`, `degraded: <reason>` (both
    /// passing) or `failed: <reason>`; `Err` with the probe's checks for a name that is none
    /// of them.
    pub(crate) fn check(
        &self,
        moment: Moment,
        audience: Audience,
        name: &str,
    ) -> Result<(bool, String), String> {
        match self.at(moment).find(|check| &*check.name == name) {
            Some(check) => Ok((check.mark != Mark::Failed, state(&check, audience) + "\n")),
            None => {
                let names: Vec<Box<str>> = self.at(moment).map(|check| check.name).collect();
                Err(format!(
                    "no such check: {name:?}; the checks: {}\n",
                    names.join(", ")
                ))
            }
        }
    }
}

/// A line's text after the name: `ok`, `degraded: <reason>`, `failed: <reason>`.
fn state(check: &Check, audience: Audience) -> String {
    let reason = match check.reason_for(audience) {
        "" => "reason withheld",
        reason => reason,
    };
    match check.mark {
        Mark::Ok => "ok".to_owned(),
        Mark::Degraded => format!("degraded: {reason}"),
        Mark::Failed => format!("failed: {reason}"),
    }
}

/// The checks a request excludes (`?exclude=<check>`, repeatable), percent-decoded.
#[derive(Debug, Default)]
pub(crate) struct Excluded<'a> {
    names: Vec<Cow<'a, str>>,
}

/// The most `exclude` values read from one query: more are ignored (the crate's probes have
/// a handful of checks; a query of thousands is not an operator's).
const MAX_EXCLUDED: usize = 64;

impl<'a> Excluded<'a> {
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// The `exclude` values of `query`.
    pub(crate) fn of(query: &'a str) -> Self {
        let names = query
            .split('&')
            .filter_map(|pair| pair.strip_prefix("exclude="))
            .take(MAX_EXCLUDED)
            .map(crate::util::form_decode)
            .collect();
        Self { names }
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|excluded| excluded == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(checks: &[Check]) -> Lines<'_> {
        Lines {
            kube: "readyz",
            checks,
            no_verdict: None,
            stale: "stale",
            of_verdict: true,
        }
    }

    fn text(checks: &[Check], query: &str, verbose: bool, passing: bool) -> (bool, String) {
        lines(checks).answer(
            Moment::default(),
            Audience::Minimal,
            &Excluded::of(query),
            verbose,
            passing,
        )
    }

    #[test]
    fn a_failure_no_line_shows_cannot_be_excluded_away() {
        // A verdict that fails with every line passing (it cannot happen by construction:
        // a safety net, not a path).
        let unexplained = [Check::ok("database/default")];
        let (passes, body) = text(&unexplained, "exclude=database/default", true, false);
        assert!(!passes, "{body}");
        let explained = [Check::withheld("database/default", Mark::Failed, "refused")];
        let (passes, body) = text(&explained, "exclude=database/default", false, false);
        assert_eq!((passes, body.as_str()), (true, "ok"));
    }

    #[test]
    fn stale_and_draining_fail_their_own_lines() {
        let fine = [Check::ok("database/default")];
        let both = Moment {
            draining: true,
            stale: true,
            returning: false,
        };
        let (passes, body) =
            lines(&fine).answer(both, Audience::Minimal, &Excluded::none(), true, false);
        assert!(!passes);
        assert_eq!(
            body,
            format!(
                "[+]database/default ok\n[-]monitor failed: stale\n[-]shutdown failed: {DRAINING}\nreadyz check failed\n"
            )
        );
    }

    /// While readiness waits out its return, a `return` line says why it fails over
    /// passing checks; it is listed then only.
    #[test]
    fn a_return_fails_its_own_line_while_it_waits() {
        let fine = [Check::ok("database/default")];
        let returning = Moment {
            returning: true,
            ..Moment::default()
        };
        let (passes, body) =
            lines(&fine).answer(returning, Audience::Minimal, &Excluded::none(), true, false);
        assert!(!passes);
        assert_eq!(
            body,
            format!(
                "[+]database/default ok\n[+]monitor ok\n[+]shutdown ok\n[-]return failed: {}\nreadyz check failed\n",
                Return::REASON
            )
        );
        let (passes, body) = lines(&fine).answer(
            Moment::default(),
            Audience::Minimal,
            &Excluded::none(),
            true,
            true,
        );
        assert!(passes);
        assert!(!body.contains("return"), "{body}");
        for (index, moment) in Moment::ALL.into_iter().enumerate() {
            assert_eq!(moment.index(), index, "{moment:?}");
        }
    }

    #[test]
    fn a_checks_own_path_answers_it_alone() {
        let checks = [
            Check::withheld("database/default", Mark::Failed, "refused"),
            Check::withheld("component/cache", Mark::Degraded, "slow"),
        ];
        let lines = lines(&checks);
        let moment = Moment::default();
        assert_eq!(
            lines.check(moment, Audience::Full, "database/default"),
            Ok((false, "failed: refused\n".to_owned()))
        );
        assert_eq!(
            lines.check(moment, Audience::Minimal, "component/cache"),
            Ok((true, "degraded: reason withheld\n".to_owned()))
        );
        assert_eq!(
            lines.check(moment, Audience::Minimal, "nope"),
            Err(
                "no such check: \"nope\"; the checks: database/default, component/cache, monitor, shutdown\n"
                    .to_owned()
            )
        );
    }

    #[test]
    fn exclude_values_are_form_decoded_and_bounded() {
        assert_eq!(
            crate::util::form_decode("database%2Fdefault"),
            "database/default"
        );
        assert_eq!(crate::util::form_decode("a+b"), "a b");
        assert_eq!(crate::util::form_decode("bad%zz%"), "bad%zz%");
        assert_eq!(
            crate::util::form_decode("%ff"),
            "%ff",
            "not UTF-8: as written"
        );
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

    fn checks() -> [Check; 3] {
        [
            Check::withheld("database/default", Mark::Failed, "refused"),
            Check::withheld("component/cache", Mark::Degraded, "slow"),
            Check::ok("hold"),
        ]
    }

    proptest! {
        /// Whatever a query says (any bytes a URI's query can hold, escapes broken or not,
        /// thousands of `exclude`s), the answer ends with kube-apiserver's last line, and a
        /// probe that fails passes only when every failing check is excluded.
        #[test]
        fn any_query_gets_a_well_formed_answer(
            pairs in proptest::collection::vec(
                prop_oneof![
                    Just("verbose".to_owned()),
                    Just("exclude=database%2Fdefault".to_owned()),
                    Just("exclude=database/default".to_owned()),
                    Just("exclude=return".to_owned()),
                    "exclude=[ -~]{0,12}",
                    "[ -~]{0,16}",
                ],
                0..80,
            ),
            draining in any::<bool>(),
            stale in any::<bool>(),
            returning in any::<bool>(),
        ) {
            let query = pairs.join("&");
            let checks = checks();
            let lines = Lines {
                kube: "readyz",
                checks: &checks,
                no_verdict: None,
                stale: "stale",
                of_verdict: true,
            };
            let excluded = Excluded::of(&query);
            let verbose = query.split('&').any(|pair| pair.split('=').next() == Some("verbose"));
            let (passes, text) =
                lines.answer(Moment { draining, stale, returning }, Audience::Minimal, &excluded, verbose, false);
            let expected = excluded.position("database/default").is_some()
                && !(draining && excluded.position("shutdown").is_none())
                && !(stale && excluded.position("monitor").is_none())
                && !(returning && excluded.position("return").is_none());
            prop_assert_eq!(passes, expected, "{}", text);
            let last = text.lines().last().unwrap_or_default();
            match (passes, verbose) {
                (true, false) => prop_assert_eq!(&text, "ok"),
                (true, true) => prop_assert_eq!(last, "readyz check passed"),
                (false, _) => prop_assert_eq!(last, "readyz check failed"),
            }
            prop_assert!(text.lines().count() <= 7 + MAX_EXCLUDED.min(excluded.names.len()) + 1);
        }
    }
}
