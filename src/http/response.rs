//! A probe's HTTP response, for every HTTP reader (the layers and the admin server): built
//! from the published verdicts' pre-rendered bytes at once, or after a fresh computation for
//! `?nocache=true`. The monitor publishes; it builds no response.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::Response;
use http::header::{self, HeaderValue};

use super::render::fixed::{LIVE, LIVE_CHECKS, NO_SUCH_GROUP, PING, startup, startup_kube};
use super::render::kube::KubeAnswers;
use super::render::{ProbeBody, with_rendered};
use crate::dialect::kube::Moment;
use crate::http::request::{BodyMode, Form, Freshness};
use crate::monitor::HealthHandle;
use crate::probe::Probe;
use crate::verdict::Audience;
use crate::view::{Condition, PublishedVerdict, Reads};

/// A fresh computation's response. Boxed: the bypass path is rare and may wait for the
/// database, unlike every other probe.
pub(crate) type FreshFuture = Pin<Box<dyn Future<Output = Response<ProbeBody>> + Send>>;

/// The response to one probe request.
pub(crate) enum ProbeResponse {
    Ready(Option<Response<ProbeBody>>),
    Fresh(FreshFuture),
}

impl ProbeResponse {
    pub(crate) fn ready(response: Response<ProbeBody>) -> Self {
        Self::Ready(Some(response))
    }

    /// A response with a fixed body (one of [`crate::http::render::fixed`]).
    pub(crate) fn fixed(rendered: &super::render::Rendered, mode: BodyMode) -> Self {
        Self::ready(rendered.response(mode))
    }
}

impl Future for ProbeResponse {
    type Output = Response<ProbeBody>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Self::Ready(response) => {
                Poll::Ready(response.take().expect("future polled after completion"))
            }
            Self::Fresh(future) => future.as_mut().poll(cx),
        }
    }
}

/// The HTTP answers of a monitor's handle: what the layers and the admin server serve.
pub(crate) trait Respond {
    /// The response to `probe` from the published verdicts, in `form`. Everything but a
    /// cache bypass is a pointer load and a response built from pre-rendered parts: no lock,
    /// no I/O, no JSON encoding, no await (`?exclude` and a check's own path write a few
    /// lines of text).
    fn probe_response(
        &self,
        probe: Probe,
        mode: BodyMode,
        freshness: Freshness,
        audience: Audience,
        form: Form<'_>,
    ) -> ProbeResponse;

    /// The response of the health group `name`, judged as readiness is: the group's own
    /// answer, or 503 while held, draining or stale; 404 for a name that is no group.
    fn group_response(
        &self,
        name: &str,
        mode: BodyMode,
        audience: Audience,
        form: Form<'_>,
    ) -> ProbeResponse;
}

impl Respond for HealthHandle {
    fn probe_response(
        &self,
        probe: Probe,
        mode: BodyMode,
        freshness: Freshness,
        audience: Audience,
        form: Form<'_>,
    ) -> ProbeResponse {
        if form == Form::Json {
            answer(self, probe, mode, freshness, audience)
        } else {
            ProbeResponse::ready(kube_answer(self, probe, mode, audience, form))
        }
    }

    fn group_response(
        &self,
        name: &str,
        mode: BodyMode,
        audience: Audience,
        form: Form<'_>,
    ) -> ProbeResponse {
        ProbeResponse::ready(group_answer(self, name, mode, audience, form))
    }
}

/// A health group's answer: its rendered responses, picked by the group's answer in the one
/// reading ([`GroupAnswer`](crate::view::GroupAnswer)).
fn group_answer(
    health: &HealthHandle,
    name: &str,
    mode: BodyMode,
    audience: Audience,
    form: Form<'_>,
) -> Response<ProbeBody> {
    let judgement = health.judge(Probe::Ready);
    let (Reads::Readiness(published), Some((_, answer))) = (&judgement.read, judgement.group(name))
    else {
        return NO_SUCH_GROUP.response(mode);
    };
    with_rendered(health, &***published, |rendered| {
        let Some(group) = rendered.group(name) else {
            return NO_SUCH_GROUP.response(mode);
        };
        if form != Form::Json {
            // A group answers its own checks while readiness returns.
            let moment = Moment {
                draining: health.drain().is_draining(),
                stale: published.is_stale(judgement.now),
                returning: false,
            };
            return group
                .kube()
                .response(moment, answer.passing, audience, form, mode);
        }
        let variants = group.for_audience(audience);
        match answer.condition {
            Condition::Draining => {
                let extra = Some((header::RETRY_AFTER, health.drain().retry_after()));
                variants.draining.response_aged(mode, 0, extra)
            }
            Condition::Stale => variants.stale.response(mode),
            Condition::Held => variants.held.response(mode),
            Condition::Verdict
            | Condition::Unavailable
            | Condition::Starting
            | Condition::Returning => variants.published.response(mode),
        }
    })
}

