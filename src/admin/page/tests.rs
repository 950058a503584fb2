//! The page rendered for each audience, its headers and its refusals. The browser's view of
//! it (the live DOM, scripts that must not run, the updates) is `tests/it/page.rs`.

use http_body_util::BodyExt;

use super::*;
use crate::access::KeyDigests;
use crate::check::{CheckError, CheckErrorKind, CheckReport};
use crate::component::{ComponentSpec, from_fn};
use crate::config::{Details, NoCache};
use crate::monitor::testing::{config_with, monitor as test_monitor, rounds};
use crate::test_helpers::FakeCheck;

const HOSTILE: &str = r#"<script>alert(1)</script>"><img src=x onerror=alert(2)>"#;
const VIEWER: &str = "viewer-key-0123456789";

/// A monitor whose component fails with [`HOSTILE`] as its error, and whose other component
/// passes naming [`HOSTILE`] as its target, after one round of each cadence.
async fn hostile() -> HealthHandle {
    let failing =
        from_fn(|| async { Err::<(), _>(CheckError::new(CheckErrorKind::Other, HOSTILE)) });
    let naming = from_fn(|| async { Ok::<_, CheckError>(CheckReport::default().target(HOSTILE)) });
    let config = config_with(FakeCheck::Refused)
        .component(ComponentSpec::new("upstream", failing))
        .component(ComponentSpec::new("named", naming));
    let health = test_monitor(config);
    rounds(&health).await;
    health.hold(HOSTILE);
    health
}

fn state(health: &HealthHandle, keys: KeyDigests, details: Details) -> AdminState {
    AdminState {
        health: health.clone(),
        keys,
        details,
        nocache: NoCache::Allowed,
        #[cfg(feature = "metrics")]
        metrics: crate::metrics::HealthMetrics::new(health),
        hosts: None,
        closing: tokio::sync::watch::Sender::new(false),
    }
}

async fn get(
    state: &AdminState,
    path: &str,
    authorization: Option<&str>,
) -> (Response<ProbeBody>, String) {
    let mut request = Request::get(path);
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    let request = request.body(()).unwrap();
    let response = state.handle(&request, &Arc::new(Activity::new())).await;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        Response::from_parts(parts, ProbeBody::empty()),
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

fn basic(key: &str) -> String {
    use base64::Engine as _;
    let credentials = format!("operator:{key}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    )
}

#[tokio::test]
async fn every_text_is_escaped_and_the_only_script_is_the_page_s_own() {
    let health = hostile().await;
    let (response, page) = get(
        &state(&health, KeyDigests::default(), Details::Always),
        "/health/page",
        None,
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{page}"
    );
    assert!(!page.contains(HOSTILE), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    // The error, the target and the hold's reason, each as text.
    assert!(
        page.matches("&#60;img src=x onerror=alert(2)&#62;").count() >= 3,
        "{page}"
    );
}

#[tokio::test]
async fn the_policy_allows_the_inline_style_and_script_by_their_hashes_and_nothing_else() {
    let health = hostile().await;
    let (response, page) = get(
        &state(&health, KeyDigests::default(), Details::Always),
        "/health/page",
        None,
    )
    .await;
    let headers = response.headers();
    assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(policy.starts_with("default-src 'none'; "), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    let inline = |open: &str, close: &str| {
        let start = page.find(open).unwrap() + open.len();
        let end = start + page[start..].find(close).unwrap();
        page[start..end].to_owned()
    };
    assert_eq!(inline("<script>", "</script>"), SCRIPT);
    assert_eq!(inline("<style>", "</style>"), STYLE);
    assert!(
        policy.contains(&format!("script-src {};", csp_hash(SCRIPT))),
        "{policy}"
    );
    assert!(
        policy.contains(&format!("style-src {};", csp_hash(STYLE))),
        "{policy}"
    );
}

#[tokio::test]
async fn never_shows_statuses_only() {
    let health = hostile().await;
    let (_, page) = get(
        &state(&health, KeyDigests::default(), Details::Never),
        "/health/page",
        None,
    )
    .await;
    assert!(page.contains("statuses only"), "{page}");
    // No error text, no target, no hold reason, no timing.
    assert!(!page.contains("onerror"), "{page}");
    assert!(!page.contains("Connection refused"), "{page}");
    assert!(!page.contains("class=\"latency\""), "{page}");
    assert!(!page.contains("slowest"), "{page}");
    assert!(!page.contains(" ms"), "{page}");
    // Names, statuses and categories are there.
    assert!(page.contains(">upstream<"), "{page}");
    assert!(page.contains(">refused<"), "{page}");
    assert!(page.contains("class=\"mark fail\""), "{page}");
}

#[tokio::test]
async fn without_a_key_a_basic_challenge_and_nothing_else() {
    let health = hostile().await;
    let keys = KeyDigests::new(Some(b"operator-key-0123456789"), Some(VIEWER.as_bytes()));
    let state = state(&health, keys, Details::Always);
    for (path, authorization) in [
        ("/health/page", None),
        ("/health/page/updates?after=0", None),
        ("/health/page", Some(basic("wrong-key-0123456789"))),
        ("/health/page", Some("Basic !!".to_owned())),
    ] {
        let (response, body) = get(&state, path, authorization.as_deref()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            r#"Basic realm="tower-health", charset="UTF-8""#
        );
        assert_eq!(body, "", "{path}");
    }
    let (response, page) = get(&state, "/health/page", Some(&basic(VIEWER))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        page.contains("Connection refused"),
        "the viewer sees the details"
    );
    let bearer = format!("Bearer {VIEWER}");
    let (response, _) = get(&state, "/health/page", Some(&bearer)).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a tool's Bearer key works too"
    );
}

#[tokio::test]
async fn an_update_answers_at_once_for_an_older_page_and_waits_for_a_change_otherwise() {
    let health = hostile().await;
    let state = state(&health, KeyDigests::default(), Details::Always);
    let (response, main) = get(&state, "/health/page/updates?after=0", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        main.starts_with("<main id=\"page\" data-token=\""),
        "{main}"
    );
    assert!(!main.contains("<script"), "{main}");
    let token = &main["<main id=\"page\" data-token=\"".len()..][..16];
    // The same page: the request waits for the next round.
    let request = Request::get(format!("/health/page/updates?after={token}"))
        .body(())
        .unwrap();
    let waiting = state.handle(&request, &Arc::new(Activity::new()));
    let round = async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        rounds(&health).await;
    };
    let (response, ()) = tokio::join!(waiting, round);
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!body.windows(16).any(|window| window == token.as_bytes()));
    // A server that closes answers the waiting request at once.
    let (_, main) = get(&state, "/health/page/updates?after=0", None).await;
    let token = &main["<main id=\"page\" data-token=\"".len()..][..16];
    let request = Request::get(format!("/health/page/updates?after={token}"))
        .body(())
        .unwrap();
    let waiting = state.handle(&request, &Arc::new(Activity::new()));
    state.closing.send_replace(true);
    assert_eq!(waiting.await.status(), StatusCode::NO_CONTENT);
}
