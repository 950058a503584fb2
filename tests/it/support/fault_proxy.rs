//! A TCP proxy between the checks and a real server (PostgreSQL, Redis) that fails on
//! command, as networks and servers do.
//!
//! - [`FaultProxy::pass`]: new connections are connected upstream and flow.
//! - [`FaultProxy::delay`]: as `pass`, with every chunk held back for a while, both ways.
//! - [`FaultProxy::freeze`]: new connections are accepted and held: no upstream, no byte
//!   (a server stalled at connect). They flow once the proxy passes again.
//! - [`FaultProxy::stall`]: the server stops answering: established connections forward
//!   nothing (what either side sends waits in the sockets) and new ones are held as by
//!   `freeze`; `pass` lets it all through, late, in order (a server busy or paused, not gone).
//! - [`FaultProxy::refuse`]: the port is closed: connections are refused (a server that is
//!   down). `pass` opens it again on the same port.
//! - [`FaultProxy::cut`]: every established connection is reset (RST to both sides).
//! - [`FaultProxy::close`]: every established connection is closed with a FIN (a server
//!   that shut down cleanly).
//! - [`FaultProxy::blackhole`]: established connections go dark: what either side sends is
//!   read and dropped, nothing arrives (a network path gone for good). Connections opened
//!   later follow the mode.
//!
//! Self-contained (the soak bench includes this file too): it depends on tokio alone.
#![allow(dead_code, unreachable_pub)] // the soak bench includes this file as a private module

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does with new connections.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Delay(Duration),
    Freeze,
    Stall,
    Refuse,
}

/// What an established connection does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Link {
    /// Forward, with the proxy's delay (if any).
    Flow,
    /// Read and drop.
    Dark,
    /// Reset both sides and end.
    Reset,
    /// Close both sides (FIN) and end.
    Close,
}

/// How long a bind of the reopened port is retried (the port was ours a moment ago; another
/// socket can only take it in a rare race).
const REBIND_LIMIT: Duration = Duration::from_secs(10);

pub struct FaultProxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    listener: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    upstream: SocketAddr,
    mode: watch::Sender<Mode>,
    /// One switch per connection: set to `Reset` or `Dark` by `cut` and `blackhole`.
    links: Mutex<Vec<watch::Sender<Link>>>,
    count_queries: bool,
    queries: AtomicU64,
    accepted: AtomicUsize,
    open: AtomicUsize,
}

impl FaultProxy {
    /// A proxy in front of a PostgreSQL server: counts the simple-protocol queries (`Q`).
    pub async fn postgres(upstream: SocketAddr) -> Self {
        Self::start(upstream, true).await
    }

    /// A proxy in front of any TCP server (Redis, say).
    pub async fn tcp(upstream: SocketAddr) -> Self {
        Self::start(upstream, false).await
    }

    async fn start(upstream: SocketAddr, count_queries: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream,
            mode: watch::channel(Mode::Pass).0,
            links: Mutex::new(Vec::new()),
            count_queries,
            queries: AtomicU64::new(0),
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Self {
            addr,
            shared,
            listener: Mutex::new(Some(task)),
        }
    }

    /// A PostgreSQL URL through the proxy (in clear: the proxy counts protocol messages),
    /// with `user` and `password`.
    pub fn pg_url(&self, user: &str, password: &str, database: &str) -> String {
        format!(
            "postgres://{user}:{password}@{}/{database}?sslmode=disable",
            self.addr
        )
    }

    pub fn mode(&self) -> Mode {
        *self.shared.mode.borrow()
    }

    /// New connections flow (and held ones are released); a closed port is opened again.
    pub async fn pass(&self) {
        self.set_mode(Mode::Pass).await;
    }

    /// New connections flow with every chunk delayed by `by`, both ways; so do established
    /// ones from their next chunk.
    pub async fn delay(&self, by: Duration) {
        self.set_mode(Mode::Delay(by)).await;
    }

    /// New connections are accepted and held without a byte.
    pub async fn freeze(&self) {
        self.set_mode(Mode::Freeze).await;
    }

    /// The server stops answering: established connections forward nothing, either way, and
    /// new ones are held; `pass` (or `delay`) releases both, with what waited delivered in
    /// order.
    pub async fn stall(&self) {
        self.set_mode(Mode::Stall).await;
    }

    /// Closes the port: connections are refused until `pass`, `delay` or `freeze`. Held
    /// connections are reset.
    pub async fn refuse(&self) {
        self.set_mode(Mode::Refuse).await;
    }

