//! A probe's HTTP response, for every HTTP reader (the layers and the admin server): built
//! from the published verdicts' pre-rendered bytes at once, or after a fresh computation for
//! `?nocache=true`. The monitor publishes; it builds no response.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::Response;
use http::header::{self, HeaderValue};

use crate::monitor::HealthHandle;
use crate::probe::{BodyMode, Form, Freshness, Probe};
use crate::rendered::ProbeBody;
use crate::rendered::Rendered;
use crate::rendered::fixed::{LIVE, LIVE_CHECKS, NO_SUCH_GROUP, PING};
use crate::rendered::kube::Moment;
use crate::shutdown::DrainHandle;
use crate::verdict::Audience;
use crate::view::published::Published;
use crate::view::{Condition, Judged, judge};

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

    /// A response with a fixed body (one of [`crate::rendered::fixed`]).
    pub(crate) fn fixed(rendered: &Rendered, mode: BodyMode) -> Self {
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
        ProbeResponse::ready(self.group_answer(name, mode, audience, form))
    }
}

impl HealthHandle {
    fn group_answer(
        &self,
        name: &str,
        mode: BodyMode,
        audience: Audience,
        form: Form<'_>,
    ) -> Response<ProbeBody> {
        let state = self.state();
        let drain = state.drain.get();
        let draining = drain.is_some_and(DrainHandle::is_draining);
        let now = Instant::now();
        let published = state.readiness.load();
        let Some(group) = published.rendered().group(name) else {
            return NO_SUCH_GROUP.response(mode);
        };
        if form != Form::Json {
            let moment = Moment {
                draining,
                stale: published.is_stale(now),
            };
            return group.kube().response(moment, audience, form, mode);
        }
        let (condition, ..) = judge(Probe::Ready, &published, draining, now);
        let variants = group.for_audience(audience);
        match condition {
            Condition::Draining => {
                let retry_after = drain.map(DrainHandle::retry_after);
                let extra = retry_after.map(|value| (header::RETRY_AFTER, value));
                variants.draining.response_aged(mode, 0, extra)
            }
            Condition::Stale => variants.stale.response(mode),
            Condition::Held => variants.held.response(mode),
            Condition::Verdict | Condition::Unavailable | Condition::Starting => {
                variants.published.response(mode)
            }
        }
    }
}

/// A Kubernetes-style answer ([`crate::rendered::kube`]), from the published verdicts:
/// `?nocache` is for the JSON answers.
#[inline(never)]
fn kube_answer(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    audience: Audience,
    form: Form<'_>,
) -> Response<ProbeBody> {
    let state = health.state();
    let draining = state.drain.get().is_some_and(DrainHandle::is_draining);
    match probe {
        Probe::Live | Probe::Ping => LIVE_CHECKS.response(Moment::default(), audience, form, mode),
        Probe::Startup => (state.startup.kube()).response(Moment::default(), audience, form, mode),
        Probe::Ready => kube_of(&state.readiness.load(), draining, audience, form, mode),
        Probe::Health => kube_of(&state.health.load(), draining, audience, form, mode),
        Probe::Pool => kube_of(&state.pool.load(), draining, audience, form, mode),
    }
}

/// A verdict's Kubernetes-style answer at this moment (draining or not, stale or not).
fn kube_of<V>(
    published: &Published<V>,
    draining: bool,
    audience: Audience,
    form: Form<'_>,
    mode: BodyMode,
) -> Response<ProbeBody> {
    let moment = Moment {
        draining,
        stale: published.is_stale(Instant::now()),
    };
    published
        .rendered()
        .kube()
        .response(moment, audience, form, mode)
}

fn answer(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    freshness: Freshness,
    audience: Audience,
) -> ProbeResponse {
    let state = health.state();
    let drain = state.drain.get();
    let response = match probe {
        Probe::Live => LIVE.response(mode),
        Probe::Ping => PING.response(mode),
        Probe::Startup => state.startup.rendered().response(mode),
        Probe::Ready => respond(
            probe,
            &state.readiness.load(),
            drain,
            freshness,
            audience,
            mode,
        ),
        Probe::Health | Probe::Pool
            if freshness == Freshness::Bypass && !drain.is_some_and(DrainHandle::is_draining) =>
        {
            return fresh_response(health, probe, mode, audience);
        }
        Probe::Health => respond(
            probe,
            &state.health.load(),
            drain,
            freshness,
            audience,
            mode,
        ),
        Probe::Pool => respond(probe, &state.pool.load(), drain, freshness, audience, mode),
    };
    ProbeResponse::ready(response)
}

/// A fresh computation's response, for `?nocache=true` on health or pool.
fn fresh_response(
    health: &HealthHandle,
    probe: Probe,
    mode: BodyMode,
    audience: Audience,
) -> ProbeResponse {
    let state = Arc::clone(health.state());
    // The computation starts when the future is first polled, in the server's runtime.
    ProbeResponse::Fresh(Box::pin(async move {
        let drain = state.drain.get();
        match (state.fresh().fresh().await, probe) {
            (Some(fresh), Probe::Pool) => {
                respond(probe, &fresh.pool, drain, Freshness::Bypass, audience, mode)
            }
            (Some(fresh), _) => respond(
                probe,
                &fresh.health,
                drain,
                Freshness::Bypass,
                audience,
                mode,
            ),
            // The computation could not finish (runtime shutdown): serve what is
            // published, unmarked.
            (None, Probe::Pool) => respond(
                probe,
                &state.pool.load(),
                drain,
                Freshness::Published,
                audience,
                mode,
            ),
            (None, _) => respond(
                probe,
                &state.health.load(),
                drain,
                Freshness::Published,
                audience,
                mode,
            ),
        }
    }))
}

/// The response to `probe` from `published`, as [`decide`](crate::view::decide) answers it
/// now.
fn respond<V: Judged>(
    probe: Probe,
    published: &Published<V>,
    drain: Option<&DrainHandle>,
    freshness: Freshness,
    audience: Audience,
    mode: BodyMode,
) -> Response<ProbeBody> {
    let now = Instant::now();
    let draining = drain.is_some_and(DrainHandle::is_draining);
    let (condition, ..) = judge(probe, published, draining, now);
    let variant = Variant::of(condition, freshness, drain.map(DrainHandle::retry_after));
    let variants = published.rendered().for_audience(audience);
    let (rendered, retry_after) = match variant {
        Variant::Draining(retry_after) => (&variants.draining, Some(retry_after)),
        Variant::Stale => (&variants.stale, None),
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
}

impl<'a> Variant<'a> {
    /// The response for a decided `condition`; `retry_after` goes with a drain's.
    pub(crate) fn of(
        condition: Condition,
        freshness: Freshness,
        retry_after: Option<&'a HeaderValue>,
    ) -> Self {
        match (condition, freshness) {
            (Condition::Draining, _) => retry_after.map_or(Self::Published, Self::Draining),
            (Condition::Stale, _) => Self::Stale,
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
