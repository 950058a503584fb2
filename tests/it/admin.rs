//! The admin server over real sockets: paths and methods, keys, safe binding, the Host and
//! Origin allowlist, strict request targets, the drain, and clients that are slow, silent, too
//! many or never read.

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use support::raw::RawConnection;
use support::slow_reader::SlowReader;
use support::{eventually, first_rounds};
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::side_port::{SidePortError, SidePortHandle};
use tower_health::{DrainConfig, HealthConfig, HealthHandle, HealthMonitor};

const OPERATOR: &str = "operator-key-0123456789abcdef";
const VIEWER: &str = "viewer-key-0123456789abcdef";

async fn monitor() -> HealthHandle {
    monitor_with(HealthConfig::new()).await
}

async fn monitor_with(config: HealthConfig) -> HealthHandle {
    let health =
        HealthMonitor::spawn(config.readiness_interval(Duration::from_millis(100))).unwrap();
    first_rounds(&health).await;
    health
}

async fn start(config: AdminConfig) -> SidePortHandle {
    AdminServer::new(config.port(0), &monitor().await)
        .start()
        .await
        .unwrap()
}

fn keyed() -> AdminConfig {
    AdminConfig::new()
        .operator_key(OPERATOR)
        .readonly_key(VIEWER)
}

#[tokio::test]
async fn every_path_and_method_without_keys() {
    let admin = start(AdminConfig::new()).await;
    let mut connection = RawConnection::open(admin.local_addr()).await;
    // No database configured: ready 200, health and pool 503 (the documented answers).
    for (path, status, key, value) in [
        ("/health", 503, "status", "unhealthy"),
        ("/liveness", 200, "status", "alive"),
        ("/readiness", 200, "status", "ready"),
        ("/health/pool", 503, "status", "degraded"),
        ("/health/ping", 200, "ping", "pong"),
        ("/liveness/", 200, "status", "alive"),
    ] {
        // One keep-alive connection for all of them.
        let response = connection.get(path, &[]).await;
        assert_eq!(response.status, status, "{path}");
        assert_eq!(response.json()[key], value, "{path}");
        assert_eq!(
            response.header("content-type"),
            Some("application/json"),
            "{path}"
        );
        let head = connection.request("HEAD", path, &[]).await;
        assert_eq!(head.status, status, "HEAD {path}");
        for method in ["POST", "PUT", "DELETE"] {
            let response = connection
                .request(method, path, &[b"Content-Length: 0"])
                .await;
            assert_eq!(response.status, 405, "{method} {path}");
            assert_eq!(response.header("allow"), Some("GET, HEAD"));
        }
    }
    for path in [
        "/",
        "/health/live",
        "/health/ready",
        // `/metrics` is served with the `metrics` feature (tests/it/metrics.rs).
        "/metrics/x",
        "/liveness/x",
    ] {
        let response = connection.get(path, &[]).await;
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.json()["error"], "not found");
    }
    let fresh = connection.get("/health?nocache=true", &[]).await;
    assert_eq!(
        fresh.json()["_cache"]["hit"],
        "bypassed",
        "open server, open bypass"
    );
}

