//! What the page shows, decided once from the view, the histories and the fleet, for one
//! audience: every text here is plain text, which the templates escape as they write it.

use std::time::{Duration, SystemTime};

use super::identity::Identity;
use super::timeline::{self, Timeline};
use crate::admin::history::{shows_details, timestamp};
use crate::monitor::HealthHandle;
use crate::monitor::history::{CheckHistory, CheckKind, FLAP_WINDOW_MINUTES};
use crate::probe::Probe;
use crate::shutdown::progress::{DrainPhase, DrainProgress, by_name};
use crate::verdict::{Audience, CheckStatus, ComponentStatus, Status};
use crate::view::{Condition, View};

/// Everything one rendering of the page shows.
#[derive(Debug)]
pub(super) struct Model {
    /// What the page's script sends back to ask for the next change (see
    /// [`super::token`]).
    pub(super) token: String,
    pub(super) updates: &'static str,
    pub(super) details: bool,
    /// When it was rendered: `HH:MM:SS` and RFC 3339.
    pub(super) clock: String,
    pub(super) rendered_at: String,
    /// Which process this is.
    pub(super) identity: Identity,
    /// The document's title: the instance, its host and the headline in words.
    pub(super) title: String,
    pub(super) health: Badge,
    /// Whether the load balancers are told to send traffic here: readiness's answer, and
    /// the HAProxy agent's weight when one runs. Beside health's badge, so that a process
    /// on its way back (healthy, readiness still 503) never reads all green.
    pub(super) rotation: Rotation,
    /// The health verdict's causes, most serious first, for the audience.
    pub(super) causes: Vec<String>,
    pub(super) probes: Vec<ProbeRow>,
    pub(super) lifecycle: Vec<Fact>,
    /// What the HAProxy agents tell HAProxy now, one line each (none without an agent).
    pub(super) agents: Vec<AgentRow>,
    pub(super) drain: DrainView,
    pub(super) checks: Vec<CheckCard>,
    pub(super) groups: Vec<GroupRow>,
    pub(super) fleet: Option<Fleet>,
    pub(super) flap_window_minutes: u64,
    pub(super) width: u64,
    pub(super) height: u64,
    pub(super) strip_y: u64,
    pub(super) strip_height: u64,
}

/// A state in a word, and the class it is drawn with (`ok`, `warn`, `fail`, `idle`).
#[derive(Debug)]
pub(super) struct Badge {
    pub(super) word: &'static str,
    pub(super) class: &'static str,
}

/// Whether the process is in rotation, in words.
#[derive(Debug)]
pub(super) struct Rotation {
    pub(super) word: String,
    pub(super) class: &'static str,
    /// Why, when readiness does not pass (its condition, a return's end), in words.
    pub(super) why: Option<String>,
}

/// One HAProxy agent's line.
#[derive(Debug)]
pub(super) struct AgentRow {
    pub(super) addr: String,
    /// The line as the agent writes it: `up ready 17%`, `drain`, `down ready`.
    pub(super) line: String,
    /// The weight it asks for, in percent of the server's, when it asks for one.
    pub(super) percent: Option<u8>,
    pub(super) class: &'static str,
}