/// A Kubernetes-style answer ([`crate::http::render::kube`]), from the published verdicts:
/// `?nocache` is for the JSON answers.
#[inline(never)]
fn kube_answer(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    audience: Audience,
    form: Form<'_>,
) -> Response<ProbeBody> {
    let judgement = health.judge(probe);
    let moment = |stale: bool| Moment {
        draining: health.drain().is_draining(),
        stale,
        returning: judgement.condition == Condition::Returning,
    };
    let passing = judgement.passing;
    let respond = |kube: &KubeAnswers, moment| kube.response(moment, passing, audience, form, mode);
    let now = judgement.now;
    match (&judgement.read, judgement.read.verdict()) {
        (_, Some(published)) => with_rendered(health, published, |rendered| {
            respond(rendered.kube(), moment(published.is_stale(now)))
        }),
        (Reads::Start, None) => respond(startup_kube(health.startup_phase()), Moment::default()),
        (_, None) => respond(&LIVE_CHECKS, Moment::default()),
    }
}

fn answer(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    freshness: Freshness,
    audience: Audience,
) -> ProbeResponse {
    let judgement = health.judge(probe);
    let (condition, now) = (judgement.condition, judgement.now);
    ProbeResponse::ready(match &judgement.read {
        Reads::Nothing if probe == Probe::Ping => PING.response(mode),
        Reads::Nothing => LIVE.response(mode),
        Reads::Start => startup(health.startup_phase()).response(mode),
        Reads::Health(_) | Reads::Pool(_)
            if freshness == Freshness::Bypass && condition != Condition::Draining =>
        {
            return fresh_response(health, probe, mode, audience);
        }
        read => {
            let published = read
                .verdict()
                .expect("readiness, health and pool read a verdict");
            respond(published, health, condition, now, freshness, audience, mode)
        }
    })
}

/// A fresh computation's response, for `?nocache=true` on health or pool: its verdicts
/// judged by the same rule as the published ones.
fn fresh_response(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    audience: Audience,
) -> ProbeResponse {
    let health = health.clone();
    // The computation starts when the future is first polled, in the server's runtime.
    ProbeResponse::Fresh(Box::pin(async move {
        let Some(fresh) = health.fresh().fresh().await else {
            // The computation could not finish (runtime shutdown): serve what is published,
            // unmarked.
            return match answer(&health, probe, mode, Freshness::Published, audience) {
                ProbeResponse::Ready(Some(response)) => response,
                ProbeResponse::Ready(None) | ProbeResponse::Fresh(_) => {
                    unreachable!("a published answer is ready at once")
                }
            };
        };
        let published: &dyn PublishedVerdict = match probe {
            Probe::Pool => &*fresh.pool,
            _ => &*fresh.health,
        };
        let now = crate::clock::now();
        let (condition, ..) = published.answer(probe, health.drain().is_draining(), now);
        respond(
            published,
            &health,
            condition,
            now,
            Freshness::Bypass,
            audience,
            mode,
        )
    }))
}

/// The response to a probe whose answer `condition` decided at `now`, from `published`: its
/// rendered variant for that condition, `Retry-After` with a drain's, its age in the bodies
/// that carry one.
fn respond(
    published: &dyn PublishedVerdict,
    health: &HealthHandle,
    condition: Condition,
    now: Instant,
    freshness: Freshness,
    audience: Audience,
    mode: BodyMode,
) -> Response<ProbeBody> {
    let variant = Variant::of(condition, freshness, health.drain().retry_after());
    with_rendered(health, published, |rendered| {
        let variants = rendered.for_audience(audience);
        let (rendered, retry_after) = match variant {
            Variant::Draining(retry_after) => (&variants.draining, Some(retry_after)),
            Variant::Stale => (&variants.stale, None),
            // Readiness's alone has one: the judgement says `Returning` of readiness only.
            Variant::Returning => (variants.returning.as_ref().unwrap_or(&variants.stale), None),
            Variant::Bypassed => (&variants.bypassed, None),
            Variant::Published => (&variants.published, None),
        };
        let extra = retry_after.map(|value| (header::RETRY_AFTER, value));
        let age_ms = if rendered.has_age() {
            u64::try_from(published.age(now).as_millis()).unwrap_or(u64::MAX)
        } else {
            0
        };
        rendered.response_aged(mode, age_ms, extra)
    })
}

/// Which of a verdict's rendered responses a request gets: what [`decide`](crate::view)
/// concluded, and whether the verdict is a bypass's.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Variant<'a> {
    /// The published verdict.
    Published,
    /// A fresh computation's verdict, for `?nocache=true`.
    Bypassed,
    /// The server is draining; the response carries this `Retry-After`.
    Draining(&'a HeaderValue),
    /// The verdict is older than its staleness bound.
    Stale,
    /// Readiness is on its way back after an outage (the return's jitter).
    Returning,
}

impl<'a> Variant<'a> {
    /// The response for a decided `condition`; `retry_after` is the drain's.
    pub(crate) fn of(
        condition: Condition,
        freshness: Freshness,
        retry_after: &'a HeaderValue,
    ) -> Self {
        match (condition, freshness) {
            (Condition::Draining, _) => Self::Draining(retry_after),
            (Condition::Stale, _) => Self::Stale,
            (Condition::Returning, _) => Self::Returning,
            (
                Condition::Verdict | Condition::Held | Condition::Unavailable | Condition::Starting,
                Freshness::Published,
            ) => Self::Published,
            (
                Condition::Verdict | Condition::Held | Condition::Unavailable | Condition::Starting,
                Freshness::Bypass,
            ) => Self::Bypassed,
        }
    }
}