    async fn set_mode(&self, mode: Mode) {
        let before = self.shared.mode.send_replace(mode);
        if mode == Mode::Refuse && before != Mode::Refuse {
            let task = self.listener.lock().unwrap().take();
            if let Some(task) = task {
                task.abort();
                // The listener is dropped with the task: wait for it, so the port is closed
                // when this returns.
                let _ = task.await;
            }
        } else if mode != Mode::Refuse && before == Mode::Refuse {
            let listener = rebind(self.addr).await;
            let task = tokio::spawn(accept_loop(listener, self.shared.clone()));
            *self.listener.lock().unwrap() = Some(task);
        }
    }

    /// Resets every established connection (RST to both sides).
    pub fn cut(&self) {
        for link in self.shared.links.lock().unwrap().drain(..) {
            link.send_replace(Link::Reset);
        }
    }

    /// Closes every established connection with a FIN, both sides.
    pub fn close(&self) {
        for link in self.shared.links.lock().unwrap().drain(..) {
            link.send_replace(Link::Close);
        }
    }

    /// Every established connection goes dark for good.
    pub fn blackhole(&self) {
        for link in self.shared.links.lock().unwrap().iter() {
            link.send_if_modified(|now| {
                let change = *now == Link::Flow;
                if change {
                    *now = Link::Dark;
                }
                change
            });
        }
    }

