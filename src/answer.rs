//! Probe answers rendered ahead of time, and turning one into a response.
//!
//! Everything that can be computed before a probe arrives is: the status code, the header map
//! and the JSON bytes. Answering then clones a `HeaderMap` (its two allocations are the only
//! ones a GET probe costs) and two `Bytes` handles.

use std::sync::LazyLock;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode};

use crate::body::ProbeBody;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// One rendered answer.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    /// The body; when `tail` is set, the verdict's age goes between the two.
    head: Bytes,
    tail: Option<Bytes>,
    /// `Content-Length` for HEAD, when the length does not depend on the age.
    content_length: Option<HeaderValue>,
}

impl Answer {
    /// A JSON answer with `Cache-Control: no-store`.
    pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Self {
        Self::with_headers(status, json_headers(NO_STORE), Bytes::from(body), None)
    }

    /// A JSON answer whose body ends with the age of the verdict: `head` ends just before the
    /// number, `tail` follows it.
    pub(crate) fn json_with_age(status: StatusCode, head: Vec<u8>, tail: &'static [u8]) -> Self {
        Self::with_headers(
            status,
            json_headers(NO_STORE),
            Bytes::from(head),
            Some(Bytes::from_static(tail)),
        )
    }

    /// A fixed JSON answer: `Content-Type: application/json`, the given `Cache-Control`, and
    /// any extra headers.
    pub(crate) fn fixed(
        status: StatusCode,
        cache_control: &'static str,
        body: &'static [u8],
        extra: &[(HeaderName, HeaderValue)],
    ) -> Self {
        let mut headers = json_headers(HeaderValue::from_static(cache_control));
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        Self::with_headers(status, headers, Bytes::from_static(body), None)
    }

    fn with_headers(
        status: StatusCode,
        headers: HeaderMap,
        head: Bytes,
        tail: Option<Bytes>,
    ) -> Self {
        let content_length = tail.is_none().then(|| HeaderValue::from(head.len()));
        Self {
            status,
            headers,
            head,
            tail,
            content_length,
        }
    }

    /// The response for one request. `head_only` answers HEAD: the same status and headers
    /// (with the `Content-Length` the GET body would have), no body.
    pub(crate) fn respond(&self, head_only: bool, age_ms: u64) -> Response<ProbeBody> {
        self.respond_with(head_only, age_ms, None)
    }

    /// [`Answer::respond`] with one more header, such as a drain's `Retry-After`.
    pub(crate) fn respond_with(
        &self,
        head_only: bool,
        age_ms: u64,
        extra: Option<(HeaderName, &HeaderValue)>,
    ) -> Response<ProbeBody> {
        let body = ProbeBody::new(
            self.head.clone(),
            self.tail.as_ref().map(|_| age_ms),
            self.tail.clone().unwrap_or_default(),
        );
        let headers = if head_only || extra.is_some() {
            // Sized for what is added, so that adding does not grow it (more allocations).
            let mut headers = HeaderMap::with_capacity(self.headers.len() + 2);
            for (name, value) in &self.headers {
                headers.insert(name.clone(), value.clone());
            }
            if head_only {
                let length = self
                    .content_length
                    .clone()
                    .unwrap_or_else(|| HeaderValue::from(body.len()));
                headers.insert(header::CONTENT_LENGTH, length);
            }
            if let Some((name, value)) = extra {
                headers.insert(name, value.clone());
            }
            headers
        } else {
            self.headers.clone()
        };
        let body = if head_only { ProbeBody::empty() } else { body };
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        *response.headers_mut() = headers;
        response
    }
}

fn json_headers(cache_control: HeaderValue) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(2);
    headers.insert(header::CONTENT_TYPE, JSON);
    headers.insert(header::CACHE_CONTROL, cache_control);
    headers
}

/// `/health/live`: the process answers, so it is alive.
pub(crate) static LIVE: LazyLock<Answer> =
    LazyLock::new(|| Answer::fixed(StatusCode::OK, "no-store", br#"{"status":"alive"}"#, &[]));

/// `/health/ping`: the cheapest possible yes. Load balancers may cache it for a second.
pub(crate) static PING: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::OK,
        "max-age=1",
        br#"{"ping":"pong","status":"alive"}"#,
        &[],
    )
});

/// Any method but GET and HEAD on a probe path.
pub(crate) static METHOD_NOT_ALLOWED: LazyLock<Answer> = LazyLock::new(|| {
    Answer::fixed(
        StatusCode::METHOD_NOT_ALLOWED,
        "no-store",
        br#"{"error":"method not allowed","allow":["GET","HEAD"]}"#,
        &[(header::ALLOW, HeaderValue::from_static("GET, HEAD"))],
    )
});

/// How a request's method is answered on a probe path.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MethodKind {
    Get,
    Head,
    NotAllowed,
}

impl MethodKind {
    pub(crate) fn of(method: &Method) -> Self {
        if method == Method::GET {
            Self::Get
        } else if method == Method::HEAD {
            Self::Head
        } else {
            Self::NotAllowed
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn head_keeps_status_and_headers_and_drops_the_body() {
        let answer = Answer::json_with_age(StatusCode::OK, br#"{"age_ms":"#.to_vec(), b"}");
        let get = answer.respond(false, 1234);
        let head = answer.respond(true, 1234);
        assert_eq!(head.status(), get.status());
        assert_eq!(head.headers()[header::CONTENT_LENGTH], "15");
        assert_eq!(head.headers()[header::CONTENT_TYPE], "application/json");
        let get_body = get.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&get_body[..], br#"{"age_ms":1234}"#);
        assert!(
            head.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .is_empty()
        );
    }

    #[test]
    fn methods() {
        assert_eq!(MethodKind::of(&Method::GET), MethodKind::Get);
        assert_eq!(MethodKind::of(&Method::HEAD), MethodKind::Head);
        assert_eq!(MethodKind::of(&Method::POST), MethodKind::NotAllowed);
        assert_eq!(
            METHOD_NOT_ALLOWED.respond(false, 0).headers()[header::ALLOW],
            "GET, HEAD"
        );
    }
}
