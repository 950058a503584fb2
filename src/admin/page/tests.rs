//! The page rendered for each audience, its headers and its refusals. The browser's view of
//! it (the live DOM, scripts that must not run, the updates) is `tests/it/page.rs`.

use std::time::Duration;

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

/// The page's `<title>`.
fn title(page: &str) -> &str {
    let start = page.find("<title>").unwrap() + "<title>".len();
    &page[start..start + page[start..].find("</title>").unwrap()]
}

/// The text of the element whose `id` is `id` (its first text, up to the next tag).
fn by_id<'a>(page: &'a str, id: &str) -> Option<&'a str> {
    let at = page.find(&format!("id=\"{id}\""))?;
    let start = at + page[at..].find('>')? + 1;
    Some(&page[start..start + page[start..].find('<')?])
}

/// Issue 36 C: which process the page belongs to, at its top and in its title, the name set
/// by the application (escaped like every text) or the program's by default.
#[tokio::test]
async fn the_page_names_its_instance_host_process_version_and_uptime() {
    let health = test_monitor(config_with(FakeCheck::Ready).instance("chat <1.4.2>"));
    rounds(&health).await;
    let (_, page) = get(
        &state(&health, KeyDigests::default(), Details::Always),
        "/health/page",
        None,
    )
    .await;
    assert!(
        title(&page).starts_with("chat &#60;1.4.2&#62; on "),
        "{}",
        title(&page)
    );
    assert!(
        title(&page).ends_with(": healthy, in rotation"),
        "{}",
        title(&page)
    );
    assert!(page.contains("<span class=\"instance\">chat &#60;1.4.2&#62;</span>"));
    let pid = format!("pid <span class=\"pid\">{}</span>", std::process::id());
    assert!(page.contains(&pid), "{page}");
    let version = format!("tower-health {}", env!("CARGO_PKG_VERSION"));
    assert!(page.contains(&version), "{page}");
    assert!(page.contains("up <span class=\"uptime\">"), "{page}");

    // Unnamed: the program's name (this test binary's).
    let unnamed = test_monitor(config_with(FakeCheck::Ready));
    let (_, page) = get(
        &state(&unnamed, KeyDigests::default(), Details::Always),
        "/health/page",
        None,
    )
    .await;
    let program = std::env::current_exe().unwrap();
    let program = program.file_name().unwrap().to_string_lossy();
    assert!(
        title(&page).starts_with(&format!("{program} on ")),
        "{}",
        title(&page)
    );
}

/// Issue 36 C: a probe whose status says what decided it shows the word once (`draining`,
/// not `draining draining`), and the drain is shown with its phase, its times and what it
/// waits for, the long-lived connections by name.
#[tokio::test]
async fn a_drain_on_the_page_its_phase_times_and_connections_each_word_once() {
    let health = test_monitor(config_with(FakeCheck::Ready));
    rounds(&health).await;
    let state = state(&health, KeyDigests::default(), Details::Always);
    let (_, page) = get(&state, "/health/page", None).await;
    assert_eq!(by_id(&page, "drain-phase"), Some("not draining"));
    assert_eq!(by_id(&page, "in-flight"), Some("0"));
    assert!(!page.contains("id=\"drain-times\""), "{page}");

    let _chat = [
        health.drain().long_lived("/chat"),
        health.drain().long_lived("/chat"),
    ];
    let _events = health.drain().long_lived("/events");
    health.drain().start();
    let (_, page) = get(&state, "/health/page", None).await;
    assert!(
        page.contains(
            r#"<span class="path">/health</span> <span class="badge fail">draining</span></li>"#
        ),
        "{page}"
    );
    assert!(
        !page.contains("draining</span> <span class=\"why\">draining"),
        "{page}"
    );
    assert_eq!(
        by_id(&page, "drain-phase"),
        Some("in its delay: readiness answers 503, requests are served")
    );
    assert_eq!(by_id(&page, "in-flight"), Some("3"));
    assert_eq!(by_id(&page, "long-lived-open"), Some("3"));
    assert_eq!(by_id(&page, "long-lived"), Some("/chat: 2, /events: 1"));
    for what in ["started", "delay over", "close window over", "timeout"] {
        assert!(
            page.contains(&format!("<li>{what} <time datetime=")),
            "{what}: {page}"
        );
    }
    assert_eq!(by_id(&page, "rotation"), Some("out of rotation"));
    assert!(
        title(&page).ends_with(": draining, out of rotation"),
        "{}",
        title(&page)
    );
}

