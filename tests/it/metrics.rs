//! The metrics over a real PostgreSQL, scraped from the admin server's `/metrics` as
//! Prometheus does: the exposition follows the view through an outage of a database (its port
//! closed, then open again) and a drain, and scraping it costs the database nothing. And the
//! layer's opt-in path on the application's port.

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{Client, LIMIT, PgProxy, eventually, fast, first_rounds, pg_addr, postgres, serve};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};
use tower_health::access::AccessKeys;
use tower_health::admin::{AdminConfig, AdminServer};
use tower_health::metrics::HealthMetrics;
use tower_health::view::View;
use tower_health::{HealthConfig, HealthHandle, HealthLayer, HealthMonitor, config::Details};

/// A port in front of PostgreSQL that can be closed (connections refused, open ones cut) and
/// opened again on the same address.
struct ClosablePort {
    addr: SocketAddr,
    upstream: SocketAddr,
    accept: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
}

impl ClosablePort {
    async fn open(upstream: SocketAddr) -> Self {
        let mut port = Self {
            addr: "127.0.0.1:0".parse().unwrap(),
            upstream,
            accept: None,
            connections: Arc::default(),
        };
        port.reopen().await;
        port
    }

    async fn reopen(&mut self) {
        let listener = TcpListener::bind(self.addr).await.expect("bind the port");
        self.addr = listener.local_addr().unwrap();
        let (upstream, connections) = (self.upstream, self.connections.clone());
        self.accept = Some(tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let pump = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                connections.lock().unwrap().push(pump.abort_handle());
            }
        }));
    }

    /// Stops listening (new connections are refused) and cuts the open ones.
    async fn close(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
            let _ = accept.await;
        }
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    fn url(&self) -> String {
        format!(
            "postgres://postgres@{}/postgres?sslmode=disable&connect_timeout=2",
            self.addr
        )
    }
}

impl Drop for ClosablePort {
    fn drop(&mut self) {
        if let Some(accept) = &self.accept {
            accept.abort();
        }
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }
}

/// The samples of an exposition: `name{labels}` to value.
fn samples(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            (series.to_owned(), value.to_owned())
        })
        .collect()
}

fn bit(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

/// Whether two views answer alike from the same verdicts.
fn same(one: &View, other: &View) -> bool {
    Arc::ptr_eq(&one.readiness, &other.readiness)
        && Arc::ptr_eq(&one.health, &other.health)
        && Arc::ptr_eq(&one.pool, &other.pool)
        && one.draining == other.draining
        && one
            .answers()
            .iter()
            .zip(other.answers())
            .all(|(a, b)| (a.passing, a.condition, a.status) == (b.passing, b.condition, b.status))
}

/// `GET /metrics` from `addr`, as Prometheus scrapes it.
async fn scrape_text(client: &Client, addr: SocketAddr) -> String {
    scrape_path(client, addr, "/metrics").await
}

/// `GET <path>` from `addr`: an exposition.
async fn scrape_path(client: &Client, addr: SocketAddr, path: &str) -> String {
    let reply = client.get(addr, path).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{}",
        reply.text()
    );
    reply.text()
}

/// Scrapes the admin server at `admin` between two equal views (a round may publish in
/// between: then again), checks that it says what the view says, and returns its samples and
/// the view.
async fn scrape(admin: SocketAddr, health: &HealthHandle) -> (BTreeMap<String, String>, View) {
    let client = Client::new();
    for _ in 0..100 {
        let before = health.view();
        let text = scrape_text(&client, admin).await;
        let after = health.view();
        if !same(&before, &after) {
            continue;
        }
        assert!(text.ends_with("# EOF\n"));
        let samples = samples(&text);
        for answer in after.answers() {
            let probe = answer.probe.as_str();
            let passing = format!("tower_health_probe_passing{{probe=\"{probe}\"}}");
            assert_eq!(samples[&passing], bit(answer.passing), "{answer:?}\n{text}");
            let condition = format!(
                "tower_health_probe_condition{{probe=\"{probe}\",condition=\"{}\"}}",
                answer.condition
            );
            assert_eq!(samples[&condition], "1", "{answer:?}\n{text}");
        }
        for outcome in &after.readiness.databases {
            let up = format!(
                "tower_health_database_up{{database=\"{}\",critical=\"{}\"}}",
                outcome.name, outcome.critical
            );
            assert_eq!(samples[&up], bit(outcome.passed()), "{text}");
        }
        let status = format!("tower_health_status{{status=\"{}\"}}", after.health.status);
        assert_eq!(samples[&status], "1", "{text}");
        assert_eq!(samples["tower_health_draining"], bit(after.draining));
        assert_eq!(samples["tower_health_started"], bit(after.started));
        assert_eq!(samples["tower_health_monitor_running"], "1");
        return (samples, after);
    }
    panic!("the view kept changing under the scrape");
}