#[tokio::test]
async fn health_needs_a_key_once_one_is_configured() {
    let admin = start(keyed()).await;
    let addr = admin.local_addr();
    let get = |path: &'static str, header: Vec<u8>| async move {
        let mut connection = RawConnection::open(addr).await;
        let headers: Vec<&[u8]> = if header.is_empty() {
            vec![]
        } else {
            vec![&header]
        };
        connection.get(path, &headers).await
    };

    let missing = get("/health", vec![]).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate"),
        Some(r#"Bearer realm="tower-health""#)
    );
    for header in [
        format!("Authorization: Bearer {OPERATOR}x"),
        "Authorization: Bearer wrong-key-0123456789abcdef".to_owned(),
        "Authorization: Bearer".to_owned(),
        "Authorization: Bearer a b".to_owned(),
        "X-Baldur-Admin-Key: nope-nope-nope-nope".to_owned(),
    ] {
        let response = get("/health", header.clone().into_bytes()).await;
        assert_eq!(response.status, 401, "{header}");
        let challenge = response.header("www-authenticate").unwrap();
        assert!(challenge.contains("invalid_token"), "{header}: {challenge}");
        assert!(!response.body.contains(OPERATOR), "{}", response.body);
    }
    // Not a key's form: another scheme, or a key without its scheme. The answer says which
    // form is read rather than blaming the key.
    for header in [
        "Authorization: Basic b3BlcmF0b3I6cGFzc3dvcmQ=".to_owned(),
        format!("Authorization: {OPERATOR}"),
    ] {
        let response = get("/health", header.clone().into_bytes()).await;
        assert_eq!(response.status, 401, "{header}");
        let challenge = response.header("www-authenticate").unwrap();
        assert!(
            challenge.contains("invalid_request"),
            "{header}: {challenge}"
        );
        assert!(
            response
                .body
                .contains("takes the key as Authorization: Bearer <key>"),
            "{header}: {}",
            response.body
        );
        assert!(!response.body.contains(OPERATOR), "{}", response.body);
    }
    let mut invalid_bytes = b"Authorization: Bearer ".to_vec();
    invalid_bytes.extend_from_slice(b"\xff\xfe\xfd-0123456789abcdef");
    assert_eq!(get("/health", invalid_bytes).await.status, 401);

    for header in [
        format!("Authorization: Bearer {VIEWER}"),
        format!("Authorization: bearer {OPERATOR}"),
        format!("X-Baldur-Admin-Key: {VIEWER}"),
        format!("X-Baldur-Admin-Key: {OPERATOR}"),
    ] {
        let response = get("/health", header.clone().into_bytes()).await;
        assert_eq!(
            response.status, 503,
            "{header}: no database configured, but authorized"
        );
        assert_eq!(response.json()["status"], "unhealthy", "{header}");
    }

    // The rest stays public, unless it asks to bypass the cache.
    for path in ["/liveness", "/readiness", "/health/ping", "/health/pool"] {
        assert_ne!(get(path, vec![]).await.status, 401, "{path}");
    }
    assert_eq!(get("/health/pool?nocache=true", vec![]).await.status, 401);
    let viewer = format!("Authorization: Bearer {VIEWER}").into_bytes();
    let fresh = get("/health/pool?nocache=true", viewer).await;
    assert_eq!(fresh.json()["_cache"]["hit"], "bypassed");
}

#[tokio::test]
async fn a_misspelt_key_variable_stops_the_admin_server_from_starting_keyless() {
    // `from_vars` reads as `from_env` does, from the given variables instead of the process's.
    for (misspelt, intended) in [
        ("TOWER_HEALTH_ADMIN_KYE", "TOWER_HEALTH_ADMIN_KEY"),
        ("BALDUR_ADMIN_KYE", "BALDUR_ADMIN_KEY"),
    ] {
        let error =
            AdminConfig::from_vars([("TOWER_HEALTH_ADMIN_PORT", "0"), (misspelt, OPERATOR)])
                .unwrap_err();
        assert_eq!(error.variable(), misspelt, "{error}");
        assert!(
            error
                .reason()
                .contains(&format!("did you mean {intended}?")),
            "{error}"
        );
        assert!(!error.to_string().contains(OPERATOR), "{error}");
    }
    // Spelt right, the same variables start a server that wants the key.
    let config = AdminConfig::from_vars([
        ("TOWER_HEALTH_ADMIN_PORT", "0"),
        ("TOWER_HEALTH_ADMIN_KEY", OPERATOR),
    ])
    .unwrap();
    let admin = AdminServer::new(config, &monitor().await)
        .start()
        .await
        .unwrap();
    let mut connection = RawConnection::open(admin.local_addr()).await;
    assert_eq!(connection.get("/health", &[]).await.status, 401);
}

