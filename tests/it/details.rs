//! Detail levels over real faults: with `details = never`, the bodies of a refused, a stalled
//! and a refused-at-login database carry statuses, categories and configured names only, on
//! the application's port and the admin server's; with `authorized`, key holders get the
//! redacted detail and nobody else does.

use crate::support;

use std::time::Duration;

use support::raw::RawConnection;
use support::{Client, LIMIT, StalledListener, eventually, first_rounds, refused_addr, serve};
use tower::ServiceBuilder;
use tower_health::access::AccessKeys;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::postgres::PostgresCheck;
use tower_health::{HealthConfig, HealthHandle, HealthLayer, HealthMonitor, config::Details};

const OPERATOR: &str = "operator-key-0123456789abcdef";
const VIEWER: &str = "viewer-key-0123456789abcdef";

/// What the three faults write, and where they point: none of it may reach the short form.
const SECRETS: &[&str] = &[
    // The refused-at-login role, as the server names it.
    "no_such_role_for_details",
    // The user, database and password of the refused and stalled connection strings.
    "app_user",
    "orders_db",
    "s3cret-pw",
    // Hosts, and driver text.
    "127.0.0.1",
    "Connection refused",
    "does not exist",
    // Figures and timings.
    "elapsed_ms",
    "max_size",
    "target",
];

/// The three faults, by configured name: `default` logs in as a role that does not exist
/// (the local server trusts every password, so this is its authentication failure), `stalled`
/// accepts and never answers, `replica` is refused.
async fn faults(stalled: &StalledListener) -> HealthConfig {
    let port = support::pg_addr().port();
    let refused = refused_addr().await;
    let check = |url: String| PostgresCheck::connect(&url).expect("a valid connection string");
    HealthConfig::new()
        .readiness_interval(Duration::from_millis(100))
        .health_interval(Duration::from_millis(200))
        .readiness_timeout(Duration::from_millis(300))
        .database(
            "default",
            check(format!(
                "postgres://no_such_role_for_details@127.0.0.1:{port}/postgres"
            )),
        )
        .database(
            "stalled",
            check(format!(
                "postgres://app_user:s3cret-pw@{}/orders_db",
                stalled.addr
            )),
        )
        .database(
            "replica",
            check(format!("postgres://app_user:s3cret-pw@{refused}/orders_db")),
        )
}

/// Waits until every fault shows in readiness: login refused, stalled timed out, refused.
async fn settled(health: &HealthHandle) {
    first_rounds(health).await;
    let settled = eventually(LIMIT, || async {
        let readiness = health.view().readiness;
        readiness.databases.len() == 3
            && readiness.databases.iter().all(|outcome| !outcome.passed())
            && readiness
                .databases
                .iter()
                .any(|outcome| outcome.error.is_some())
    })
    .await;
    assert!(settled, "{:?}", health.view().readiness);
}

fn assert_short(path: &str, body: &str) {
    for secret in SECRETS {
        assert!(
            !body.contains(secret),
            "{path} shows {secret:?} at the short level: {body}"
        );
    }
    // The configured names and the categories stay.
    assert!(body.contains("default"), "{path}: {body}");
    assert!(body.contains("\"error_kind\""), "{path}: {body}");
}

#[tokio::test]
async fn never_shows_statuses_categories_and_names_only_on_both_ports() {
    require_postgres!();
    let stalled = StalledListener::start().await;
    let layer = HealthLayer::new(HealthMonitor::spawn(faults(&stalled).await).unwrap())
        .details(Details::Never);
    let health = layer.handle();
    settled(&health).await;
    let server = serve(ServiceBuilder::new().layer(layer).service(support::app())).await;
    let admin = AdminServer::new(AdminConfig::new().port(0).details(Details::Never), &health)
        .start()
        .await
        .unwrap();
    let client = Client::new();
    for path in [
        "/health",
        "/health/ready",
        "/health/pool",
        "/health?nocache=true",
    ] {
        let reply = client.get(server.addr, path).await;
        assert_eq!(reply.status, 503, "{path}: {}", reply.text());
        assert_short(path, &reply.text());
    }
    let ready = client.get(server.addr, "/health/ready").await.json();
    assert_eq!(ready["details"]["database_default"]["error_kind"], "auth");
    assert_eq!(
        ready["details"]["database_stalled"]["error_kind"],
        "timeout"
    );
    assert_eq!(
        ready["details"]["database_replica"]["error_kind"],
        "refused"
    );
    assert_eq!(ready["checks"]["database_stalled"], "timed_out");
    let pool = client.get(server.addr, "/health/pool").await.json();
    assert_eq!(pool["error"], "auth");
    assert_eq!(pool["pool_info"]["alias"], "default");

    let mut connection = RawConnection::open(admin.local_addr()).await;
    for path in ["/health", "/readiness", "/health/pool"] {
        let response = connection.get(path, &[]).await;
        assert_eq!(response.status, 503, "admin {path}");
        assert_short(path, &response.body);
    }
}