/// Waits until the readiness verdict says `database` is (or is not) ready.
async fn until_database(health: &HealthHandle, database: &str, ready: bool) {
    let reached = eventually(LIMIT, || async {
        health
            .view()
            .readiness
            .databases
            .iter()
            .any(|outcome| &*outcome.name == database && outcome.passed() == ready)
    })
    .await;
    assert!(reached, "{database} ready={ready} within {LIMIT:?}");
}

#[tokio::test]
async fn the_exposition_follows_an_outage_a_recovery_and_a_drain() {
    require_postgres!();
    let mut replica = ClosablePort::open(pg_addr()).await;
    let config = fast()
        .database("default", postgres(&support::pg_url()))
        .database("replica", postgres(&replica.url()));
    let health = HealthMonitor::spawn(config).unwrap();
    let admin = AdminServer::new(AdminConfig::new().port(0), &health)
        .start()
        .await
        .unwrap();
    first_rounds(&health).await;
    until_database(&health, "replica", true).await;

    let (healthy, view) = scrape(admin.local_addr(), &health).await;
    assert!(view.answer(tower_health::Probe::Ready).passing);
    assert_eq!(
        healthy["tower_health_database_up{database=\"replica\",critical=\"true\"}"],
        "1"
    );
    assert_eq!(
        healthy["tower_health_verdict_stale{verdict=\"readiness\"}"],
        "0"
    );
    let failures = "tower_health_check_failures_total{check=\"replica\",kind=\"refused\"}";
    assert!(!healthy.contains_key(failures));

    // The replica's port closes: refused.
    replica.close().await;
    until_database(&health, "replica", false).await;
    let (refused, view) = scrape(admin.local_addr(), &health).await;
    assert!(!view.answer(tower_health::Probe::Ready).passing);
    assert_eq!(
        refused["tower_health_database_check_status{database=\"replica\",status=\"not_ready\"}"],
        "1"
    );
    // Counted by category: refused (or closed, when the cut met a query in flight).
    let outcome = view
        .readiness
        .databases
        .iter()
        .find(|o| &*o.name == "replica");
    let kind = outcome
        .and_then(|o| o.error.as_ref())
        .map(|e| e.kind().as_str());
    let counted = format!(
        "tower_health_check_failures_total{{check=\"replica\",kind=\"{}\"}}",
        kind.expect("the replica's error")
    );
    assert!(
        refused[&counted].parse::<u64>().unwrap() >= 1,
        "{refused:?}"
    );
    assert_eq!(
        refused["tower_health_database_up{database=\"default\",critical=\"true\"}"],
        "1"
    );

    // Open again: recovered, and the failures stay counted.
    replica.reopen().await;
    until_database(&health, "replica", true).await;
    let (recovered, view) = scrape(admin.local_addr(), &health).await;
    assert!(view.answer(tower_health::Probe::Ready).passing);
    assert_eq!(
        recovered["tower_health_database_up{database=\"replica\",critical=\"true\"}"],
        "1"
    );
    assert!(recovered[&counted].parse::<u64>().unwrap() >= 1);
    let transitions = "tower_health_transitions_total{question=\"readiness\"}";
    assert!(
        recovered[transitions].parse::<u64>().unwrap() >= 3,
        "{recovered:?}"
    );

    // The drain: no round needed for the exposition to show it.
    let drain = health.drain().clone();
    drain.start();
    let (draining, _) = scrape(admin.local_addr(), &health).await;
    assert_eq!(draining["tower_health_draining"], "1");
    for probe in ["health", "ready", "pool"] {
        let series =
            format!("tower_health_probe_condition{{probe=\"{probe}\",condition=\"draining\"}}");
        assert_eq!(draining[&series], "1", "{probe}");
    }
    assert_eq!(draining["tower_health_probe_passing{probe=\"live\"}"], "1");
}

