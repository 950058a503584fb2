//! The response future of the probe-answering layers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;
use pin_project_lite::pin_project;

use crate::body::ResponseBody;
use crate::probe_response::ProbeResponse;

pin_project! {
    /// Response future of [`Health`](crate::health::Health) and [`Ping`](crate::ping::Ping):
    /// the inner service's future, or a probe's response that is ready at once (or, for
    /// `?nocache=true`, after a fresh computation).
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Inner { #[pin] future: F },
        Probe { response: ProbeResponse },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn inner(future: F) -> Self {
        Self {
            kind: Kind::Inner { future },
        }
    }

    pub(crate) fn probe(response: ProbeResponse) -> Self {
        Self {
            kind: Kind::Probe { response },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<ResponseBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner { future } => future
                .poll(cx)
                .map_ok(|response| response.map(ResponseBody::inner)),
            KindProj::Probe { response } => Pin::new(response)
                .poll(cx)
                .map(|response| Ok(response.map(ResponseBody::probe))),
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Inner { .. } => "Inner",
            Kind::Probe { .. } => "Probe",
        };
        f.debug_struct("ResponseFuture")
            .field("kind", &kind)
            .finish()
    }
}
