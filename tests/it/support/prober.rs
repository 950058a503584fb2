//! Readiness probers for the SIGTERM tests of the examples: each records its answers in order,
//! so a test can check they went passing, failing, gone, and never back.

use std::net::SocketAddr;
use std::sync::Arc;

use http::StatusCode;
use tokio::sync::Mutex;

use super::child::Example;
use super::{Client, LIMIT, eventually};

/// A probe's answers in order: `true` passing, `false` failing; `None` for a connection
/// that failed (the listener closed).
pub type Answers = Arc<Mutex<Vec<Option<bool>>>>;

/// Whether `answers` go: passing, then failing, then (the listener closed) no answer, and
/// never back.
pub async fn in_order(answers: &Answers) -> bool {
    let answers = answers.lock().await;
    let rank = |answer: &Option<bool>| match answer {
        Some(true) => 0,
        Some(false) => 1,
        None => 2,
    };
    answers
        .windows(2)
        .all(|pair| rank(&pair[0]) <= rank(&pair[1]))
}

/// Polls readiness over HTTP/1.1 until the listener is gone.
pub fn http_prober(addr: SocketAddr, answers: Answers) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = Client::new();
        loop {
            let answer = match client.try_get(addr, "/health/ready").await {
                Ok(reply) => Some(reply.status == StatusCode::OK),
                Err(_) => None,
            };
            answers.lock().await.push(answer);
            if answer.is_none() {
                return;
            }
        }
    })
}

/// Starts example `name` on `addr` with no database, readiness every 100 ms and a 3 s drain
/// delay (time for the probers to see the 503 before the listener closes), and waits until
/// it is ready.
pub async fn start_for_drain(name: &str, addr: SocketAddr) -> Example {
    let child = Example::spawn(
        name,
        &[
            ("LISTEN_ADDR", addr.to_string()),
            ("DATABASE_URL", String::new()),
            ("TOWER_HEALTH_READINESS_INTERVAL", "100ms".into()),
            ("TOWER_HEALTH_DRAIN_DELAY", "3s".into()),
            ("TOWER_HEALTH_DRAIN_TIMEOUT", "20s".into()),
        ],
    );
    let http = Client::new();
    let up = eventually(LIMIT, || async {
        matches!(http.try_get(addr, "/health/ready").await, Ok(reply) if reply.status == StatusCode::OK)
    })
    .await;
    assert!(up, "the {name} example did not become ready");
    child
}