#[tokio::test]
async fn very_long_headers_are_refused_without_harm() {
    let admin = start(keyed()).await;
    let mut long = b"Authorization: Bearer ".to_vec();
    long.extend(std::iter::repeat_n(b'a', 64 * 1024));
    let mut connection = RawConnection::open(admin.local_addr()).await;
    connection
        .send_raw(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        .await;
    connection.send_raw(&long).await;
    connection.send_raw(b"\r\n\r\n").await;
    let response = connection
        .response(false)
        .await
        .expect("an answer, not a dropped connection");
    assert_eq!(response.status, 431);
    let mut fresh = RawConnection::open(admin.local_addr()).await;
    assert_eq!(fresh.get("/liveness", &[]).await.status, 200);
}

#[tokio::test]
async fn a_non_loopback_bind_needs_an_operator_key() {
    let health = monitor().await;
    let any = IpAddr::from([0, 0, 0, 0]);
    let refused = AdminServer::new(AdminConfig::new().bind(any).port(0), &health)
        .start()
        .await
        .unwrap_err();
    let SidePortError::Config(error) = &refused else {
        panic!("{refused}")
    };
    assert_eq!(error.variable(), "AdminConfig::bind");
    assert!(refused.to_string().contains("operator key"), "{refused}");

    let admin = AdminServer::new(
        AdminConfig::new().bind(any).port(0).operator_key(OPERATOR),
        &health,
    )
    .start()
    .await
    .unwrap();
    // Not a loopback bind: no Host allowlist, and the key still guards /health.
    let mut connection =
        RawConnection::open(([127, 0, 0, 1], admin.local_addr().port()).into()).await;
    assert_eq!(
        connection
            .get("/liveness", &[b"Host: pod-10-0-0-7.internal:9090"])
            .await
            .status,
        200
    );
    assert_eq!(connection.get("/health", &[]).await.status, 401);
}

#[tokio::test]
async fn host_and_origin_must_name_the_server_on_loopback() {
    let admin = start(AdminConfig::new().allowed_host("admin.internal")).await;
    let port = admin.local_addr().port();
    let mut connection = RawConnection::open(admin.local_addr()).await;
    let own = format!("Host: 127.0.0.1:{port}");
    for host in [
        own.as_str(),
        "Host: localhost",
        "Host: [::1]",
        "Host: admin.internal",
    ] {
        assert_eq!(
            connection.get("/liveness", &[host.as_bytes()]).await.status,
            200,
            "{host}"
        );
    }
    for host in [
        "Host: evil.example",
        "Host: evil.example:9090",
        "Host: localhost:1",
    ] {
        let response = connection.get("/liveness", &[host.as_bytes()]).await;
        assert_eq!(response.status, 403, "{host}");
        assert_eq!(response.json()["error"], "forbidden");
    }
    let origin = format!("Origin: http://localhost:{port}");
    assert_eq!(
        connection
            .get("/liveness", &[origin.as_bytes()])
            .await
            .status,
        200
    );
    for origin in ["Origin: http://evil.example", "Origin: null"] {
        assert_eq!(
            connection
                .get("/liveness", &[origin.as_bytes()])
                .await
                .status,
            403,
            "{origin}"
        );
    }
}

#[tokio::test]
async fn liveness_answers_through_the_drain_and_the_server_closes_after_it() {
    let health = monitor_with(
        HealthConfig::new().drain(
            DrainConfig::new()
                .delay(Duration::from_millis(300))
                .timeout(Duration::from_secs(5)),
        ),
    )
    .await;
    let drain = health.drain();
    let admin = AdminServer::new(AdminConfig::new().port(0), &health)
        .start()
        .await
        .unwrap();
    let addr = admin.local_addr();
    let mut connection = RawConnection::open(addr).await;
    assert_eq!(connection.get("/readiness", &[]).await.status, 200);

    drain.start();
    for (path, status) in [
        ("/liveness", 200),
        ("/health/ping", 200),
        ("/readiness", 503),
        ("/health", 503),
        ("/health/pool", 503),
    ] {
        let response = connection.get(path, &[]).await;
        assert_eq!(response.status, status, "{path}");
        if status == 503 {
            assert_eq!(response.json()["status"], "draining", "{path}");
            assert_eq!(response.header("retry-after"), Some("5"), "{path}");
        }
    }
    tokio::time::timeout(support::LIMIT, admin.closed())
        .await
        .expect("closed after the drain");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting"
    );
}

