//! A TCP proxy that can freeze the connections through it: a server that accepts and then
//! never answers, and recovers when thawed.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

pub struct TcpProxy {
    pub addr: SocketAddr,
    /// Where new connections go.
    upstream: Arc<Mutex<SocketAddr>>,
    frozen: watch::Sender<bool>,
    pumps: Arc<Mutex<Vec<AbortHandle>>>,
    task: JoinHandle<()>,
}

impl TcpProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        Self::start_on(([127, 0, 0, 1], 0).into(), upstream).await
    }

    /// A proxy listening on `addr` (a port that refused connections until now, as a
    /// database that comes back on its address), forwarding to `upstream`.
    pub async fn start_on(addr: SocketAddr, upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (frozen, _) = watch::channel(false);
        let pumps = Arc::new(Mutex::new(Vec::new()));
        let upstream = Arc::new(Mutex::new(upstream));
        let (frozen_tx, task_pumps, to) = (frozen.clone(), pumps.clone(), upstream.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = *to.lock().unwrap();
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let up = tokio::spawn(pump(client_read, server_write, frozen_tx.subscribe()));
                let down = tokio::spawn(pump(server_read, client_write, frozen_tx.subscribe()));
                let mut pumps = task_pumps.lock().unwrap();
                pumps.push(up.abort_handle());
                pumps.push(down.abort_handle());
            }
        });
        Self {
            addr,
            upstream,
            frozen,
            pumps,
            task,
        }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Stops forwarding, in both directions, on every connection, open or to come: the
    /// server accepts and never answers.
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Sends the connections to come to `upstream`; those open stay where they are (as
    /// after a failover behind a DNS name).
    pub fn retarget(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        for pump in self.pumps.lock().unwrap().drain(..) {
            pump.abort();
        }
        self.task.abort();
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buf).await else {
            return;
        };
        if read == 0 {
            return;
        }
        if frozen.wait_for(|frozen| !frozen).await.is_err() {
            return;
        }
        if to.write_all(&buf[..read]).await.is_err() {
            return;
        }
    }
}
