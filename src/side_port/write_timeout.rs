//! The side ports' write timeout: how long a connection's writes may wait for its peer.
//!
//! hyper's `header_read_timeout` runs only while a request head is being read. A client that
//! pipelines requests and never reads the answers stops the connection elsewhere: its buffers
//! fill, the server's next write waits on the full socket, the server stops reading, and
//! nothing times out. The connection is held for as long as the client likes, and a port
//! with a connection cap can be filled with such clients.
//!
//! [`WriteTimeout`] wraps the accepted stream and fails a write (or flush, or shutdown) with
//! [`io::ErrorKind::TimedOut`] once it has waited the timeout without any progress; the
//! connection then ends with that error. Any progress starts the clock over, so a client that
//! reads, however slowly, keeps its connection while it keeps reading. Reads are not timed.
//!
//! A write that completes at once touches no timer. The first write that has to wait arms one
//! (a boxed [`Sleep`], so the wrapper stays [`Unpin`] over an `Unpin` stream) and the next one
//! that completes drops it.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::env::saturate;

pin_project! {
    /// An I/O stream whose writes fail with [`io::ErrorKind::TimedOut`] after waiting
    /// `timeout` on the peer with no progress.
    #[derive(Debug)]
    pub(crate) struct WriteTimeout<IO> {
        #[pin]
        io: IO,
        timeout: Duration,
        // Armed by the first write that waits, dropped by the next that completes.
        stall: Option<Pin<Box<Sleep>>>,
        // Where a side port's accept loop reads how long this connection has been stalled.
        watch: Option<Arc<StallWatch>>,
    }
}

impl<IO> WriteTimeout<IO> {
    /// Wraps `io`: a write, flush or shutdown that makes no progress for `timeout` fails.
    ///
    /// The timeout is brought into 1 ms ..= 1 year ([`MIN_DURATION`](crate::env::MIN_DURATION)
    /// ..= [`MAX_DURATION`](crate::env::MAX_DURATION)): a shorter one (zero included) is 1 ms,
    /// which a timer can wait, and a longer one is a year, which a deadline can be computed
    /// from.
    pub(crate) fn new(io: IO, timeout: Duration) -> Self {
        Self {
            io,
            timeout: saturate(timeout),
            stall: None,
            watch: None,
        }
    }

    /// Publishes the start of each stall to `watch`.
    pub(crate) fn watched(mut self, watch: Arc<StallWatch>) -> Self {
        self.watch = Some(watch);
        self
    }
}

impl<IO: AsyncRead> AsyncRead for WriteTimeout<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite> AsyncWrite for WriteTimeout<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let poll = this.io.poll_write(cx, buf);
        timed(poll, cx, *this.timeout, this.stall, this.watch.as_deref())
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let poll = this.io.poll_write_vectored(cx, bufs);
        timed(poll, cx, *this.timeout, this.stall, this.watch.as_deref())
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let poll = this.io.poll_flush(cx);
        timed(poll, cx, *this.timeout, this.stall, this.watch.as_deref())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let poll = this.io.poll_shutdown(cx);
        timed(poll, cx, *this.timeout, this.stall, this.watch.as_deref())
    }
}

/// Passes a completed write through (ending any stall) and times a waiting one.
fn timed<T>(
    poll: Poll<io::Result<T>>,
    cx: &mut Context<'_>,
    timeout: Duration,
    stall: &mut Option<Pin<Box<Sleep>>>,
    watch: Option<&StallWatch>,
) -> Poll<io::Result<T>> {
    if poll.is_ready() {
        if stall.take().is_some()
            && let Some(watch) = watch
        {
            watch.set(None);
        }
        return poll;
    }
    let sleep = stall.get_or_insert_with(|| {
        let sleep = tokio::time::sleep(timeout);
        if let Some(watch) = watch {
            watch.set(Some(Instant::now()));
        }
        Box::pin(sleep)
    });
    match sleep.as_mut().poll(cx) {
        Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "write timed out: no progress for {}",
                humantime::format_duration(timeout)
            ),
        ))),
        Poll::Pending => Poll::Pending,
    }
}

/// Since when a connection's writes have been waiting, shared between a [`WriteTimeout`] and
/// the accept loop that may evict it.
#[derive(Debug, Default)]
pub(crate) struct StallWatch {
    since: Mutex<Option<Instant>>,
}

impl StallWatch {
    /// When the current stall began, or `None` while writes complete.
    pub(crate) fn since(&self) -> Option<Instant> {
        *self.since.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // Called only when a stall begins or ends, never on the fast path.
    fn set(&self, since: Option<Instant>) {
        *self.since.lock().unwrap_or_else(PoisonError::into_inner) = since;
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_never_reads_times_the_write_out() {
        let (client, _server) = duplex(64);
        let mut client = WriteTimeout::new(client, TIMEOUT);
        let error = client.write_all(&[0; 1024]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(error.to_string(), "write timed out: no progress for 10s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_keeps_reading_never_does() {
        let (client, mut server) = duplex(64);
        let mut client = WriteTimeout::new(client, TIMEOUT);
        let reader = tokio::spawn(async move {
            let mut total = 0;
            let mut chunk = [0; 16];
            loop {
                // Less than the timeout between reads, but many timeouts in all.
                tokio::time::sleep(TIMEOUT - Duration::from_millis(1)).await;
                match server.read(&mut chunk).await.unwrap() {
                    0 => return total,
                    read => total += read,
                }
            }
        });
        client.write_all(&[0; 1024]).await.unwrap();
        client.shutdown().await.unwrap();
        drop(client);
        assert_eq!(reader.await.unwrap(), 1024);
    }

    #[tokio::test(start_paused = true)]
    async fn the_watch_sees_a_stall_begin_and_end() {
        let (client, mut server) = duplex(64);
        let watch = Arc::new(StallWatch::default());
        let mut client = WriteTimeout::new(client, TIMEOUT);
        client.watch = Some(watch.clone());
        client.write_all(&[0; 64]).await.unwrap();
        assert_eq!(watch.since(), None, "a write that completes at once");

        let write = tokio::spawn(async move { client.write_all(&[0; 64]).await });
        tokio::time::sleep(TIMEOUT / 2).await;
        assert!(watch.since().is_some(), "waiting on a full buffer");
        let mut chunk = [0; 128];
        server.read_exact(&mut chunk[..64]).await.unwrap();
        write.await.unwrap().unwrap();
        assert_eq!(watch.since(), None, "progress ends the stall");
    }

    #[test]
    fn a_timeout_out_of_range_takes_the_nearest_bound() {
        use crate::config::{MAX_DURATION, MIN_DURATION};

        for (timeout, taken) in [
            (Duration::ZERO, MIN_DURATION),
            (Duration::from_micros(10), MIN_DURATION),
            (TIMEOUT, TIMEOUT),
            (Duration::MAX, MAX_DURATION),
        ] {
            assert_eq!(
                WriteTimeout::new(tokio::io::empty(), timeout).timeout,
                taken,
                "{timeout:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_fails_a_stalled_write_after_a_millisecond() {
        let (client, _server) = duplex(64);
        let mut client = WriteTimeout::new(client, Duration::ZERO);
        let started = Instant::now();
        let error = client.write_all(&[0; 1024]).await.unwrap_err();
        assert_eq!(error.to_string(), "write timed out: no progress for 1ms");
        let waited = started.elapsed();
        assert!(
            (Duration::from_millis(1)..=Duration::from_millis(2)).contains(&waited),
            "{waited:?}"
        );
    }
}