#[tokio::test]
async fn a_thousand_scrapes_send_no_query() {
    require_postgres!();
    // Every byte of the check goes through this proxy, which counts the queries it forwards:
    // the one witness. (PostgreSQL's own `pg_stat_activity` also sees connections opening
    // and closing for reasons of their own under load, which scrapes have no part in.)
    let proxy = PgProxy::start(pg_addr()).await;
    // Rounds an hour apart: after the first ones, only scrapes happen.
    let hour = Duration::from_secs(3600);
    let config = HealthConfig::new()
        .readiness_interval(hour)
        .health_interval(hour)
        .database("default", postgres(&proxy.url()));
    let health = HealthMonitor::spawn(config).unwrap();
    first_rounds(&health).await;
    let admin = AdminServer::new(AdminConfig::new().port(0), &health)
        .start()
        .await
        .unwrap();
    let metrics = HealthMetrics::new(&health);
    let client = Client::new();

    let (stats, queries) = (health.stats(), proxy.queries());
    assert!(
        queries >= 1,
        "the proxy counts the check's queries: it saw the first rounds' ({queries})"
    );
    let first = metrics.exposition();
    for _ in 0..1_000 {
        let again = metrics.exposition();
        assert_eq!(again.as_ptr(), first.as_ptr(), "rendered again");
    }
    // And 1,000 scrapes of the admin server, as Prometheus makes them.
    let scraped = scrape_text(&client, admin.local_addr()).await;
    for _ in 0..999 {
        assert_eq!(scrape_text(&client, admin.local_addr()).await, scraped);
    }
    assert_eq!(proxy.queries(), queries, "scrapes sent queries");
    assert_eq!(health.stats(), stats, "scrapes ran checks");
    let samples = samples(std::str::from_utf8(&first).unwrap());
    assert_eq!(
        samples["tower_health_database_up{database=\"default\",critical=\"true\"}"],
        "1"
    );
}

const OPERATOR: &str = "operator-key-0123456789abcdef";

#[tokio::test]
async fn metrics_need_the_viewer_key_on_a_keyed_admin_server() {
    let health = HealthMonitor::spawn(fast()).unwrap();
    first_rounds(&health).await;
    let admin = AdminServer::new(AdminConfig::new().port(0).operator_key(OPERATOR), &health)
        .start()
        .await
        .unwrap();
    let mut connection = support::raw::RawConnection::open(admin.local_addr()).await;
    assert_eq!(connection.get("/metrics", &[]).await.status, 401);
    let key = format!("Authorization: Bearer {OPERATOR}");
    let response = connection.get("/metrics", &[key.as_bytes()]).await;
    assert_eq!(response.status, 200);
    assert!(response.body.ends_with("# EOF\n"), "{}", response.body);
    assert_eq!(
        connection.request("POST", "/metrics", &[]).await.status,
        405
    );
}

#[tokio::test]
async fn the_layers_metrics_path_is_opt_in() {
    let off = HealthLayer::new(HealthMonitor::spawn(fast()).unwrap());
    first_rounds(&off.handle()).await;
    let health = HealthMonitor::spawn(fast().metrics_path("/_health/metrics/")).unwrap();
    first_rounds(&health).await;
    let on = HealthLayer::new(&health);
    let keyed = on
        .clone()
        .details(Details::Authorized)
        .access_keys(&AccessKeys::new().operator(OPERATOR));
    let client = Client::new();
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(off)
            .service(support::app()),
    )
    .await;
    let reply = client.get(server.addr, "/_health/metrics").await;
    assert_eq!(
        reply.text(),
        "inner /_health/metrics",
        "off by default: the app's path"
    );
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(on)
            .service(support::app()),
    )
    .await;
    let text = scrape_path(&client, server.addr, "/_health/metrics").await;
    assert!(
        text.contains("tower_health_probe_passing{probe=\"ready\"} 1"),
        "{text}"
    );
    assert_eq!(
        client.get(server.addr, "/metrics").await.text(),
        "inner /metrics"
    );
    let server = serve(
        tower::ServiceBuilder::new()
            .layer(keyed)
            .service(support::app()),
    )
    .await;
    let mut connection = support::raw::RawConnection::open(server.addr).await;
    assert_eq!(connection.get("/_health/metrics", &[]).await.status, 401);
    let key = format!("Authorization: Bearer {OPERATOR}");
    assert_eq!(
        connection
            .get("/_health/metrics", &[key.as_bytes()])
            .await
            .status,
        200
    );
}
