use std::sync::Arc;

use super::Status;
use super::{CheckOutcome, ComponentReport, ReadinessRules};

/// A [health group](crate::config::HealthGroup)'s verdict: its members as the readiness
/// round found them. Published with readiness ([`ReadinessVerdict::groups`]), and judged
/// like it: a drain, a hold or a stale verdict fails every group.
///
/// [`ReadinessVerdict::groups`]: super::ReadinessVerdict::groups
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GroupVerdict {
    /// The group's name.
    pub name: Arc<str>,
    /// [`Healthy`](Status::Healthy) when every member passed, [`Degraded`](Status::Degraded)
    /// when only optional ones failed, [`Unhealthy`](Status::Unhealthy) when another did, and
    /// [`Unavailable`](Status::Unavailable) before the first round.
    pub status: Status,
    /// Every member, in the order the group lists them: read by the group's readers (its
    /// body, its Kubernetes text, gRPC); users read [`failing`](Self::failing).
    pub(crate) members: Vec<GroupMemberState>,
}

/// One member of a [`GroupVerdict`].
#[derive(Clone, Debug)]
pub(crate) struct GroupMemberState {
    /// `database/<name>` or `component/<name>`.
    pub(crate) check: Arc<str>,
    /// Whether its failure only degrades the group.
    pub(crate) optional: bool,
    /// Whether it passed, by readiness's rules (a timed-out database passes only under
    /// [`FailDirection::Ready`](crate::config::FailDirection::Ready)).
    pub(crate) passed: bool,
    /// Its state as its body shows it: a database's `passed`, `failed` or `timed_out`, a
    /// component's `healthy`, `degraded`, `unhealthy` or `unknown`; `unknown` too for a
    /// member no round has checked.
    pub(crate) state: &'static str,
    /// What went wrong, for the audience that sees details.
    pub(crate) reason: Option<String>,
}

impl GroupVerdict {
    /// The verdict of the group `name` whose members are `(check, optional)`, from one
    /// readiness round's `databases` and the `components` as they stand.
    pub(crate) fn of<'a>(
        name: Arc<str>,
        members: impl IntoIterator<Item = (&'a Arc<str>, bool)>,
        databases: &[CheckOutcome],
        components: &[ComponentReport],
        rules: ReadinessRules,
    ) -> Self {
        let members: Vec<GroupMemberState> = members
            .into_iter()
            .map(|(check, optional)| {
                let (passed, state, reason) = match check.split_once('/') {
                    Some(("database", name)) => databases
                        .iter()
                        .find(|outcome| *outcome.name == *name)
                        .map(|outcome| {
                            let reason = outcome
                                .error
                                .as_ref()
                                .map(|error| error.message().to_owned())
                                .or_else(|| {
                                    outcome.detail.map(|detail| detail.describe().to_owned())
                                });
                            (
                                outcome.status.passes_readiness(rules.fail_direction),
                                outcome.status.as_str(),
                                reason,
                            )
                        }),
                    Some(("component", name)) => components
                        .iter()
                        .find(|report| *report.name == *name)
                        .map(|report| {
                            let reason =
                                (!report.reason.is_empty()).then(|| report.reason.to_string());
                            (
                                !rules.component_fails(report),
                                report.status.as_str(),
                                reason,
                            )
                        }),
                    _ => None,
                }
                .unwrap_or((false, "unknown", Some("not checked yet".to_owned())));
                GroupMemberState {
                    check: check.clone(),
                    optional,
                    passed,
                    state,
                    reason,
                }
            })
            .collect();
        let status = if members
            .iter()
            .any(|member| !member.passed && !member.optional)
        {
            Status::Unhealthy
        } else if members.iter().any(|member| !member.passed) {
            Status::Degraded
        } else {
            Status::Healthy
        };
        Self {
            name,
            status,
            members,
        }
    }

    /// The verdict of a group before any round (or after one that panicked): every member
    /// unchecked.
    pub(crate) fn unavailable<'a>(
        name: Arc<str>,
        members: impl IntoIterator<Item = (&'a Arc<str>, bool)>,
    ) -> Self {
        let mut verdict = Self::of(name, members, &[], &[], ReadinessRules::default());
        verdict.status = Status::Unavailable;
        verdict
    }

    /// Whether the group passes (200): healthy or degraded.
    #[must_use]
    pub fn passes(&self) -> bool {
        self.status.is_serving()
    }

    /// The members that did not pass, by readiness's rules (a timed-out database passes only
    /// under [`FailDirection::Ready`](crate::config::FailDirection::Ready)), in the order the
    /// group lists them: `database/<name>` or `component/<name>`. While the group is
    /// [`Degraded`](Status::Degraded) they are all optional members; while it is
    /// [`Unhealthy`](Status::Unhealthy), at least one is not. Each member's own outcome is in
    /// the same readiness verdict ([`databases`], [`components`]), and the group's body
    /// (`<prefix>/group/<name>`) shows every member's state.
    ///
    /// [`databases`]: super::ReadinessVerdict::databases
    /// [`components`]: super::ReadinessVerdict::components
    pub fn failing(&self) -> impl Iterator<Item = &str> {
        self.members
            .iter()
            .filter(|member| !member.passed)
            .map(|member| &*member.check)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::verdict::{CheckError, CheckErrorKind, CheckStatus};

    fn outcome(name: &str, status: CheckStatus) -> CheckOutcome {
        CheckOutcome {
            name: name.into(),
            status,
            elapsed: Duration::ZERO,
            running_for: None,
            error: (status == CheckStatus::Failed)
                .then(|| CheckError::new(CheckErrorKind::Refused, "refused")),
            detail: None,
            critical: true,
            target: None,
            details: None,
        }
    }

    #[test]
    fn failing_names_the_members_that_did_not_pass_in_the_groups_order() {
        let databases = [
            outcome("orders", CheckStatus::Passed),
            outcome("ledger", CheckStatus::Failed),
            outcome("search", CheckStatus::TimedOut),
        ];
        let members = [
            ("database/search", true),
            ("database/orders", false),
            ("database/ledger", false),
            ("component/cache", true),
        ]
        .map(|(check, optional)| (Arc::<str>::from(check), optional));
        let group = |members: &[(Arc<str>, bool)]| {
            GroupVerdict::of(
                "checkout".into(),
                members.iter().map(|(check, optional)| (check, *optional)),
                &databases,
                &[],
                ReadinessRules::default(),
            )
        };

        let all = group(&members);
        assert_eq!(all.status, Status::Unhealthy);
        // A timed-out database fails under the default fail direction; a component no round
        // has checked has not passed.
        assert_eq!(
            all.failing().collect::<Vec<_>>(),
            ["database/search", "database/ledger", "component/cache"]
        );

        let optional_only = group(&[members[0].clone(), members[1].clone()]);
        assert_eq!(optional_only.status, Status::Degraded);
        assert_eq!(
            optional_only.failing().collect::<Vec<_>>(),
            ["database/search"]
        );

        let passing = group(&[members[1].clone()]);
        assert_eq!(passing.status, Status::Healthy);
        assert_eq!(passing.failing().count(), 0);
    }
}