/// Issue 36 C: after an outage, while readiness still answers 503 `returning`, the headline
/// says so, with the return's end; the page is not all green.
#[tokio::test(start_paused = true)]
async fn a_return_is_not_all_green_and_says_when_it_ends() {
    use crate::test_helpers::FakeComponent;
    let gate = FakeComponent::new(FakeCheck::Ready);
    let config = config_with(FakeCheck::Ready)
        .debounce(Duration::from_millis(1))
        .return_jitter(Duration::from_secs(3600))
        .component(
            ComponentSpec::new("gate", gate.clone())
                .critical(false)
                .gates_readiness(true),
        );
    let health = test_monitor(config);
    rounds(&health).await;
    rounds(&health).await;
    // The component is checked at the health rounds' cadence (10 s by default).
    gate.set(FakeCheck::Refused);
    tokio::time::sleep(Duration::from_secs(11)).await;
    rounds(&health).await;
    rounds(&health).await;
    let failing = health.view();
    assert!(!failing.answer(crate::Probe::Ready).passing, "{failing:#?}");
    gate.set(FakeCheck::Ready);
    tokio::time::sleep(Duration::from_secs(11)).await;
    rounds(&health).await;
    rounds(&health).await;
    let view = health.view();
    assert_eq!(
        view.answer(crate::Probe::Ready).condition,
        crate::view::Condition::Returning,
        "{view:?}"
    );
    let (_, page) = get(
        &state(&health, KeyDigests::default(), Details::Always),
        "/health/page",
        None,
    )
    .await;
    assert_eq!(by_id(&page, "health"), Some("healthy"));
    assert_eq!(by_id(&page, "rotation"), Some("out of rotation: returning"));
    assert!(
        page.contains("class=\"badge warn\" id=\"rotation\""),
        "{page}"
    );
    let why = by_id(&page, "rotation-why").unwrap();
    assert!(
        why.starts_with("/readiness answers 503: returning after an outage, it passes again at ")
            && why.contains("UTC (after a random delay of "),
        "{why}"
    );
    assert!(
        title(&page).ends_with(": healthy, out of rotation: returning"),
        "{}",
        title(&page)
    );
}

/// Issue 36 C: what the HAProxy agent tells HAProxy, its own line (the agent's function, not
/// a second rule): during its slow start a lowered weight, which the headline says; once
/// the agent stops, nothing.
#[cfg(feature = "haproxy-agent")]
#[tokio::test]
async fn the_agent_s_line_and_weight_while_it_runs() {
    use crate::haproxy::{AgentConfig, AgentServer};
    use tokio::io::AsyncReadExt;

    let health = test_monitor(config_with(FakeCheck::Ready));
    rounds(&health).await;
    let agent = AgentServer::new(
        AgentConfig::new()
            .port(0)
            .slow_start(Duration::from_secs(3600)),
        &health,
    )
    .start()
    .await
    .unwrap();
    let state = state(&health, KeyDigests::default(), Details::Always);
    // What HAProxy reads from the agent's port, before and after the page (an hour's ramp
    // moves by 1% every 36 s: asked again if it moved in between).
    let read_line = || async {
        let mut line = String::new();
        tokio::net::TcpStream::connect(agent.local_addr())
            .await
            .unwrap()
            .read_to_string(&mut line)
            .await
            .unwrap();
        line.trim_end().to_owned()
    };
    let (line, page) = loop {
        let before = read_line().await;
        let (_, page) = get(&state, "/health/page", None).await;
        if read_line().await == before {
            break (before, page);
        }
    };
    let line = line.as_str();
    assert!(
        line.starts_with("up ready ") && line != "up ready 100%",
        "{line}"
    );
    let shown = format!(
        "says <span class=\"path agent-line\">{line}</span> <span class=\"badge warn\">weight {}</span>",
        line.trim_start_matches("up ready ")
    );
    assert!(page.contains(&shown), "{shown}\n{page}");
    assert!(page.contains(&agent.local_addr().to_string()), "{page}");
    assert_eq!(
        by_id(&page, "rotation"),
        Some("in rotation, at a lowered weight")
    );
    assert_eq!(
        by_id(&page, "rotation-why").map(|why| why.replace("&#96;", "`")),
        Some(format!("the HAProxy agent says `{line}`"))
    );

    agent.shutdown();
    agent.closed().await;
    let (_, page) = get(&state, "/health/page", None).await;
    assert!(!page.contains("HAProxy agent"), "{page}");
    assert_eq!(by_id(&page, "rotation"), Some("in rotation"));
}