/// The drain, as it stands.
#[derive(Debug)]
pub(super) struct DrainView {
    /// The phase in words: `not draining`, `in its delay`, ...
    pub(super) phase: &'static str,
    pub(super) class: &'static str,
    /// Its times, once started: (what, when `HH:MM:SS`, RFC 3339), in order.
    pub(super) times: Vec<(&'static str, String, String)>,
    /// Requests in flight, the long-lived connections included.
    pub(super) in_flight: usize,
    /// The long-lived connections open, by name (`chat: 2, events: 1`); empty with none.
    pub(super) long_lived: String,
    pub(super) long_lived_open: usize,
}

/// How one probe is answered now.
#[derive(Debug)]
pub(super) struct ProbeRow {
    pub(super) path: &'static str,
    pub(super) badge: Badge,
    /// What decided it, when not the verdict alone and not already the status's word
    /// (`draining` is both).
    pub(super) condition: Option<&'static str>,
}

/// One fact of the process's lifecycle.
#[derive(Debug)]
pub(super) struct Fact {
    pub(super) label: &'static str,
    pub(super) value: String,
    pub(super) class: &'static str,
}

/// One database or component.
#[derive(Debug)]
pub(super) struct CheckCard {
    pub(super) name: String,
    pub(super) checked: &'static str,
    pub(super) critical: bool,
    pub(super) badge: Badge,
    /// The category of what went wrong in its last round.
    pub(super) kind: Option<&'static str>,
    /// What went wrong in its last transition to a failing status (with details).
    pub(super) cause: Option<String>,
    /// When its last transition happened.
    pub(super) since: Option<String>,
    pub(super) target: Option<String>,
    pub(super) flaps: u32,
    pub(super) timeline: Timeline,
    /// Newest first.
    pub(super) transitions: Vec<TransitionRow>,
}

/// One transition, in the list under a check.
#[derive(Debug)]
pub(super) struct TransitionRow {
    pub(super) clock: String,
    pub(super) at: String,
    pub(super) from: String,
    pub(super) to: &'static str,
    pub(super) class: &'static str,
    pub(super) kind: Option<&'static str>,
    pub(super) cause: Option<String>,
}

/// One health group.
#[derive(Debug)]
pub(super) struct GroupRow {
    pub(super) name: String,
    pub(super) badge: Badge,
    /// Each member: its `database/<name>` or `component/<name>`, its state and class.
    pub(super) members: Vec<(String, &'static str, &'static str)>,
}

/// The fleet, as the fleet guard sees it.
#[derive(Debug)]
pub(super) struct Fleet {
    /// The guard's count, in a sentence.
    pub(super) summary: String,
    /// What the guard concluded for this process, when its readiness fails on a shared
    /// cause.
    pub(super) guard: Option<String>,
    /// Each member (with details only: process ids are host names).
    pub(super) members: Vec<MemberRow>,
}

/// One process of the fleet.
#[derive(Debug)]
pub(super) struct MemberRow {
    pub(super) id: String,
    pub(super) own: bool,
    pub(super) badge: Badge,
    pub(super) cause: Option<String>,
}

const fn check_badge(status: CheckStatus) -> Badge {
    Badge {
        word: status.as_str(),
        class: timeline::class(status),
    }
}

const fn status_badge(status: Status) -> Badge {
    let class = match status {
        Status::Healthy => "ok",
        Status::Degraded => "warn",
        Status::Unhealthy | Status::Error => "fail",
        Status::Unavailable => "idle",
    };
    Badge {
        word: status.as_str(),
        class,
    }
}

const fn component_badge(status: ComponentStatus) -> Badge {
    let class = match status {
        ComponentStatus::Healthy => "ok",
        ComponentStatus::Degraded => "warn",
        ComponentStatus::Unhealthy => "fail",
        ComponentStatus::Unknown => "idle",
    };
    Badge {
        word: status.as_str(),
        class,
    }
}

fn yes_no(value: bool, when_yes: &'static str) -> (String, &'static str) {
    if value {
        ("yes".to_owned(), when_yes)
    } else {
        ("no".to_owned(), "ok")
    }
}

impl Model {
    /// The page for `audience`, from `view` (read after `token` was computed) and the
    /// histories and fleet read now.
    pub(super) fn new(
        health: &HealthHandle,
        view: &View,
        token: String,
        audience: Audience,
        updates: &'static str,
    ) -> Self {
        let details = shows_details(audience);
        let now = SystemTime::now();
        let histories = health.histories();
        let identity = Identity::now(health.readers().instance.as_ref());
        let health_badge = health_badge(view);
        let agents = agents(health);
        let rotation = rotation(view, &agents);
        let title = format!(
            "{} on {}: {}, {}",
            identity.instance, identity.host, health_badge.word, rotation.word
        );
        Self {
            token,
            updates,
            details,
            clock: timeline::clock(timeline::millis(now)),
            rendered_at: timestamp(now),
            identity,
            title,
            health: health_badge,
            rotation,
            causes: view
                .health
                .causes
                .iter()
                .map(|cause| cause.describe_for(audience))
                .collect(),
            probes: Probe::ALL
                .into_iter()
                .map(|probe| {
                    let answer = view.answer(probe);
                    ProbeRow {
                        path: probe.admin_path(),
                        badge: Badge {
                            word: answer.status,
                            class: if answer.passing { "ok" } else { "fail" },
                        },
                        condition: (answer.condition != Condition::Verdict
                            && answer.condition.as_str() != answer.status)
                            .then(|| answer.condition.as_str()),
                    }
                })
                .collect(),
            lifecycle: lifecycle(view, details),
            agents,
            drain: drain(&health.drain().progress()),
            checks: histories
                .iter()
                .map(|history| check(history, view, now, details))
                .collect(),
            groups: groups(view),
            fleet: fleet(health, view, details),
            flap_window_minutes: FLAP_WINDOW_MINUTES,
            width: timeline::WIDTH,
            height: timeline::HEIGHT,
            strip_y: timeline::STRIP_Y,
            strip_height: timeline::STRIP_HEIGHT,
        }
    }
}

/// Health as `/health` answers it: `unavailable` once stale, `draining` while draining.
fn health_badge(view: &View) -> Badge {
    let answer = view.answer(Probe::Health);
    match answer.condition {
        Condition::Draining => Badge {
            word: "draining",
            class: "warn",
        },
        Condition::Stale => status_badge(Status::Unavailable),
        Condition::Verdict
        | Condition::Unavailable
        | Condition::Held
        | Condition::Starting
        | Condition::Returning => status_badge(view.health.status),
    }
}

/// Whether the load balancers send traffic here: readiness's answer first (the agent says
/// `down` whenever readiness fails), then the weight the agents ask for.
fn rotation(view: &View, agents: &[AgentRow]) -> Rotation {
    let ready = view.answer(Probe::Ready);
    if !ready.passing {
        let (word, class) = match ready.condition {
            Condition::Draining => ("out of rotation", "warn"),
            Condition::Returning => ("out of rotation: returning", "warn"),
            Condition::Held => ("out of rotation: held", "warn"),
            Condition::Verdict
            | Condition::Stale
            | Condition::Unavailable
            | Condition::Starting => ("out of rotation", "fail"),
        };
        let why = match ready.condition {
            Condition::Returning => format!("/readiness answers 503: {}", returning(view)),
            Condition::Verdict => format!("/readiness answers 503 {}", ready.status),
            Condition::Draining
            | Condition::Stale
            | Condition::Unavailable
            | Condition::Held
            | Condition::Starting
                if ready.condition.as_str() != ready.status =>
            {
                format!(
                    "/readiness answers 503 {} ({})",
                    ready.status,
                    ready.condition.as_str()
                )
            }
            Condition::Draining
            | Condition::Stale
            | Condition::Unavailable
            | Condition::Held
            | Condition::Starting => format!("/readiness answers 503 {}", ready.status),
        };
        return Rotation {
            word: word.to_owned(),
            class,
            why: Some(why),
        };
    }
    match agents
        .iter()
        .find(|agent| agent.percent.is_some_and(|percent| percent < 100))
    {
        Some(agent) => Rotation {
            word: "in rotation, at a lowered weight".to_owned(),
            class: "warn",
            why: Some(format!("the HAProxy agent says `{}`", agent.line)),
        },
        None => Rotation {
            word: "in rotation".to_owned(),
            class: "ok",
            why: None,
        },
    }
}

/// A return under way, in words: when readiness passes again, and the delay drawn.
fn returning(view: &View) -> String {
    let returned = view.readiness.returned;
    let left = returned.at.map_or(Duration::ZERO, |at| {
        at.saturating_duration_since(crate::clock::now())
    });
    let at = SystemTime::now() + left;
    format!(
        "returning after an outage, it passes again at {} UTC (after a random delay of {} ms, so that the fleet does not return at once)",
        timeline::clock(timeline::millis(at)),
        returned.jitter.as_millis()
    )
}

/// What each HAProxy agent of the monitor tells HAProxy now: its own line, written by the
/// agent's own function (never decided here).
#[cfg(feature = "haproxy-agent")]
fn agents(health: &HealthHandle) -> Vec<AgentRow> {
    crate::haproxy::running::lines_now(health)
        .into_iter()
        .map(|agent| {
            let first = agent.line.split([' ', '#']).next().unwrap_or_default();
            let percent = agent
                .line
                .split(' ')
                .find_map(|word| word.strip_suffix('%'))
                .and_then(|percent| percent.parse::<u8>().ok());
            let class = match (first, percent) {
                ("up", Some(100)) => "ok",
                ("up" | "drain" | "maint", _) => "warn",
                _ => "fail",
            };
            AgentRow {
                addr: agent.local_addr.to_string(),
                percent,
                line: agent.line,
                class,
            }
        })
        .collect()
}

#[cfg(not(feature = "haproxy-agent"))]
fn agents(_: &HealthHandle) -> Vec<AgentRow> {
    Vec::new()
}

/// The drain in words, from its figures.
fn drain(progress: &DrainProgress) -> DrainView {
    let (phase, class) = match progress.phase {
        DrainPhase::Serving => ("not draining", "ok"),
        DrainPhase::Delay => (
            "in its delay: readiness answers 503, requests are served",
            "warn",
        ),
        DrainPhase::CloseWindow => (
            "in its close window: the long-lived connections are told to close, each at its turn",
            "warn",
        ),
        DrainPhase::Waiting => (
            "waiting for what is still in flight, until its timeout",
            "warn",
        ),
        DrainPhase::TimedOut => ("timed out with requests still in flight", "fail"),
        DrainPhase::Drained => ("drained: nothing was left in flight", "ok"),
    };
    let times = progress
        .times
        .map(|times| {
            [
                ("started", Some(times.started)),
                ("delay over", Some(times.delay_over)),
                ("close window over", Some(times.close_window_over)),
                ("timeout", Some(times.timeout)),
                ("ended", times.ended),
            ]
            .into_iter()
            .filter_map(|(what, at)| {
                let at = at?;
                Some((what, timeline::clock(timeline::millis(at)), timestamp(at)))
            })
            .collect()
        })
        .unwrap_or_default();
    DrainView {
        phase,
        class,
        times,
        in_flight: progress.in_flight,
        long_lived: by_name(&progress.long_lived),
        long_lived_open: progress.long_lived.iter().map(|(_, open)| open).sum(),
    }
}

fn lifecycle(view: &View, details: bool) -> Vec<Fact> {
    let (draining, draining_class) = yes_no(view.draining, "warn");
    let (held, held_class) = match &view.held {
        // The operator's words are details, as in every body.
        Some(reason) if details => (format!("yes: {reason}"), "warn"),
        Some(_) => ("yes".to_owned(), "warn"),
        None => ("no".to_owned(), "ok"),
    };
    let (started, started_class) = if view.started {
        ("yes".to_owned(), "ok")
    } else {
        ("no".to_owned(), "warn")
    };
    let (running, running_class) = if view.monitor_running {
        ("yes".to_owned(), "ok")
    } else {
        ("no".to_owned(), "fail")
    };
    vec![
        Fact {
            label: "draining",
            value: draining,
            class: draining_class,
        },
        Fact {
            label: "held",
            value: held,
            class: held_class,
        },
        Fact {
            label: "started",
            value: started,
            class: started_class,
        },
        Fact {
            label: "monitor running",
            value: running,
            class: running_class,
        },
    ]
}

fn check(history: &CheckHistory, view: &View, now: SystemTime, details: bool) -> CheckCard {
    let last = history.rounds.last();
    // A component's state is its hysteresis's (`/health` shows it); a database's its last
    // round's.
    let component = (history.kind == CheckKind::Component)
        .then(|| {
            view.health
                .components
                .iter()
                .find(|report| report.name == history.name)
        })
        .flatten();
    let badge = match (component, last) {
        (Some(report), _) => component_badge(report.status),
        (None, Some(round)) => check_badge(round.status),
        (None, None) => Badge {
            word: "unknown",
            class: "idle",
        },
    };
    let failing_since = history
        .transitions
        .last()
        .filter(|transition| transition.to != CheckStatus::Passed);
    CheckCard {
        name: history.name.to_string(),
        checked: history.kind.as_str(),
        critical: history.critical,
        badge,
        kind: last.and_then(|round| round.kind).map(|kind| kind.as_str()),
        cause: failing_since
            .and_then(|transition| transition.cause.as_deref())
            .filter(|_| details)
            .map(str::to_owned),
        since: history
            .transitions
            .last()
            .map(|transition| timeline::clock(timeline::millis(transition.at))),
        target: reported_target(history, view, component)
            .or_else(|| history.target.clone())
            .filter(|_| details)
            .map(|target| target.to_string()),
        flaps: history.flaps,
        timeline: timeline::timeline(&history.rounds, &history.transitions, now, details),
        transitions: history
            .transitions
            .iter()
            .rev()
            .map(|transition| TransitionRow {
                clock: timeline::clock(timeline::millis(transition.at)),
                at: timestamp(transition.at),
                from: transition
                    .from
                    .map_or_else(|| "first round".to_owned(), |from| from.to_string()),
                to: transition.to.as_str(),
                class: timeline::class(transition.to),
                kind: transition.kind.map(|kind| kind.as_str()),
                cause: transition
                    .cause
                    .as_deref()
                    .filter(|_| details)
                    .map(str::to_owned),
            })
            .collect(),
    }
}

/// The target the check's last outcome in the view names: the one a passing check reported,
/// else its own.
fn reported_target(
    history: &CheckHistory,
    view: &View,
    component: Option<&crate::verdict::ComponentReport>,
) -> Option<std::sync::Arc<str>> {
    match history.kind {
        CheckKind::Database => view
            .readiness
            .databases
            .iter()
            .find(|outcome| outcome.name == history.name)
            .and_then(|outcome| outcome.target.clone()),
        CheckKind::Component => component
            .and_then(|report| report.outcome.as_ref())
            .and_then(|outcome| outcome.target.clone()),
    }
}

fn groups(view: &View) -> Vec<GroupRow> {
    let readiness = view.answer(Probe::Ready).condition;
    view.readiness
        .groups
        .iter()
        .map(|group| {
            let answer = crate::view::reading::GroupAnswer::of(readiness, group);
            GroupRow {
                name: group.name.to_string(),
                badge: Badge {
                    word: answer.status,
                    class: if answer.passing { "ok" } else { "fail" },
                },
                members: group
                    .members
                    .iter()
                    .map(|member| {
                        let class = if member.passed { "ok" } else { "fail" };
                        (member.check.to_string(), member.state, class)
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(feature = "redis")]
fn fleet(health: &HealthHandle, view: &View, details: bool) -> Option<Fleet> {
    use crate::verdict::Standing;

    let (own, fraction, seen) = health.fleet_seen()?;
    let guard = view.readiness.fleet_guard.as_ref().map(|guard| {
        if details {
            guard.to_string()
        } else if guard.kept {
            "kept in rotation by the fleet guard".to_owned()
        } else {
            "out of rotation: the fleet guard keeps enough of the fleet in".to_owned()
        }
    });
    let Some(seen) = seen else {
        return Some(Fleet {
            summary:
                "the fleet guard is off: Redis does not answer, so readiness is this process's own"
                    .to_owned(),
            guard,
            members: Vec::new(),
        });
    };
    let ready = seen
        .members
        .iter()
        .filter(|member| member.standing == Standing::Ready)
        .count();
    let members = seen.members.len();
    let clock = timeline::clock(timeline::millis(seen.at));
    let percent = fraction * 100.0;
    Some(Fleet {
        summary: format!(
            "{members} processes of this configuration at {clock} UTC, {ready} ready on their own; the guard keeps {percent}% in rotation"
        ),
        guard,
        members: if details {
            seen.members
                .iter()
                .map(|member| {
                    let (word, class, cause) = match &member.standing {
                        Standing::Ready => ("ready", "ok", None),
                        Standing::Shared { cause } => {
                            ("out on a shared cause", "warn", Some(cause.to_string()))
                        }
                        Standing::Local => ("out on a cause of its own", "fail", None),
                        Standing::Returning => ("returning after an outage", "warn", None),
                    };
                    MemberRow {
                        id: member.id.to_string(),
                        own: member.id == own,
                        badge: Badge { word, class },
                        cause,
                    }
                })
                .collect()
        } else {
            Vec::new()
        },
    })
}

#[cfg(not(feature = "redis"))]
fn fleet(_: &HealthHandle, _: &View, _: bool) -> Option<Fleet> {
    None
}
