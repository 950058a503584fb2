//! Answering one admin request: request form, allowlist, route, method, authentication, then
//! the same published responses the layers serve.

use std::sync::Arc;

use http::{Request, Response};

use super::fixed::{ADMIN_FORBIDDEN, ADMIN_INVALID_KEY, ADMIN_MISSING_KEY, ADMIN_WRONG_SCHEME};
use super::route::{Needs, Route};
use super::state::AdminState;
use super::strict;
use crate::access::{Denied, Role};
use crate::config::Details;
use crate::http::render::ProbeBody;
use crate::http::render::fixed::METHOD_NOT_ALLOWED;
use crate::http::request::{self, BodyMode, Form, Freshness};
use crate::http::{ProbeResponse, Respond};
use crate::side_port::Activity;

impl AdminState {
    /// The answer to `request`, on a connection whose `activity` the answer tells when it
    /// waits for a change rather than being made (the page's updates).
    pub(crate) fn handle<B>(
        &self,
        request: &Request<B>,
        #[cfg_attr(
            not(feature = "page"),
            allow(
                unused_variables,
                reason = "the page's updates are the only requests that wait"
            )
        )]
        activity: &Arc<Activity>,
    ) -> ProbeResponse {
        if let Some(refusal) = strict::refusal(request) {
            return ProbeResponse::fixed(refusal, BodyMode::Full);
        }
        let headers = request.headers();
        if self
            .hosts
            .as_ref()
            .is_some_and(|hosts| !hosts.allows(headers))
        {
            return ProbeResponse::fixed(&ADMIN_FORBIDDEN, BodyMode::Full);
        }
        let Some(route) = Route::from_path(request.uri().path()) else {
            let not_found = super::route::not_found_for(request.uri().path());
            return ProbeResponse::fixed(not_found, BodyMode::Full);
        };
        let target = match route {
            Route::Probe(target) => target,
            Route::Control(control) => return control.respond(request, &self.keys, &self.health),
            Route::History => return self.history(request),
            #[cfg(feature = "page")]
            Route::Page(path) => return super::page::respond(self, request, path, activity),
            #[cfg(feature = "metrics")]
            Route::Metrics => return self.metrics(request),
        };
        let Some(mode) = BodyMode::of(request.method()) else {
            return ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full);
        };
        let probe = target.probe;
        let query = request.uri().query();
        let wants_nocache = probe.takes_nocache() && request::wants_nocache(query);
        let role = if self.keys.enabled() && (route.needs() != Needs::Nothing || wants_nocache) {
            match self.keys.role(headers) {
                Ok(role) => role,
                Err(denied) => return ProbeResponse::ready(unauthorized(denied)),
            }
        } else if self.keys.enabled() && probe.has_details() && self.details == Details::Authorized
        {
            // Details are a bonus here, not a gate: no key, or a wrong one, gets the short
            // form rather than a 401.
            self.keys.role(headers).unwrap_or(Role::Anonymous)
        } else {
            Role::Anonymous
        };
        let bypass = wants_nocache
            && crate::access::may_bypass(self.nocache, self.keys.enabled(), role >= Role::Viewer);
        let freshness = if bypass {
            Freshness::Bypass
        } else {
            Freshness::Published
        };
        let audience = crate::access::audience(self.details, role >= Role::Viewer);
        let form = Form::of(target, query);
        match target.group {
            Some(name) => self.health.group_response(name, mode, audience, form),
            None => self
                .health
                .probe_response(probe, mode, freshness, audience, form),
        }
    }
}

impl AdminState {
    /// `GET /metrics`: the exposition, for the viewer role once keys are set.
    #[cfg(feature = "metrics")]
    fn metrics<B>(&self, request: &Request<B>) -> ProbeResponse {
        let Some(mode) = BodyMode::of(request.method()) else {
            return ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full);
        };
        if let Err(denied) = self.viewer(request) {
            return ProbeResponse::ready(unauthorized(denied));
        }
        ProbeResponse::ready(self.metrics.response(mode))
    }

    /// `GET /health/history`: every check's history as JSON, for the viewer role once keys
    /// are set, at this server's detail level.
    fn history<B>(&self, request: &Request<B>) -> ProbeResponse {
        let Some(mode) = BodyMode::of(request.method()) else {
            return ProbeResponse::fixed(&METHOD_NOT_ALLOWED, BodyMode::Full);
        };
        let role = match self.viewer(request) {
            Ok(role) => role,
            Err(denied) => return ProbeResponse::ready(unauthorized(denied)),
        };
        let audience = crate::access::audience(self.details, role >= Role::Viewer);
        let histories = self.health.histories();
        ProbeResponse::fixed(&super::history::response(&histories, audience), mode)
    }

    /// The role of a request for a path that needs the viewer role: none needed while no key
    /// is configured; else the viewer or operator key, or why not (answered with
    /// [`unauthorized`]).
    fn viewer<B>(&self, request: &Request<B>) -> Result<Role, Denied> {
        if !self.keys.enabled() {
            return Ok(Role::Anonymous);
        }
        match self.keys.role(request.headers())? {
            role if role >= Role::Viewer => Ok(role),
            _ => Err(Denied::Invalid),
        }
    }
}

fn unauthorized(denied: Denied) -> Response<ProbeBody> {
    match denied {
        Denied::Missing => ADMIN_MISSING_KEY.response(BodyMode::Full),
        Denied::Scheme => ADMIN_WRONG_SCHEME.response(BodyMode::Full),
        Denied::Malformed | Denied::Invalid => ADMIN_INVALID_KEY.response(BodyMode::Full),
    }
}
