//! Health groups over real servers and a real PostgreSQL: a group's path on the layer and
//! on the admin server, its Kubernetes-style answers, its metrics (gRPC is in `grpc.rs`),
//! following its members, the hold and the drain.

use crate::support;

use http::StatusCode;
use support::{Client, LIMIT, eventually, fast, first_rounds, health_server, pg_url, postgres};
use tower_health::config::HealthGroup;
use tower_health::{HealthConfig, HealthHandle};

/// `default` is the real PostgreSQL; `orders` is refused when asked. Group `checkout` needs
/// `default` and tolerates `orders`; group `orders` needs `orders`.
async fn config(orders_refused: bool) -> HealthConfig {
    let orders = if orders_refused {
        format!(
            "postgres://postgres@{}/postgres",
            support::refused_addr().await
        )
    } else {
        pg_url()
    };
    fast()
        .database("default", postgres(&pg_url()))
        .database("orders", postgres(&orders))
        .optional_database("orders")
        .group(
            HealthGroup::new("checkout")
                .member("database/default")
                .optional("database/orders"),
        )
        .group(HealthGroup::new("orders").member("database/orders"))
}

async fn started(config: HealthConfig) -> (HealthHandle, support::TestServer) {
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    (health, server)
}

#[tokio::test]
async fn each_group_answers_by_its_own_rule_on_its_own_path() {
    require_postgres!();
    let (_health, server) = started(config(true).await).await;
    let client = Client::new();
    let checkout = client.get(server.addr, "/health/group/checkout").await;
    assert_eq!(checkout.status, StatusCode::OK, "{}", checkout.text());
    assert_eq!(checkout.json()["status"], "degraded");
    assert_eq!(checkout.json()["checks"]["database/default"], "passed");
    assert_eq!(checkout.json()["checks"]["database/orders"], "failed");
    let orders = client.get(server.addr, "/health/group/orders/").await;
    assert_eq!(orders.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(orders.json()["status"], "unhealthy");
    assert!(
        orders.json()["reason"]
            .as_str()
            .unwrap()
            .contains("database/orders")
    );
    // Readiness does not count an optional database; the group that needs it does.
    let ready = client.get(server.addr, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    // Kubernetes' forms.
    let verbose = client
        .get(server.addr, "/health/group/orders?verbose")
        .await;
    assert_eq!(verbose.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        verbose.text(),
        "[-]database/orders failed: error connecting to server: Connection refused (os error 111)\n\
         [+]hold ok\n\
         [+]monitor ok\n\
         [+]shutdown ok\n\
         group/orders check failed\n"
    );
    let excluded = client
        .get(server.addr, "/health/group/orders?exclude=database/orders")
        .await;
    assert_eq!(
        (excluded.status, excluded.text().as_str()),
        (StatusCode::OK, "ok")
    );
    // A name that is no group: 404; a path below a group's is the application's.
    let missing = client.get(server.addr, "/health/group/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let below = client.get(server.addr, "/health/group/orders/x").await;
    assert_eq!(below.text(), "inner /health/group/orders/x");
}

#[tokio::test]
async fn groups_follow_the_hold_and_the_drain() {
    require_postgres!();
    let (health, server) = started(config(false).await).await;
    let client = Client::new();
    let status = |path: &'static str| {
        let client = &client;
        async move { client.get(server.addr, path).await }
    };
    assert_eq!(
        status("/health/group/orders").await.json()["status"],
        "healthy"
    );
    assert!(health.hold("maintenance"));
    let held = status("/health/group/orders").await;
    assert_eq!(held.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(held.json()["status"], "held");
    assert!(health.release());
    assert!(
        eventually(LIMIT, || async {
            status("/health/group/orders").await.status == StatusCode::OK
        })
        .await
    );
    let drain = health.drain().clone();
    drain.start();
    let draining = status("/health/group/checkout").await;
    assert_eq!(draining.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(draining.json()["status"], "draining");
    assert!(draining.header("retry-after").is_some());
}

/// The admin server answers the same at `/health/group/<name>`, and its metrics carry one
/// series per group.
#[cfg(all(feature = "admin", feature = "metrics"))]
#[tokio::test]
async fn the_admin_server_and_the_metrics() {
    require_postgres!();
    use tower_health::admin::{AdminConfig, AdminServer};

    let (health, _server) = started(config(true).await).await;
    let admin = AdminServer::new(AdminConfig::new().port(0), &health)
        .start()
        .await
        .unwrap();
    let client = Client::new();
    let orders = client.get(admin.local_addr(), "/health/group/orders").await;
    assert_eq!(orders.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(orders.json()["group"], "orders");
    let checkout = client
        .get(admin.local_addr(), "/health/group/checkout?verbose")
        .await;
    assert_eq!(checkout.status, StatusCode::OK);
    assert!(
        checkout.text().ends_with("group/checkout check passed\n"),
        "{}",
        checkout.text()
    );
    let metrics = client.get(admin.local_addr(), "/metrics").await.text();
    assert!(
        metrics.contains("tower_health_group_passing{group=\"checkout\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tower_health_group_passing{group=\"orders\"} 0\n"),
        "{metrics}"
    );
}