#[tokio::test]
async fn authorized_shows_the_detail_to_key_holders_only_on_both_ports() {
    require_postgres!();
    let stalled = StalledListener::start().await;
    let keys = AccessKeys::new().operator(OPERATOR).readonly(VIEWER);
    let layer = HealthLayer::new(HealthMonitor::spawn(faults(&stalled).await).unwrap())
        .details(Details::Authorized)
        .access_keys(&keys);
    let health = layer.handle();
    settled(&health).await;
    let server = serve(ServiceBuilder::new().layer(layer).service(support::app())).await;
    let admin = AdminServer::new(
        AdminConfig::new()
            .port(0)
            .operator_key(OPERATOR)
            .readonly_key(VIEWER)
            .details(Details::Authorized),
        &health,
    )
    .start()
    .await
    .unwrap();

    let mut app = RawConnection::open(server.addr).await;
    let mut admin_port = RawConnection::open(admin.local_addr()).await;
    let viewer = format!("Authorization: Bearer {VIEWER}");
    let wrong = "Authorization: Bearer wrong-key-0123456789abcdef";
    for path in ["/health", "/health/ready", "/health/pool"] {
        assert_short(path, &app.get(path, &[]).await.body);
        assert_short(path, &app.get(path, &[wrong.as_bytes()]).await.body);
        let shown = app.get(path, &[viewer.as_bytes()]).await.body;
        assert!(shown.contains("elapsed_ms"), "{path}: {shown}");
        // Redacted: the password never shows, at any level.
        assert!(!shown.contains("s3cret-pw"), "{path}: {shown}");
    }
    let shown = app.get("/health/ready", &[viewer.as_bytes()]).await.body;
    assert!(shown.contains("no_such_role_for_details"), "{shown}");
    assert!(shown.contains("orders_db"), "the target: {shown}");

    for path in ["/readiness", "/health/pool"] {
        let response = admin_port.get(path, &[]).await;
        assert_eq!(response.status, 503, "admin {path} stays public");
        assert_short(path, &response.body);
        let shown = admin_port.get(path, &[viewer.as_bytes()]).await.body;
        assert!(shown.contains("elapsed_ms"), "admin {path}: {shown}");
    }
    // `/health` needs a key on a keyed admin server; holders see the detail.
    assert_eq!(admin_port.get("/health", &[]).await.status, 401);
    let shown = admin_port.get("/health", &[viewer.as_bytes()]).await.body;
    assert!(shown.contains("no_such_role_for_details"), "{shown}");
    assert!(!shown.contains("s3cret-pw"), "{shown}");

    // One bypass rule on both ports: with keys (and `nocache` at its default, allowed), only
    // their holders compute a fresh verdict; anyone else gets the published one.
    let published = app.get("/health/pool?nocache=true", &[]).await.body;
    assert!(!published.contains("bypassed"), "{published}");
    let fresh = app
        .get("/health/pool?nocache=true", &[viewer.as_bytes()])
        .await
        .body;
    assert!(fresh.contains(r#""hit":"bypassed""#), "{fresh}");
    let fresh = admin_port
        .get("/health/pool?nocache=true", &[viewer.as_bytes()])
        .await
        .body;
    assert!(fresh.contains(r#""hit":"bypassed""#), "{fresh}");
}