    /// Simple-protocol queries sent through the proxy (PostgreSQL proxies only).
    pub fn queries(&self) -> u64 {
        self.shared.queries.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now (held ones included).
    pub fn open(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(task) = self.listener.lock().unwrap().take() {
            task.abort();
        }
        self.cut();
        // Held connections wait on the mode; they end with its sender, which `shared` keeps
        // until the last connection task drops it: tell them to go.
        self.shared.mode.send_replace(Mode::Refuse);
    }
}

async fn rebind(addr: SocketAddr) -> TcpListener {
    let deadline = tokio::time::Instant::now() + REBIND_LIMIT;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(error) if tokio::time::Instant::now() >= deadline => {
                panic!("the proxy cannot reopen {addr}: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((client, _)) = listener.accept().await {
        let _ = client.set_nodelay(true);
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let (link, linked) = watch::channel(Link::Flow);
        let mut links = shared.links.lock().unwrap();
        // Connections that ended have dropped their receivers.
        links.retain(|link| !link.is_closed());
        links.push(link);
        drop(links);
        tokio::spawn(connection(client, shared.clone(), linked));
    }
}

/// Counts a connection open until dropped.
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(client: TcpStream, shared: Arc<Shared>, mut link: watch::Receiver<Link>) {
    shared.open.fetch_add(1, Ordering::SeqCst);
    let _open = Open(shared.clone());
    // Held while frozen; reset if the port closes or the connection is cut meanwhile.
    let mut mode = shared.mode.subscribe();
    let held = async {
        let _ = mode
            .wait_for(|mode| matches!(mode, Mode::Pass | Mode::Delay(_) | Mode::Refuse))
            .await;
        None
    };
    let ended = async {
        match link
            .wait_for(|link| matches!(link, Link::Reset | Link::Close))
            .await
        {
            Ok(link) => Some(*link),
            Err(_) => Some(Link::Reset),
        }
    };
    let ended = tokio::select! {
        ended = held => ended,
        ended = ended => ended,
    };
    match ended {
        Some(Link::Close) => return,
        Some(_) => {
            reset(client);
            return;
        }
        None => {}
    }
    if *shared.mode.borrow() == Mode::Refuse {
        reset(client);
        return;
    }
    let Ok(server) = TcpStream::connect(shared.upstream).await else {
        reset(client);
        return;
    };
    let _ = server.set_nodelay(true);
    forward(client, server, &shared, link).await;
}

/// Pumps both ways until either side closes or the link is reset or closed.
async fn forward(
    mut client: TcpStream,
    mut server: TcpStream,
    shared: &Shared,
    mut link: watch::Receiver<Link>,
) {
    let mut parser = FrontendParser::default();
    let mut from_client = vec![0; 16 * 1024];
    let mut from_server = vec![0; 16 * 1024];
    let mut mode = shared.mode.subscribe();
    let ended = loop {
        if *mode.borrow_and_update() == Mode::Stall {
            // Read nothing until the stall ends, unless the link is reset or closed meanwhile.
            tokio::select! {
                _ = mode.wait_for(|mode| *mode != Mode::Stall) => continue,
                changed = link.changed() => {
                    let now = *link.borrow_and_update();
                    match (changed, now) {
                        (Err(_), _) | (_, Link::Reset) => break Link::Reset,
                        (_, Link::Close) => break Link::Close,
                        (Ok(()), Link::Flow | Link::Dark) => continue,
                    }
                }
            }
        }
        let (read, to_server) = tokio::select! {
            read = client.read(&mut from_client) => (read, true),
            read = server.read(&mut from_server) => (read, false),
            // A stall takes hold at once, not after the next chunk.
            _ = mode.changed() => continue,
            changed = link.changed() => {
                let now = *link.borrow_and_update();
                match (changed, now) {
                    (Err(_), _) | (_, Link::Reset) => break Link::Reset,
                    (_, Link::Close) => break Link::Close,
                    (Ok(()), Link::Flow | Link::Dark) => continue,
                }
            }
        };
        let read = match read {
            // One side closed: close the other in kind.
            Ok(0) | Err(_) => break Link::Close,
            Ok(read) => read,
        };
        if *link.borrow() == Link::Dark {
            continue;
        }
        let (bytes, to) = if to_server {
            if shared.count_queries {
                let queries = parser.feed(&from_client[..read]);
                shared.queries.fetch_add(queries, Ordering::SeqCst);
            }
            (&from_client[..read], &mut server)
        } else {
            (&from_server[..read], &mut client)
        };
        let delay = match *shared.mode.borrow() {
            Mode::Delay(by) => Some(by),
            Mode::Pass | Mode::Freeze | Mode::Stall | Mode::Refuse => None,
        };
        let send = async {
            if let Some(by) = delay {
                tokio::time::sleep(by).await;
            }
            to.write_all(bytes).await
        };
        let stop = async {
            match link
                .wait_for(|link| matches!(link, Link::Reset | Link::Close))
                .await
            {
                Ok(link) => *link,
                Err(_) => Link::Reset,
            }
        };
        let stopped = tokio::select! {
            written = send => written.is_err().then_some(Link::Close),
            stopped = stop => Some(stopped),
        };
        if let Some(stopped) = stopped {
            break stopped;
        }
    };
    if ended == Link::Reset {
        reset(client);
        reset(server);
    }
}

/// Closes `stream` with an RST rather than a FIN.
fn reset(stream: TcpStream) {
    // Deprecated because a lingering close blocks the thread on drop; a zero linger does not
    // linger: the close sends an RST at once.
    #[allow(deprecated)]
    let _ = stream.set_linger(Some(Duration::ZERO));
    drop(stream);
}

/// Splits the client-to-server byte stream into PostgreSQL protocol messages.
#[derive(Default)]
struct FrontendParser {
    started: bool,
    /// Set when the stream stops looking like the protocol in clear (TLS after an
    /// `SSLRequest` the server accepted): nothing more is counted or buffered.
    gave_up: bool,
    pending: Vec<u8>,
}

impl FrontendParser {
    /// Feeds bytes; returns how many `Q` (simple query) messages they completed.
    fn feed(&mut self, bytes: &[u8]) -> u64 {
        const SSL_REQUEST: u32 = 80_877_103;
        const GSSENC_REQUEST: u32 = 80_877_104;
        const MAX_MESSAGE: usize = 1 << 20;
        if self.gave_up {
            return 0;
        }
        self.pending.extend_from_slice(bytes);
        let mut queries = 0;
        loop {
            if !self.started {
                if self.pending.len() < 8 {
                    return queries;
                }
                let len = u32::from_be_bytes(self.pending[..4].try_into().unwrap()) as usize;
                if !(8..=MAX_MESSAGE).contains(&len) {
                    self.gave_up = true;
                    self.pending = Vec::new();
                    return queries;
                }
                if self.pending.len() < len {
                    return queries;
                }
                let code = u32::from_be_bytes(self.pending[4..8].try_into().unwrap());
                self.pending.drain(..len);
                self.started = code != SSL_REQUEST && code != GSSENC_REQUEST;
                continue;
            }
            if self.pending.len() < 5 {
                return queries;
            }
            let len = u32::from_be_bytes(self.pending[1..5].try_into().unwrap()) as usize;
            if !(4..=MAX_MESSAGE).contains(&len) {
                self.gave_up = true;
                self.pending = Vec::new();
                return queries;
            }
            if self.pending.len() < len + 1 {
                return queries;
            }
            if self.pending[0] == b'Q' {
                queries += 1;
            }
            self.pending.drain(..=len);
        }
    }
}