#[tokio::test]
async fn idle_and_slow_clients_are_cut_off_while_others_are_served() {
    // Long enough for the other client below to be served before the cut even on a loaded
    // machine; nothing below depends on it.
    let admin = start(AdminConfig::new().header_timeout(Duration::from_secs(1))).await;
    let addr = admin.local_addr();
    let mut silent = RawConnection::open(addr).await;
    let mut slow = RawConnection::open(addr).await;
    slow.send_raw(b"GET /liveness HTTP/1.1\r\nHost: local")
        .await;
    let mut idle = RawConnection::open(addr).await;
    assert_eq!(idle.get("/liveness", &[]).await.status, 200);

    // Meanwhile other clients get their answers.
    let mut other = RawConnection::open(addr).await;
    assert_eq!(other.get("/health/ping", &[]).await.status, 200);
    for (name, connection) in [
        ("silent", &mut silent),
        ("slow", &mut slow),
        ("idle keep-alive", &mut idle),
    ] {
        assert!(
            connection.closed_within(support::LIMIT).await,
            "{name} connection left open"
        );
    }
}

#[tokio::test]
async fn at_the_limit_the_connection_idle_longest_makes_room() {
    // No header timeout within the test: only an eviction closes an idle connection.
    let admin = start(
        AdminConfig::new()
            .max_connections(2)
            .header_timeout(Duration::from_secs(3600)),
    )
    .await;
    let addr = admin.local_addr();
    let mut first = RawConnection::open(addr).await;
    assert_eq!(first.get("/liveness", &[]).await.status, 200);
    let mut second = RawConnection::open(addr).await;
    assert_eq!(second.get("/liveness", &[]).await.status, 200);
    let mut third = RawConnection::open(addr).await;
    assert_eq!(third.get("/liveness", &[]).await.status, 200);
    assert!(
        first.closed_within(support::LIMIT).await,
        "the connection idle longest was kept"
    );
    assert_eq!(second.get("/readiness", &[]).await.status, 200);
    assert_eq!(third.get("/readiness", &[]).await.status, 200);
}

