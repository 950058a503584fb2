use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;
use pin_project_lite::pin_project;

use super::DrainBody;
use super::admission::Admitted;
use crate::rendered::ProbeBody;

pin_project! {
    /// Response future of [`Drain`](super::Drain).
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Inner {
            #[pin]
            future: F,
            admitted: Option<Admitted>,
        },
        Rejected { response: Option<Response<ProbeBody>> },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn inner(future: F, admitted: Admitted) -> Self {
        Self {
            kind: Kind::Inner {
                future,
                admitted: Some(admitted),
            },
        }
    }

    pub(crate) fn rejected(response: Response<ProbeBody>) -> Self {
        Self {
            kind: Kind::Rejected {
                response: Some(response),
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<DrainBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner { future, admitted } => {
                let mut response = std::task::ready!(future.poll(cx))?;
                let admitted = admitted.take().expect("future polled after completion");
                let guard = admitted.respond(&mut response);
                Poll::Ready(Ok(response.map(|body| DrainBody::inner(body, guard))))
            }
            KindProj::Rejected { response } => {
                let response = response.take().expect("future polled after completion");
                Poll::Ready(Ok(response.map(DrainBody::rejected)))
            }
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Inner { .. } => "Inner",
            Kind::Rejected { .. } => "Rejected",
        };
        f.debug_struct("ResponseFuture")
            .field("kind", &kind)
            .finish()
    }
}
