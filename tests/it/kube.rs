//! Kubernetes' conventions over a real server and a real PostgreSQL: `?verbose`,
//! `?exclude=<check>` and a path per check, in kube-apiserver's plain-text format, line for
//! line; statuses stay 200/503.

use crate::support;

use std::time::Duration;

use http::StatusCode;
use support::{Client, LIMIT, eventually, fast, first_rounds, health_server, pg_url, postgres};
use tower_health::HealthConfig;
use tower_health::config::Details;

/// A server whose default database is the real PostgreSQL and whose `orders` database is
/// refused, with the Kubernetes aliases on and details as given.
async fn server(
    details: Details,
    orders_refused: bool,
) -> (tower_health::HealthHandle, support::TestServer) {
    let orders = if orders_refused {
        format!(
            "postgres://postgres@{}/postgres",
            support::refused_addr().await
        )
    } else {
        pg_url()
    };
    let config = fast()
        .kubernetes_aliases(true)
        .details(details)
        .database("default", postgres(&pg_url()))
        .database("orders", postgres(&orders));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    (health, server)
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[tokio::test]
async fn verbose_lists_every_check_as_kube_apiserver_does() {
    require_postgres!();
    let (_health, server) = server(Details::Never, false).await;
    let client = Client::new();
    let ready = client.get(server.addr, "/readyz?verbose").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(
        ready.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(ready.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        ready.text(),
        "[+]database/default ok\n\
         [+]database/orders ok\n\
         [+]hold ok\n\
         [+]monitor ok\n\
         [+]shutdown ok\n\
         readyz check passed\n"
    );
    // The crate's own path, the same answer.
    let own = client.get(server.addr, "/health/ready?verbose").await;
    assert_eq!(own.text(), ready.text());
    let live = client.get(server.addr, "/livez?verbose").await;
    assert_eq!(
        (live.status, live.text().as_str()),
        (StatusCode::OK, "[+]ping ok\nlivez check passed\n")
    );
    let startup = client.get(server.addr, "/health/startup?verbose").await;
    assert_eq!(startup.text(), "[+]started ok\nstartupz check passed\n");
    let health = client.get(server.addr, "/health?verbose=1").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(
        lines(&health.text()).last().copied(),
        Some("healthz check passed")
    );
    // Without `verbose` the JSON answers are unchanged.
    let json = client.get(server.addr, "/readyz").await;
    assert_eq!(json.json()["status"], "ready");
    // `?exclude` alone, passing: `ok`, as kube-apiserver answers.
    let excluded = client.get(server.addr, "/readyz?exclude=hold").await;
    assert_eq!(
        (excluded.status, excluded.text().as_str()),
        (StatusCode::OK, "ok")
    );
}

#[tokio::test]
async fn a_failing_check_fails_its_line_and_the_answer_and_can_be_excluded() {
    require_postgres!();
    let (_health, server) = server(Details::Never, true).await;
    let client = Client::new();
    let failed = client.get(server.addr, "/readyz?verbose").await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        failed.text(),
        "[+]database/default ok\n\
         [-]database/orders failed: reason withheld\n\
         [+]hold ok\n\
         [+]monitor ok\n\
         [+]shutdown ok\n\
         readyz check failed\n"
    );
    // Always verbose on failure, as kube-apiserver is, `?exclude` without `?verbose` too.
    let unrelated = client.get(server.addr, "/readyz?exclude=hold").await;
    assert_eq!(unrelated.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        unrelated
            .text()
            .starts_with("[+]database/default ok\n[-]database/orders failed"),
        "{}",
        unrelated.text()
    );
    assert!(unrelated.text().contains("[+]hold excluded: ok\n"));
    // Excluding the failing check passes; percent-encoded and repeated names work.
    let excluded = client
        .get(
            server.addr,
            "/readyz?verbose&exclude=database%2Forders&exclude=nope",
        )
        .await;
    assert_eq!(excluded.status, StatusCode::OK, "{}", excluded.text());
    assert_eq!(
        excluded.text(),
        "[+]database/default ok\n\
         [+]database/orders excluded: ok\n\
         [+]hold ok\n\
         [+]monitor ok\n\
         [+]shutdown ok\n\
         warn: some health checks cannot be excluded: no matches for \"nope\"\n\
         readyz check passed\n"
    );
    let quiet = client
        .get(server.addr, "/health/ready?exclude=database/orders")
        .await;
    assert_eq!(
        (quiet.status, quiet.text().as_str()),
        (StatusCode::OK, "ok")
    );
    // A check's own path.
    let orders = client.get(server.addr, "/readyz/database/orders").await;
    assert_eq!(
        (orders.status, orders.text().as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "failed: reason withheld\n")
    );
    let default = client.get(server.addr, "/readyz/database/default/").await;
    assert_eq!(
        (default.status, default.text().as_str()),
        (StatusCode::OK, "ok\n")
    );
    let ping = client.get(server.addr, "/livez/ping").await;
    assert_eq!(
        (ping.status, ping.text().as_str()),
        (StatusCode::OK, "ok\n")
    );
    let missing = client.get(server.addr, "/readyz/database/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        missing.text(),
        "no such check: \"database/nope\"; the checks: database/default, database/orders, hold, monitor, shutdown\n"
    );
    // A path that no check can have is the application's.
    let app = client.get(server.addr, "/readyz/other").await;
    assert_eq!(app.text(), "inner /readyz/other");
    // `/health` does not fail on a database other than the default one: its line says so.
    let health = client.get(server.addr, "/health?verbose").await;
    assert_eq!(health.status, StatusCode::OK);
    assert!(
        health
            .text()
            .contains("[+]database/orders degraded: reason withheld\n"),
        "{}",
        health.text()
    );
    let health_check = client.get(server.addr, "/health/database/orders").await;
    assert_eq!(
        (health_check.status, health_check.text().as_str()),
        (StatusCode::OK, "degraded: reason withheld\n")
    );
}

#[tokio::test]
async fn reasons_follow_the_detail_level() {
    require_postgres!();
    let (_health, server) = server(Details::Always, true).await;
    let client = Client::new();
    let failed = client.get(server.addr, "/readyz?verbose").await;
    let line = lines(&failed.text())
        .into_iter()
        .find(|line| line.starts_with("[-]database/orders"))
        .map(str::to_owned)
        .unwrap();
    assert!(
        line.starts_with("[-]database/orders failed: error connecting to server: ")
            && line.contains("refused"),
        "{line}"
    );
    let own = client.get(server.addr, "/readyz/database/orders").await;
    assert!(own.text().contains("refused"), "{}", own.text());
}

#[tokio::test]
async fn the_hold_and_the_drain_have_lines_of_their_own() {
    require_postgres!();
    let (health, server) = server(Details::Never, false).await;
    let client = Client::new();
    assert!(health.hold("maintenance window"));
    let held = client.get(server.addr, "/readyz?verbose").await;
    assert_eq!(held.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        held.text()
            .contains("[-]hold failed: held by the operator\n"),
        "{}",
        held.text()
    );
    let hold = client.get(server.addr, "/readyz/hold").await;
    assert_eq!(hold.status, StatusCode::SERVICE_UNAVAILABLE);
    // Excluding the hold is the operator's own override.
    let excluded = client.get(server.addr, "/readyz?exclude=hold").await;
    assert_eq!(excluded.status, StatusCode::OK);
    assert!(health.release());

    let drain = health.drain();
    assert!(
        eventually(LIMIT, || async {
            client.get(server.addr, "/readyz?verbose").await.status == StatusCode::OK
        })
        .await
    );
    drain.start();
    let draining = client.get(server.addr, "/readyz?verbose").await;
    assert_eq!(draining.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        draining.text(),
        "[+]database/default ok\n\
         [+]database/orders ok\n\
         [+]hold ok\n\
         [+]monitor ok\n\
         [-]shutdown failed: the server is draining: it finishes in-flight requests and takes no new traffic\n\
         readyz check failed\n"
    );
    let shutdown = client.get(server.addr, "/readyz/shutdown").await;
    assert_eq!(shutdown.status, StatusCode::SERVICE_UNAVAILABLE);
    // Liveness stays 200 while draining, in every form.
    let live = client.get(server.addr, "/livez?verbose").await;
    assert_eq!(live.status, StatusCode::OK);
}

#[tokio::test]
async fn before_the_first_round_the_monitor_line_says_why() {
    require_postgres!();
    // A database that never answers: the first round waits for its deadline.
    let stalled = support::StalledListener::start().await;
    let config = HealthConfig::new()
        .readiness_timeout(Duration::from_secs(30))
        .database("default", postgres(&stalled.url()));
    let (_health, server) = health_server(config).await;
    let client = Client::new();
    let ready = client.get(server.addr, "/health/ready?verbose").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready.text().contains("[-]monitor failed: "),
        "{}",
        ready.text()
    );
    let startup = client.get(server.addr, "/health/startup?verbose").await;
    assert_eq!(
        (startup.status, startup.text().as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "[-]started failed: the first readiness round has not completed\nstartupz check failed\n"
        )
    );
}

