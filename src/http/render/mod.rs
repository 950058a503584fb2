//! Responses rendered ahead of time, and turning one into the response to a request.
//!
//! Everything that can be computed before a probe arrives is: the status code, the header map
//! and the JSON bytes. Building the response then clones a `HeaderMap` (its two allocations
//! are the only ones a GET probe costs) and two `Bytes` handles.

mod body;
pub(crate) mod fixed;
pub(crate) mod kube;
mod prerender;
#[cfg(test)]
mod schema_tests;
mod variants;
mod verdicts;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Response, StatusCode};

pub(crate) use self::body::ProbeBody;
pub(crate) use self::prerender::{attach, with_rendered};
pub(crate) use self::verdicts::{RenderedVerdict, render_health, render_pool, render_readiness};
use crate::http::request::BodyMode;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// One response rendered ahead of time.
#[derive(Clone, Debug)]
pub(crate) struct Rendered {
    status: StatusCode,
    headers: HeaderMap,
    /// The body, or for a response that carries the verdict's age, what comes before it.
    body: Bytes,
    /// Whether the body carries the verdict's age (its digits and
    /// [`AFTER_AGE`](body::AFTER_AGE) follow `body`).
    carries_age: bool,
    /// `Content-Length` for HEAD, when the length does not depend on the age.
    content_length: Option<HeaderValue>,
}

impl Rendered {
    /// A JSON response with `Cache-Control: no-store`.
    pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Self {
        Self::with_headers(status, json_headers(NO_STORE), Bytes::from(body), false)
    }

    /// A JSON response whose body ends with the age of the verdict: `head` ends just before
    /// the number, [`AFTER_AGE`](body::AFTER_AGE) follows it.
    pub(crate) fn json_with_age(status: StatusCode, head: Vec<u8>) -> Self {
        Self::with_headers(status, json_headers(NO_STORE), Bytes::from(head), true)
    }

    /// A fixed JSON response: `Content-Type: application/json`, the given `Cache-Control`,
    /// and any extra headers.
    pub(crate) fn fixed(
        status: StatusCode,
        cache_control: &'static str,
        body: &'static [u8],
        extra: &[(HeaderName, HeaderValue)],
    ) -> Self {
        Self::fixed_bytes(status, cache_control, Bytes::from_static(body), extra)
    }

    /// [`Rendered::fixed`] with a body built at run time.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) fn fixed_bytes(
        status: StatusCode,
        cache_control: &'static str,
        body: Bytes,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Self {
        let mut headers = json_headers(HeaderValue::from_static(cache_control));
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        Self::with_headers(status, headers, body, false)
    }

    /// A response of another content type than JSON (the metrics' text exposition), with
    /// `Cache-Control: no-store`.
    #[cfg(feature = "metrics")]
    pub(crate) fn with_content_type(
        status: StatusCode,
        content_type: &'static str,
        body: Bytes,
    ) -> Self {
        let mut headers = HeaderMap::with_capacity(2);
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CACHE_CONTROL, NO_STORE);
        Self::with_headers(status, headers, body, false)
    }

    /// A response of any content type, with `headers` (the operator's page's HTML, say).
    #[cfg(feature = "page")]
    pub(crate) fn with_headers_of(status: StatusCode, headers: HeaderMap, body: Bytes) -> Self {
        Self::with_headers(status, headers, body, false)
    }

    fn with_headers(
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        carries_age: bool,
    ) -> Self {
        let content_length = (!carries_age).then(|| HeaderValue::from(body.len()));
        Self {
            status,
            headers,
            body,
            carries_age,
            content_length,
        }
    }

    /// Adds `name: value` to the response's headers, rendered once.
    pub(crate) fn insert_header(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.insert(name, value);
    }

    /// Whether the body carries the verdict's age (so that a response needs it).
    pub(crate) fn has_age(&self) -> bool {
        self.carries_age
    }

    /// The status code this response answers with.
    #[cfg(test)]
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The body of a full response, as text.
    #[cfg(test)]
    pub(crate) async fn body_text(&self) -> String {
        use http_body_util::BodyExt;

        let body = self.response(BodyMode::Full).into_body().collect().await;
        String::from_utf8(body.unwrap().to_bytes().to_vec()).unwrap()
    }

    /// The response to one request, for a response with no age in its body.
    pub(crate) fn response(&self, mode: BodyMode) -> Response<ProbeBody> {
        self.response_aged(mode, 0, None)
    }

    /// The response to one request: `age_ms` goes into the body of a response rendered with
    /// [`Rendered::json_with_age`] (and is ignored otherwise), and `extra` (a drain's `Retry-After`, say) is added to its
    /// headers.
    pub(crate) fn response_aged(
        &self,
        mode: BodyMode,
        age_ms: u64,
        extra: Option<(HeaderName, &HeaderValue)>,
    ) -> Response<ProbeBody> {
        let body = ProbeBody::new(self.body.clone(), self.carries_age.then_some(age_ms));
        let head_only = mode == BodyMode::HeadOnly;
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

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn head_keeps_status_and_headers_and_drops_the_body() {
        let rendered = Rendered::json_with_age(StatusCode::OK, br#"{"_cache":{"age_ms":"#.to_vec());
        let get = rendered.response_aged(BodyMode::Full, 1234, None);
        let head = rendered.response_aged(BodyMode::HeadOnly, 1234, None);
        assert_eq!(head.status(), get.status());
        assert_eq!(head.headers()[header::CONTENT_LENGTH], "26");
        assert_eq!(head.headers()[header::CONTENT_TYPE], "application/json");
        let get_body = get.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&get_body[..], br#"{"_cache":{"age_ms":1234}}"#);
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
    fn an_extra_header_is_added() {
        let rendered = Rendered::json(StatusCode::SERVICE_UNAVAILABLE, b"{}".to_vec());
        let retry = HeaderValue::from_static("5");
        let response =
            rendered.response_aged(BodyMode::Full, 0, Some((header::RETRY_AFTER, &retry)));
        assert_eq!(response.headers()[header::RETRY_AFTER], "5");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
    }
}
