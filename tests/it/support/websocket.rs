//! WebSocket clients of the test applications' `/ws` (a hello naming the server, then an echo
//! of each message, and a close frame 1001 at the drain's turn): how one ended, and clients
//! that echo numbered messages and reconnect when closed, for a rolling restart behind a
//! load balancer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

use super::{LIMIT, bounded};

pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How a WebSocket client saw its connection end.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// A close frame with this code, then the end of the stream: a clean close.
    Closed(Option<u16>),
    /// Anything else (a reset, the stream cut without a close frame): what must not happen.
    Abnormal(String),
}

/// Reads `socket` until it ends (answering the close frame, as a client does), and says how.
/// Echoes that arrive meanwhile are skipped.
pub async fn until_end(socket: &mut Socket) -> End {
    let mut close = None;
    loop {
        match socket.next().await {
            Some(Ok(Message::Close(frame))) => {
                close = Some(frame.map(|frame| u16::from(frame.code)));
            }
            Some(Ok(_)) => {}
            None => {
                return match close {
                    Some(code) => End::Closed(code),
                    None => End::Abnormal("ended without a close frame".into()),
                };
            }
            Some(Err(error)) => return End::Abnormal(format!("{error:?}")),
        }
    }
}

/// A WebSocket to `url` that has echoed one message (after the server's hello, if it says
/// one: `server <name>`).
pub async fn echoing_socket(url: &str) -> Socket {
    let (mut socket, _) = bounded("a WebSocket handshake", connect_async(url))
        .await
        .expect("the WebSocket handshake");
    socket.send(Message::text("hello")).await.unwrap();
    let mut echo = bounded("the echo", socket.next()).await;
    if matches!(&echo, Some(Ok(Message::Text(text))) if text.as_str().starts_with("server ")) {
        echo = bounded("the echo", socket.next()).await;
    }
    assert!(
        matches!(&echo, Some(Ok(Message::Text(text))) if text.as_str() == "hello"),
        "{echo:?}"
    );
    socket
}

// The rolling restarts' only (behind HAProxy, behind the proxies), from here on.
#[cfg_attr(
    not(any(feature = "haproxy-agent", feature = "admin")),
    allow(dead_code)
)]
/// What the WebSocket clients saw, all together.
#[derive(Debug, Default)]
pub struct Tally {
    /// Connections that ended with a close frame 1001.
    pub clean_closes: usize,
    /// Connections that ended any other way.
    pub abnormal: Vec<String>,
    /// Messages echoed.
    pub echoed: u64,
    /// Messages sent again on a new connection, having gone unanswered on one that closed.
    pub resent: u64,
    /// Messages never echoed by the end (a client that gave up with one unanswered).
    pub lost: u64,
    /// Echoes out of order or duplicated.
    pub out_of_order: u64,
    /// The server each client's first connection reached.
    pub first: Vec<String>,
    /// Each connection after the first: when, and to which server.
    pub reconnects: Vec<(Instant, String)>,
}

#[cfg_attr(
    not(any(feature = "haproxy-agent", feature = "admin")),
    allow(dead_code)
)]
/// A client: connects to `/ws` through `frontend` (a load balancer), reads the server's hello
/// (`server <name>`), sends numbered messages one at a time and
/// checks each echo; on a close, reconnects and sends the unanswered one again. Stops
/// when `stop` is set and its last message is answered.
pub async fn client(
    id: usize,
    frontend: SocketAddr,
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
) {
    let url = format!("ws://{frontend}/ws");
    let mut seq: u64 = 0;
    // A message sent and not yet echoed (sent again on the next connection).
    let mut pending = false;
    let mut first = true;
    'connections: loop {
        if stop.load(Ordering::SeqCst) && !pending {
            return;
        }
        let Ok(Ok((mut socket, _))) =
            tokio::time::timeout(LIMIT, connect_async(url.as_str())).await
        else {
            let mut tally = tally.lock().unwrap();
            tally.abnormal.push(format!("{id}: cannot connect"));
            tally.lost += u64::from(pending);
            return;
        };
        let server = match socket.next().await {
            Some(Ok(Message::Text(hello))) => hello.as_str().to_owned(),
            other => {
                let mut tally = tally.lock().unwrap();
                tally.abnormal.push(format!("{id}: no hello: {other:?}"));
                tally.lost += u64::from(pending);
                return;
            }
        };
        if first {
            tally.lock().unwrap().first.push(server);
        } else {
            tally
                .lock()
                .unwrap()
                .reconnects
                .push((Instant::now(), server));
        }
        first = false;
        loop {
            if stop.load(Ordering::SeqCst) && !pending {
                let _ = socket.close(None).await;
                return;
            }
            let message = format!("{id}:{seq}");
            if pending {
                tally.lock().unwrap().resent += 1;
            }
            pending = true;
            if socket.send(Message::text(message.clone())).await.is_err() {
                // The server closed meanwhile: read how, then reconnect.
                let end = until_end(&mut socket).await;
                record_end(&tally, id, end);
                continue 'connections;
            }
            match socket.next().await {
                Some(Ok(Message::Text(echo))) if echo.as_str() == message => {
                    pending = false;
                    tally.lock().unwrap().echoed += 1;
                    seq += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Some(Ok(Message::Text(_))) => {
                    pending = false;
                    tally.lock().unwrap().out_of_order += 1;
                    seq += 1;
                }
                Some(Ok(Message::Close(frame))) => {
                    // The close came before the echo: the message goes again.
                    let code = frame.map(|frame| u16::from(frame.code));
                    let end = match until_end(&mut socket).await {
                        End::Abnormal(why) if !why.contains("without a close frame") => {
                            End::Abnormal(why)
                        }
                        _ => End::Closed(code),
                    };
                    record_end(&tally, id, end);
                    continue 'connections;
                }
                Some(Ok(_)) => {}
                None => {
                    let end = End::Abnormal("ended without a close frame".into());
                    record_end(&tally, id, end);
                    continue 'connections;
                }
                Some(Err(error)) => {
                    record_end(&tally, id, End::Abnormal(format!("{error:?}")));
                    continue 'connections;
                }
            }
        }
    }
}

#[cfg_attr(
    not(any(feature = "haproxy-agent", feature = "admin")),
    allow(dead_code)
)]
fn record_end(tally: &Mutex<Tally>, id: usize, end: End) {
    let mut tally = tally.lock().unwrap();
    match end {
        End::Closed(Some(1001)) => tally.clean_closes += 1,
        other => tally.abnormal.push(format!("{id}: {other:?}")),
    }
}