/// Whether a new connection's `GET /liveness` is answered 200 within [`support::LIMIT`],
/// trying again while the server closes new connections unanswered.
async fn probe_answered(addr: SocketAddr) -> bool {
    eventually(support::LIMIT, || async {
        let mut probe = RawConnection::open(addr).await;
        probe
            .send_raw(b"GET /liveness HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await;
        probe
            .response(false)
            .await
            .is_some_and(|response| response.status == 200)
    })
    .await
}

#[tokio::test]
async fn clients_that_never_read_cannot_hold_every_connection() {
    let admin = start(
        AdminConfig::new()
            .max_connections(2)
            .header_timeout(Duration::from_secs(1))
            .write_timeout(Duration::from_secs(1)),
    )
    .await;
    let addr = admin.local_addr();
    let mut slow = [
        SlowReader::start(addr, "/liveness").await,
        SlowReader::start(addr, "/liveness").await,
    ];
    // Both places are taken; a probe still gets its answer (retried: the server may see no
    // stalled connection yet on the first tries).
    let answered = probe_answered(addr).await;
    assert!(answered, "no probe answered while two clients never read");
    for reader in &mut slow {
        reader.closed_by_server().await;
    }
}

#[tokio::test]
async fn at_the_limit_a_client_that_never_reads_makes_room() {
    // No write timeout within the test: only an eviction lets the probe in.
    let admin = start(
        AdminConfig::new()
            .max_connections(1)
            .write_timeout(Duration::from_secs(3600)),
    )
    .await;
    let addr = admin.local_addr();
    let mut slow = SlowReader::start(addr, "/liveness").await;
    let answered = probe_answered(addr).await;
    assert!(answered, "the probe was kept out");
    slow.closed_by_server().await;
}

/// Connections that send nothing and reconnect as soon as they are closed, twice as many as
/// the server takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_clients_that_reconnect_cannot_keep_the_probes_out() {
    const MAX: usize = 8;
    let admin = start(AdminConfig::new().max_connections(MAX)).await;
    let addr = admin.local_addr();
    let connects = Arc::new(AtomicUsize::new(0));
    let mut silent = JoinSet::new();
    for _ in 0..2 * MAX {
        let connects = connects.clone();
        silent.spawn(async move {
            loop {
                let Ok(mut stream) = TcpStream::connect(addr).await else {
                    tokio::task::yield_now().await;
                    continue;
                };
                connects.fetch_add(1, Ordering::Relaxed);
                // Until the server closes it (EOF or reset).
                let _ = stream.read(&mut [0; 1]).await;
            }
        });
    }
    // Every place taken, and silent clients already closed and back.
    let full = eventually(support::LIMIT, || async {
        connects.load(Ordering::Relaxed) > 4 * MAX
    })
    .await;
    assert!(full, "the silent clients did not get going");

    let mut refused = Vec::new();
    for (index, path) in ["/liveness", "/readiness"]
        .iter()
        .cycle()
        .take(40)
        .enumerate()
    {
        // One attempt each, on a fresh connection, as the kubelet does.
        let mut probe = RawConnection::open(addr).await;
        let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let sent = probe.try_send_raw(request.as_bytes()).await;
        match probe.response(false).await {
            Some(response) if response.status == 200 => {}
            Some(response) => refused.push(format!("probe {index} {path}: {}", response.status)),
            None => refused.push(format!(
                "probe {index} {path}: closed unanswered (sent: {sent})"
            )),
        }
    }
    silent.shutdown().await;
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed() {
    let admin = start(AdminConfig::new().write_timeout(Duration::from_secs(1))).await;
    let mut slow = SlowReader::start(admin.local_addr(), "/health/ping").await;
    let error = slow.closed_by_server().await;
    // Reset or broken pipe, depending on when the close reaches the client.
    assert!(
        matches!(
            error.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{error}"
    );
    let mut other = RawConnection::open(admin.local_addr()).await;
    assert_eq!(other.get("/liveness", &[]).await.status, 200);
}

#[tokio::test]
async fn a_second_host_or_an_absolute_target_is_refused() {
    let admin = start(AdminConfig::new()).await;
    let addr = admin.local_addr();
    for (what, request) in [
        (
            "two Host headers",
            "GET /liveness HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n",
        ),
        (
            "two Host headers, both allowed",
            "GET /liveness HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n",
        ),
        (
            "absolute form",
            "GET http://evil.example/liveness HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
        (
            "absolute form naming the server",
            "GET http://localhost/liveness HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
    ] {
        let mut connection = RawConnection::open(addr).await;
        connection.send_raw(request.as_bytes()).await;
        let response = connection.response(false).await.expect("an answer");
        assert_eq!(response.status, 400, "{what}");
        assert_eq!(response.json()["error"], "bad request", "{what}");
    }
}

#[tokio::test]
async fn shutdown_closes_the_server() {
    let admin = start(AdminConfig::new()).await;
    let addr = admin.local_addr();
    admin.shutdown();
    tokio::time::timeout(support::LIMIT, admin.closed())
        .await
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn the_operator_holds_and_releases_readiness() {
    let health = monitor().await;
    let admin = AdminServer::new(keyed().port(0), &health)
        .start()
        .await
        .unwrap();
    let mut connection = RawConnection::open(admin.local_addr()).await;
    let operator = format!("Authorization: Bearer {OPERATOR}").into_bytes();
    let viewer = format!("Authorization: Bearer {VIEWER}").into_bytes();
    let empty: &[u8] = b"Content-Length: 0";
    // No key: 401; the viewer key: 403; a GET: 405. None of them holds anything.
    let response = connection.request("POST", "/hold?reason=x", &[empty]).await;
    assert_eq!(response.status, 401);
    let response = connection
        .request("POST", "/hold?reason=x", &[empty, &viewer])
        .await;
    assert_eq!(response.status, 403);
    let response = connection.get("/hold", &[&operator]).await;
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("POST"));
    assert_eq!(health.held(), None);
    assert_eq!(connection.get("/readiness", &[]).await.status, 200);

    let response = connection
        .request("POST", "/hold?reason=deploy+freeze", &[empty, &operator])
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        serde_json::json!({"status": "held", "reason": "deploy freeze", "changed": true})
    );
    let ready = connection.get("/readiness", &[]).await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.json()["reason"],
        "held by the operator: deploy freeze"
    );
    assert_eq!(connection.get("/liveness", &[]).await.status, 200);
    // Later rounds keep it.
    let rounds = health.stats().readiness_rounds;
    let later = eventually(support::LIMIT, || async {
        health.stats().readiness_rounds >= rounds + 2
    })
    .await;
    assert!(later);
    assert_eq!(connection.get("/readiness", &[]).await.status, 503);

    let response = connection
        .request("POST", "/release", &[empty, &viewer])
        .await;
    assert_eq!(response.status, 403);
    let response = connection
        .request("POST", "/release", &[empty, &operator])
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        serde_json::json!({"status": "released", "changed": true})
    );
    assert_eq!(connection.get("/readiness", &[]).await.status, 200);
}

#[tokio::test]
async fn without_an_operator_key_there_is_no_hold() {
    let admin = start(AdminConfig::new()).await;
    let mut connection = RawConnection::open(admin.local_addr()).await;
    let response = connection
        .request("POST", "/hold", &[b"Content-Length: 0"])
        .await;
    assert_eq!(response.status, 403);
    assert_eq!(connection.get("/readiness", &[]).await.status, 200);
}

/// Open pages never keep a probe or a control out (issue 35 A3): with the default cap of 64
/// connections, 64 and then 500 pages each hold a request for the next change open (as the
/// page's script does, asking again 2 s after its connection was closed), and every
/// `/liveness`, `/readiness`, `POST /hold` and `POST /release` on a fresh connection is
/// answered. A waiting update used to count as an answer being made, which is never closed to
/// make room: 64 open pages closed 168 of 174 probes and controls unanswered.
#[cfg(feature = "page")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_pages_never_keep_a_probe_or_a_control_out() {
    for pages in [64, 500] {
        let health = monitor().await;
        first_rounds(&health).await;
        let admin = AdminServer::new(keyed().port(0), &health)
            .start()
            .await
            .unwrap();
        let addr = admin.local_addr();
        let viewer = format!("Authorization: Bearer {VIEWER}");
        let operator = format!("Authorization: Bearer {OPERATOR}");
        let page = RawConnection::open(addr)
            .await
            .get("/health/page", &[viewer.as_bytes()])
            .await;
        assert_eq!(page.status, 200);
        let token = page
            .body
            .split("data-token=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the page names its token")
            .to_owned();

        let waiting = Arc::new(AtomicUsize::new(0));
        let mut open = JoinSet::new();
        for _ in 0..pages {
            let (waiting, viewer, token) = (waiting.clone(), viewer.clone(), token.clone());
            open.spawn(async move {
                let request = format!(
                    "GET /health/page/updates?after={token} HTTP/1.1\r\nHost: 127.0.0.1\r\n{viewer}\r\n\r\n"
                );
                loop {
                    let Ok(mut stream) = TcpStream::connect(addr).await else {
                        tokio::task::yield_now().await;
                        continue;
                    };
                    if tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
                        .await
                        .is_ok()
                    {
                        waiting.fetch_add(1, Ordering::Relaxed);
                    }
                    // Until the server closes it to make room (or answers, at the wait's end);
                    // the page's script asks again 2 s after a failure.
                    let _ = stream.read(&mut [0; 1024]).await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            });
        }
        let started = eventually(support::LIMIT, || async {
            waiting.load(Ordering::Relaxed) >= pages
        })
        .await;
        assert!(started, "the pages did not get going");

        let empty: &[u8] = b"Content-Length: 0";
        let mut refused = Vec::new();
        let asks = [
            ("GET", "/liveness", None),
            ("GET", "/readiness", None),
            (
                "POST",
                "/hold?reason=deploy+freeze",
                Some(operator.as_bytes()),
            ),
            ("POST", "/release", Some(operator.as_bytes())),
        ];
        for (index, (method, path, key)) in asks.iter().cycle().take(20).enumerate() {
            // One attempt each, on a fresh connection, as the kubelet and an operator do.
            let mut probe = RawConnection::open(addr).await;
            let headers = key.map_or(String::new(), |key| {
                format!("{}\r\n", std::str::from_utf8(key).unwrap())
            });
            let request = format!(
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}{}\r\n\r\n",
                std::str::from_utf8(empty).unwrap()
            );
            let sent = probe.try_send_raw(request.as_bytes()).await;
            match probe.response(false).await {
                Some(response) if response.status == 200 => {}
                // Readiness while the hold of the step before is in place.
                Some(response) if response.status == 503 && *path == "/readiness" => {}
                Some(response) => refused.push(format!(
                    "{pages} pages, {index} {method} {path}: {}",
                    response.status
                )),
                None => refused.push(format!(
                    "{pages} pages, {index} {method} {path}: closed unanswered (sent: {sent})"
                )),
            }
        }
        open.shutdown().await;
        assert!(refused.is_empty(), "{}", refused.join("\n"));
        admin.shutdown();
    }
}
