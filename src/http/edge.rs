//! The edge of the request path, where the dialects add their words to an application's
//! response, and where load feedback counts it. The request path carries only what the
//! reading decided ([`Marks`]: the process's [`Intent`] and, with load feedback on, where the
//! request counts itself); what a proxy is told of it is its dialect's.
//!
//! Every application response the crate's layers see passes through [`mark`]: the inner
//! service's, a shed request's 503, a drain's refusal (the axum stack's here, a
//! [`Drain`](crate::drain::Drain) layer's as the inner service's response of the health
//! layer above it). So that is where a finished request and its status are counted; probes
//! never come here.

use http::{HeaderMap, HeaderValue, Response};

use crate::dialect::{envoy, orca};
use crate::load::Tally;
use crate::monitor::HealthHandle;
use crate::view::Intent;

/// What an application's response carries to its dialects' words and its count, as the
/// reading decided when the request came in: the process's intent (read only for Envoy's
/// immediate fail) and, only with load feedback on, the shard of the counts it adds to
/// (whose report the response carries). Small: it rides the request path by value.
#[derive(Clone, Debug)]
pub(crate) struct Marks {
    pub(crate) intent: Intent,
    pub(crate) load: Option<Tally>,
}

impl Marks {
    /// Nothing to add: to serve, no load report.
    pub(crate) const NONE: Self = Self {
        intent: Intent::Serve,
        load: None,
    };

    /// Whether a dialect has words to add (or a count to take).
    #[inline(always)]
    pub(crate) fn is_some(&self) -> bool {
        self.intent == Intent::Leave || self.load.is_some()
    }
}

/// What an application request reads on its way in, decided once from the configuration:
/// the process's intent only when a dialect tells a proxy of it
/// ([`HealthConfig::envoy_immediate_fail`](crate::HealthConfig::envoy_immediate_fail)),
/// the load estimate only when there is one
/// ([`HealthConfig::load_capacity`](crate::HealthConfig::load_capacity)). With both off,
/// the defaults, reading costs a request one branch, and [`Marks::NONE`] rides to the
/// response, where [`mark`] finds nothing to add.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Edge {
    /// Either of the two below: the one branch a request pays when both are off.
    reads: bool,
    reads_intent: bool,
    reads_load: bool,
}

impl Edge {
    pub(crate) fn new(handle: &HealthHandle) -> Self {
        let reads_intent = handle.readers().envoy_immediate_fail;
        let reads_load = handle.load().is_some();
        Self {
            reads: reads_intent || reads_load,
            reads_intent,
            reads_load,
        }
    }

    /// What the request path carries to the response.
    #[inline(always)]
    pub(crate) fn marks(self, handle: &HealthHandle) -> Marks {
        if self.reads {
            self.read(handle)
        } else {
            Marks::NONE
        }
    }

    /// Reads what the configuration asks for: the intent (a pointer load and a flag) and
    /// the shard of the load feedback's counts (a reference count on this thread's shard).
    #[inline]
    fn read(self, handle: &HealthHandle) -> Marks {
        Marks {
            intent: if self.reads_intent {
                handle.intent()
            } else {
                Intent::Serve
            },
            load: if self.reads_load {
                handle.tally()
            } else {
                None
            },
        }
    }
}

/// Adds the dialects' words for `marks` to an application's response, and counts it
/// finished with its status when load feedback is on. A gRPC response's load report goes in
/// its trailers, which its body has yet to send: returned, for the body to add.
#[inline(always)]
pub(crate) fn mark<B>(marks: Marks, response: &mut Response<B>) -> Option<Trailer> {
    if marks.intent == Intent::Leave {
        mark_leaving(response);
    }
    match marks.load {
        Some(tally) => report(tally, response),
        None => None,
    }
}

#[cold]
fn mark_leaving<B>(response: &mut Response<B>) {
    if let Some((name, value)) = envoy::on_application_response(Intent::Leave) {
        response.headers_mut().insert(name, value);
    }
}

/// Counts the response and gives it one ORCA report (`insert`: whatever the application set),
/// in the form its protocol reads: the binary one for gRPC (in the trailers, or in the one
/// header block of a trailers-only response), the `TEXT` one in the head of any other.
#[inline]
fn report<B>(tally: Tally, response: &mut Response<B>) -> Option<Trailer> {
    // A gRPC call's head says `200`; its status comes with its trailers.
    let status = response.status();
    let reports = tally.reports();
    let headers = response.headers_mut();
    if orca::is_grpc(headers) {
        let report = reports.binary.clone();
        drop(reports);
        tally.count(status);
        return match headers.get(&orca::GRPC_STATUS) {
            Some(status) => {
                if orca::is_server_error(status) {
                    tally.count_error();
                }
                headers.insert(orca::BINARY_HEADER, report);
                None
            }
            None => Some(Trailer { tally, report }),
        };
    }
    headers.insert(orca::HEADER, reports.text.clone());
    drop(reports);
    tally.count(status);
    None
}

/// A gRPC response's load report, for its body to add to the trailers, and its count, for
/// the status the trailers say.
#[derive(Debug)]
pub(crate) struct Trailer {
    tally: Tally,
    report: HeaderValue,
}

impl Trailer {
    /// Adds the report to `trailers`, and counts the call an error if their `grpc-status`
    /// says so.
    pub(crate) fn finish(self, trailers: &mut HeaderMap) {
        if trailers
            .get(&orca::GRPC_STATUS)
            .is_some_and(orca::is_server_error)
        {
            self.tally.count_error();
        }
        trailers.insert(orca::BINARY_HEADER, self.report);
    }
}
