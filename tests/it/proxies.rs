//! nginx, Caddy and Traefik in front of two instances of the axum example, each proxy started
//! by the test from the configuration the guide shows (`examples/proxies/`, rendered as
//! `envsubst` renders it). For each: an operator's hold (`POST /hold` on the admin server)
//! takes an instance out of the proxy's rotation with no failed request (behind nginx, which
//! cannot see readiness, the held instance keeps its share, as the guide says); then a SIGTERM
//! under HTTP load and with WebSocket clients loses no request, closes every WebSocket with a
//! close frame, and the clients come back on the other instance. Each run prints when the
//! proxy stopped sending to the instance it took out.

use crate::support;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use tokio::task::JoinSet;

use support::child::{Example, ready_example};
use support::proxy::{Answer, Kind, Load, Proxy};
use support::websocket::{Tally, client};
use support::{Client, LIMIT, bounded, eventually, refused_addr};

/// The instances' drain delay: longer than a check interval (1 s) of the proxies that have
/// one, so that they have seen the drain before the listener closes.
const DRAIN_DELAY: &str = "3s";
/// The operator key of the instances' admin servers.
const OPERATOR_KEY: &str = "proxies-test-operator";
/// WebSocket clients through the proxy.
const CLIENTS: usize = 40;

/// One instance of the axum example: its address (which its `/` answers), its admin server,
/// and the process.
struct Instance {
    name: String,
    admin: SocketAddr,
    child: Example,
}

/// The axum example on free ports with its admin server, the drain as the tests set it and
/// what the guide sets behind `kind`, once ready.
async fn instance(kind: Kind) -> Instance {
    let admin = refused_addr().await;
    let mut env = vec![
        ("TOWER_HEALTH_DRAIN_DELAY", DRAIN_DELAY.to_owned()),
        ("TOWER_HEALTH_DRAIN_CLOSE_WINDOW", "1s".to_owned()),
        ("TOWER_HEALTH_DRAIN_TIMEOUT", "10s".to_owned()),
        ("TOWER_HEALTH_ADMIN_PORT", admin.port().to_string()),
        ("TOWER_HEALTH_ADMIN_KEY", OPERATOR_KEY.to_owned()),
    ];
    env.extend(
        kind.instance_env()
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned())),
    );
    let (child, addr) = ready_example("server", &env).await;
    Instance {
        name: format!("hello from {addr}"),
        admin,
        child,
    }
}

/// `POST <control>` on `instance`'s admin server with the operator key; fails the test unless
/// it changed the hold.
async fn control(instance: &Instance, control: &str) {
    let bearer = format!("Bearer {OPERATOR_KEY}");
    let reply = Client::new()
        .try_request_with(
            Method::POST,
            instance.admin,
            control,
            &[("authorization", bearer.as_str())],
        )
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK, "{control}: {}", reply.text());
    assert_eq!(reply.json()["changed"], true, "{control}: {}", reply.text());
}

/// The answers that came after `since`.
fn after(answers: &[Answer], since: Instant) -> Vec<&Answer> {
    answers.iter().filter(|(at, _)| *at > since).collect()
}

/// The failed answers among `answers`.
fn failures(answers: &[Answer]) -> Vec<String> {
    answers
        .iter()
        .filter_map(|(_, answer)| answer.as_ref().err().cloned())
        .collect()
}

/// When `server` last answered among `answers`, counted from `since` (`None`: not since).
fn last_answer(answers: &[Answer], server: &str, since: Instant) -> Option<Duration> {
    answers
        .iter()
        .filter(|(at, answer)| *at > since && answer.as_deref() == Ok(server))
        .map(|(at, _)| *at - since)
        .max()
}

/// Waits until the last `count` answers since `since` all come from `server` (the other one is
/// out of rotation); fails the test with what came instead.
async fn until_only(load: &Load, server: &str, since: Instant, count: usize) {
    let only = eventually(LIMIT, || async {
        let answers = load.answers();
        let recent = after(&answers, since);
        recent.len() >= count
            && recent[recent.len() - count..]
                .iter()
                .all(|(_, answer)| answer.as_deref() == Ok(server))
    })
    .await;
    assert!(
        only,
        "expected only {server} to answer; the last answers: {:?}",
        load.answers().iter().rev().take(count).collect::<Vec<_>>()
    );
}

/// Waits until `server` answers at least `count` times after `since`.
async fn until_answers(load: &Load, server: &str, since: Instant, count: usize) {
    let answered = eventually(LIMIT, || async {
        let answers = load.answers();
        after(&answers, since)
            .iter()
            .filter(|(_, answer)| answer.as_deref() == Ok(server))
            .count()
            >= count
    })
    .await;
    assert!(answered, "{server} did not answer {count} times");
}