/// The admin server's own paths take the same forms; the full picture's checks need the
/// viewer key there, as `/health` does.
#[cfg(feature = "admin")]
#[tokio::test]
async fn the_admin_server_answers_the_same_forms() {
    require_postgres!();
    use tower_health::admin::{AdminConfig, AdminServer};

    let (health, _server) = server(Details::Never, true).await;
    let admin = AdminServer::new(
        AdminConfig::new()
            .port(0)
            .operator_key("operator-key-0123456789abcdef")
            .readonly_key("viewer-key-0123456789abcdef"),
        &health,
    )
    .start()
    .await
    .unwrap();
    let client = Client::new();
    let ready = client.get(admin.local_addr(), "/readiness?verbose").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready
            .text()
            .contains("[-]database/orders failed: reason withheld\n"),
        "{}",
        ready.text()
    );
    let orders = client
        .get(admin.local_addr(), "/readiness/database/orders")
        .await;
    assert_eq!(orders.status, StatusCode::SERVICE_UNAVAILABLE);
    let live = client.get(admin.local_addr(), "/liveness/ping").await;
    assert_eq!(
        (live.status, live.text().as_str()),
        (StatusCode::OK, "ok\n")
    );
    let pool = client
        .get(admin.local_addr(), "/health/pool/database/default")
        .await;
    assert_eq!(
        (pool.status, pool.text().as_str()),
        (StatusCode::OK, "ok\n")
    );
    // `/health`'s checks are the full picture's: the viewer's.
    let health_check = client
        .get(admin.local_addr(), "/health/database/orders")
        .await;
    assert_eq!(health_check.status, StatusCode::UNAUTHORIZED);
}
