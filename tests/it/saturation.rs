//! The application's own pool saturated, against the real PostgreSQL: every connection busy
//! with a slow query and a checkout waiting. The check does not queue behind them (it has a
//! connection of its own), readiness stays ready, and the pool endpoint reports the
//! saturation with its figures.

use crate::support;

use std::time::Duration;

use http::StatusCode;
use support::{Client, eventually, fast, first_rounds, health_server, pg_client};
use tokio::sync::watch;
use tower_health::postgres::PostgresCheck;
use tower_health::postgres::{bb8, bb8_postgres, tokio_postgres};

#[tokio::test]
async fn a_saturated_application_pool_is_degraded_and_stays_ready() {
    require_postgres!();
    let name = format!("th_saturation_{}", std::process::id());
    let url = support::pg_url_with(&format!("application_name={name}"));
    let manager =
        bb8_postgres::PostgresConnectionManager::new_from_stringlike(url, tokio_postgres::NoTls)
            .unwrap();
    let pool = bb8::Pool::builder()
        .max_size(2)
        .connection_timeout(Duration::from_secs(30))
        .build(manager)
        .await
        .unwrap();
    let config = fast()
        .readiness_timeout(Duration::from_secs(2))
        .database("default", PostgresCheck::new(pool.clone()));
    let (health, server) = health_server(config).await;
    first_rounds(&health).await;
    let client = Client::new();
    let (stop_polling, polling) = watch::channel(false);
    let poller = tokio::spawn(poll_readiness(server.addr, polling));

    // Two requests of the application hold both connections on a slow query, and keep them
    // until released (so the saturation lasts as long as the test needs it, not a fixed time);
    // a third waits for a connection.
    let (release, released) = watch::channel(false);
    let mut holders = Vec::new();
    for _ in 0..2 {
        let pool = pool.clone();
        let mut released = released.clone();
        holders.push(tokio::spawn(async move {
            let conn = pool.get().await.expect("a connection for the slow query");
            conn.simple_query("SELECT pg_sleep(3)").await.unwrap();
            let _ = released.wait_for(|released| *released).await;
        }));
    }
    let busy = eventually(Duration::from_secs(10), || async {
        let state = pool.state();
        state.connections == 2 && state.idle_connections == 0
    })
    .await;
    assert!(busy, "{:?}", pool.state());
    let waiter = tokio::spawn({
        let pool = pool.clone();
        async move {
            pool.get()
                .await
                .map(drop)
                .map_err(|error| error.to_string())
        }
    });
    let queued = eventually(Duration::from_secs(10), || async {
        pool.state().statistics.pending_gets() >= 1
    })
    .await;
    assert!(queued, "{:?}", pool.state());

    // Once a round has seen the pool saturated, the pool endpoint says so, with the figures.
    let mut saturated = None;
    for _ in 0..1000 {
        let reply = client.get(server.addr, "/health/pool").await;
        let body = reply.json();
        if body["pool_info"]["saturated"] == true {
            let envoy = reply.header("x-envoy-degraded").map(str::to_owned);
            saturated = Some((reply.status, body, envoy));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body, envoy) = saturated.unwrap_or_else(|| panic!("{:?}", health.view().pool));
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(
        envoy.as_deref(),
        Some("degraded"),
        "Envoy's signal on a degraded pool"
    );
    let info = &body["pool_info"];
    assert_eq!(info["status"], "degraded", "{body}");
    assert_eq!(info["is_usable"], true, "{body}");
    assert_eq!(info["max_size"], 2, "{body}");
    assert_eq!(info["connections"], 2, "{body}");
    assert_eq!(info["in_use"], 2, "{body}");
    assert!(info["pending_gets"].as_u64().unwrap() >= 1, "{body}");
    assert!(body.get("error").is_none(), "{body}");

    // Rounds keep running on the reserved connection while the pool stays saturated.
    let rounds_before = health.stats().readiness_rounds;
    let more_rounds = eventually(Duration::from_secs(10), || async {
        health.stats().readiness_rounds >= rounds_before + 5
    })
    .await;
    assert!(more_rounds);
    assert!(
        health.view().readiness.ready,
        "{:?}",
        health.view().readiness
    );
    // Health says degraded with the pool's figures, not "database down" (issue 10).
    let degraded = eventually(Duration::from_secs(10), || async {
        client.get(server.addr, "/health").await.json()["status"] == "degraded"
    })
    .await;
    assert!(degraded, "{:?}", health.view().health);
    let full = client.get(server.addr, "/health").await;
    assert_eq!(full.status, StatusCode::OK, "{}", full.text());
    let body = full.json();
    // (A round between the two requests may have seen the waiter served already.)
    if body["status"] == "degraded" {
        let pool_figures = &body["details"]["database"]["pool"];
        assert_eq!(pool_figures["saturated"], true, "{body}");
        assert_eq!(pool_figures["in_use"], 2, "{body}");
        assert_eq!(body["checks"]["database"], "healthy", "{body}");
    }
    assert!(
        pool.state().statistics.pending_gets() >= 1,
        "still saturated"
    );

    // The connection budget: the pool's two and the check's one, reused every round.
    let inspector = pg_client().await;
    let backends: i64 = inspector
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(backends, 3);
    let stats = health.view().pool.stats.unwrap();
    assert_eq!(stats.reserved_connections_opened, 1, "{stats:?}");
    assert_eq!(
        pool.state().statistics.get_started,
        3,
        "the checks never queued in the pool"
    );

    // Released, the waiter gets its connection and the pool is healthy again.
    release.send_replace(true);
    for holder in holders {
        tokio::time::timeout(Duration::from_secs(10), holder)
            .await
            .expect("the slow queries end")
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter is served")
        .unwrap()
        .expect("the waiter got a connection");
    let healthy = eventually(Duration::from_secs(10), || async {
        let reply = client.get(server.addr, "/health/pool").await;
        reply.status == StatusCode::OK && reply.json()["status"] == "healthy"
    })
    .await;
    assert!(healthy, "{:?}", health.view().pool);

    // Readiness answered 200 throughout, saturation included.
    stop_polling.send_replace(true);
    let (polled, failures) = tokio::time::timeout(Duration::from_secs(10), poller)
        .await
        .expect("the poller stops")
        .unwrap();
    assert!(polled > 0);
    assert!(
        failures.is_empty(),
        "{} of {polled} not 200: {failures:#?}",
        failures.len()
    );
}

/// Polls `/health/ready` every 20 ms until `stop`; returns how many answers came and the
/// ones that were not 200.
async fn poll_readiness(
    addr: std::net::SocketAddr,
    mut stop: watch::Receiver<bool>,
) -> (usize, Vec<String>) {
    let client = Client::new();
    let (mut polled, mut failures) = (0, Vec::new());
    while !*stop.borrow_and_update() {
        let reply = tokio::time::timeout(
            Duration::from_secs(5),
            client.try_get(addr, "/health/ready"),
        )
        .await;
        polled += 1;
        match reply {
            Ok(Ok(reply)) if reply.status == StatusCode::OK => {}
            Ok(Ok(reply)) => failures.push(format!("{}: {}", reply.status, reply.text())),
            Ok(Err(error)) => failures.push(error),
            Err(_) => failures.push("no answer within 5 s".to_owned()),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (polled, failures)
}