/// The whole scenario behind `kind`: the hold, then the SIGTERM under load.
async fn behind(kind: Kind) {
    let binary = require_proxy!(kind);
    let app1 = instance(kind).await;
    let app2 = instance(kind).await;
    let addrs = [&app1, &app2].map(|app| {
        app.name
            .strip_prefix("hello from ")
            .unwrap()
            .parse::<SocketAddr>()
            .unwrap()
    });
    let proxy = Proxy::start(kind, &binary, refused_addr().await.port(), addrs);
    proxy.wait_for(&[&app1.name, &app2.name]).await;
    let load = Load::start(proxy.frontend, 4);

    // An operator holds app2: readiness 503, whatever the proxy makes of it.
    let held = Instant::now();
    control(&app2, "/hold?reason=proxies+test").await;
    let readiness = Client::new().get(app2.admin, "/readiness").await;
    assert_eq!(readiness.status, StatusCode::SERVICE_UNAVAILABLE);
    if kind.checks_readiness() {
        // Its check sees the 503 and takes app2 out: app1 alone answers.
        until_only(&load, &app1.name, held, 40).await;
    } else {
        // nginx sends it its share all the same: the hold is not seen.
        until_answers(&load, &app2.name, held, 40).await;
    }
    let hold_answers = load.answers();
    let released = Instant::now();
    control(&app2, "/release").await;
    until_answers(&load, &app2.name, released, 5).await;
    eprintln!(
        "{kind:?}, the hold: app2's last answer {:?} after it, {} answers meanwhile, {} failed; back {:?} after the release",
        last_answer(&hold_answers, &app2.name, held),
        after(&hold_answers, held).len(),
        failures(&hold_answers).len(),
        load.answers()
            .iter()
            .find(|(at, answer)| *at > released && answer.as_deref() == Ok(&app2.name))
            .map(|(at, _)| *at - released),
    );

    // WebSocket clients through the proxy, echoing.
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut clients = JoinSet::new();
    for id in 0..CLIENTS {
        clients.spawn(client(id, proxy.frontend, stop.clone(), tally.clone()));
    }
    let echoing = eventually(LIMIT, || async {
        let tally = tally.lock().unwrap();
        tally.first.len() == CLIENTS && tally.echoed > 2 * CLIENTS as u64
    })
    .await;
    assert!(echoing, "the clients are connected and echoing: {tally:?}");
    let app1_server = format!("server {}", addrs[0]);
    let app2_server = format!("server {}", addrs[1]);
    let on_app1 = tally
        .lock()
        .unwrap()
        .first
        .iter()
        .filter(|server| **server == app1_server)
        .count();

    // SIGTERM to app1, under the load: it drains and exits.
    let sigterm = Instant::now();
    app1.child.sigterm();
    let (status, stderr) = app1.child.exit_within(LIMIT).await;
    let exited = sigterm.elapsed();
    // The clients go on for a moment on app2, then stop.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    while let Some(result) = bounded("the WebSocket clients", clients.join_next()).await {
        result.unwrap();
    }
    let answers = load.stop().await;
    drop(proxy);

    let tally = tally.lock().unwrap();
    let failed = failures(&answers);
    let stopped_sending = last_answer(&answers, &app1.name, sigterm).map_or_else(
        || "before it".to_owned(),
        |after| format!("{after:?} after it"),
    );
    println!(
        "{kind:?}: SIGTERM to app1 (drain delay {DRAIN_DELAY}), exited after {exited:?}; the proxy's last request to it answered {stopped_sending}\n\
         HTTP: {} answers, {} failed; WebSockets: {CLIENTS} clients ({on_app1} on app1), clean closes (1001) {}, abnormal {}, echoed {}, resent {}, lost {}, reconnects {}",
        answers.len(),
        failed.len(),
        tally.clean_closes,
        tally.abnormal.len(),
        tally.echoed,
        tally.resent,
        tally.lost,
        tally.reconnects.len(),
    );
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("abandoned=0"), "{stderr}");
    assert!(
        failures(&hold_answers).is_empty() && failed.is_empty(),
        "failed requests: {:?}",
        failures(&hold_answers)
            .into_iter()
            .chain(failed)
            .collect::<Vec<_>>()
    );
    assert!(
        tally.abnormal.is_empty(),
        "closes without a close frame 1001: {:?}",
        tally.abnormal
    );
    assert_eq!(tally.lost, 0);
    assert_eq!(tally.out_of_order, 0);
    assert!(on_app1 > 0, "the proxy sent app1 no WebSocket client");
    assert_eq!(
        tally.clean_closes, on_app1,
        "app1's clients, each closed once"
    );
    assert!(
        tally
            .reconnects
            .iter()
            .all(|(_, server)| *server == app2_server),
        "a client reconnected to the draining app1: {:?}",
        tally.reconnects
    );
    assert_eq!(
        tally.reconnects.len(),
        on_app1,
        "every closed client came back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_nginx_a_sigterm_loses_nothing_and_a_hold_is_not_seen() {
    behind(Kind::Nginx).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_caddy_a_hold_and_a_sigterm_lose_nothing() {
    behind(Kind::Caddy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_traefik_a_hold_and_a_sigterm_lose_nothing() {
    behind(Kind::Traefik).await;
}

/// The guide shows each template word for word.
#[test]
fn the_guide_shows_each_template_as_shipped() {
    let guide = include_str!("../../src/docs/proxies.md");
    for kind in [Kind::Nginx, Kind::Caddy, Kind::Traefik] {
        for (name, template) in kind.templates() {
            assert!(
                guide.contains(template),
                "src/docs/proxies.md does not show examples/proxies/{name} as it is"
            );
        }
    }
}
