//! The edge of the request path, where the dialects add their words to an application's
//! response. The request path carries only what the reading decided (the process's
//! [`Intent`]); what a proxy is told of it is its dialect's.

use http::Response;

use crate::config::readers::Readers;
use crate::dialect::envoy;
use crate::monitor::HealthHandle;
use crate::view::Intent;

/// What an application request reads on its way in, decided once from the configuration:
/// the process's intent is read only when a dialect tells a proxy of it
/// ([`HealthConfig::envoy_immediate_fail`](crate::HealthConfig::envoy_immediate_fail)).
/// Otherwise a request pays one branch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Edge {
    reads_intent: bool,
}

impl Edge {
    pub(crate) fn new(readers: &Readers) -> Self {
        Self {
            reads_intent: readers.envoy_immediate_fail,
        }
    }

    /// The process's intent, as the request path carries it to the response.
    #[inline(always)]
    pub(crate) fn intent(self, handle: &HealthHandle) -> Intent {
        if self.reads_intent {
            handle.intent()
        } else {
            Intent::Serve
        }
    }
}

/// Adds the dialects' words for `intent` to an application's response.
#[inline(always)]
pub(crate) fn mark<B>(intent: Intent, response: &mut Response<B>) {
    if intent == Intent::Leave {
        mark_leaving(response);
    }
}

#[cold]
fn mark_leaving<B>(response: &mut Response<B>) {
    if let Some((name, value)) = envoy::on_application_response(Intent::Leave) {
        response.headers_mut().insert(name, value);
    }
}
