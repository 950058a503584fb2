//! Container health checks without `curl` or `grpc_health_probe`: the application's own
//! binary probes its own endpoint on loopback and exits 0 or 1.
//!
//! Distroless and `scratch` images have no `curl` (nor `grpc_health_probe`) for Docker's
//! `HEALTHCHECK`, Compose's `healthcheck` or an ECS container health check to call. Give your
//! binary a flag of your choosing that runs [`run`] instead of the server. The target says
//! what to ask:
//!
//! | target | asks | passes on |
//! |---|---|---|
//! | `http://host:port/path` | `GET /path` over HTTP/1.1 | a 2xx status |
//! | `grpc://host:port` | `grpc.health.v1.Health/Check` for the service `""` (the whole server; with this crate's `grpc::HealthService`, readiness) over HTTP/2 | `SERVING` |
//! | `grpc://host:port/<service>` | the same for `<service>`, verbatim, `/` included (`grpc://127.0.0.1:50051/database/default`) | `SERVING` |
//!
//! `grpc://` needs the `grpc` feature. Either check waits at most the timeout (the connection
//! and the whole exchange), and returns [`ExitCode::SUCCESS`] when it passes and
//! [`ExitCode::FAILURE`] for anything else (another status; for gRPC `NOT_SERVING`,
//! `UNKNOWN`, an unknown service's `NOT_FOUND` or any other error status; a refused or
//! stalled connection; a malformed answer), with one line on stderr saying which. Every
//! failure exits 1: Docker reserves 2, and `grpc_health_probe`'s codes 2 to 4 would mean
//! "reserved" to it.
//!
//! It speaks just enough of either protocol for that, over a plain TCP connection and without
//! TLS (point it at the process's own loopback port): HTTP/1.1 by hand, gRPC as HTTP/2 in
//! clear text (h2c, prior knowledge, as a tonic server takes it) through the `h2` crate with
//! the generated `grpc.health.v1` types. No client library, no tonic transport. Everything
//! the server sends is bounded: a status line, a header block, one response message.
//!
//! # Example
//!
//! ```no_run
//! use std::process::ExitCode;
//! use std::time::Duration;
//!
//! fn main() -> ExitCode {
//!     if std::env::args().any(|arg| arg == "--health-check") {
//!         return tower_health::healthcheck::run(
//!             "http://127.0.0.1:8080/health/ready",
//!             Duration::from_secs(2),
//!         );
//!     }
//!     // ... start the server as usual
//! #   ExitCode::SUCCESS
//! }
//! ```
//!
//! A tonic server asks its own `grpc.health.v1` instead (feature `grpc`):
//!
//! ```no_run
//! # use std::process::ExitCode;
//! # use std::time::Duration;
//! # fn main() -> ExitCode {
//! if std::env::args().any(|arg| arg == "--health-check") {
//!     return tower_health::healthcheck::run("grpc://127.0.0.1:50051", Duration::from_secs(2));
//! }
//! # ExitCode::SUCCESS
//! # }
//! ```
//!
//! ```dockerfile
//! HEALTHCHECK --interval=10s --timeout=3s CMD ["/app/server", "--health-check"]
//! ```

mod error;
#[cfg(feature = "grpc")]
mod grpc;
mod http1;

use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use self::error::HealthcheckError;

/// What a check that passed heard.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Passed {
    /// The HTTP endpoint answered this 2xx status.
    Http(u16),
    /// `grpc.health.v1.Health/Check` answered `SERVING`.
    #[cfg(feature = "grpc")]
    Serving,
}

impl fmt::Display for Passed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(status) => write!(f, "answered {status}"),
            #[cfg(feature = "grpc")]
            Self::Serving => f.write_str("answered SERVING"),
        }
    }
}

/// Probes `target` once within `timeout` and returns the exit code for a container health
/// check: success when it passes, failure otherwise, with one line on stderr.
///
/// `target` is `http://host:port/path` or (feature `grpc`) `grpc://host:port[/service]`: see
/// the [module](self) for what each asks.
///
/// It asks on a thread and a runtime of its own, and so works the same from a synchronous
/// `main` (before the server's runtime exists) and from async code (`#[tokio::main]`); there,
/// it blocks the calling thread for at most `timeout`, so call it first thing, before the
/// server starts.
#[must_use]
pub fn run(target: &str, timeout: Duration) -> ExitCode {
    // Not on the calling thread: inside a runtime (`#[tokio::main]`), building another there
    // panics.
    let outcome = std::thread::scope(|scope| {
        let asked = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(HealthcheckError::Io)?;
            runtime.block_on(check(target, timeout))
        });
        asked
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    eprintln!("{}", outcome_line(target, &outcome));
    match outcome {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// The line [`run`] writes: the target redacted, since the line ends up in the container's
/// health log (`docker inspect`), which is no place for a query's credentials.
fn outcome_line(target: &str, outcome: &Result<Passed, HealthcheckError>) -> String {
    let target = crate::redact(target);
    match outcome {
        Ok(passed) => format!("healthy: {target} {passed}"),
        Err(error) => format!("unhealthy: {target}: {error}"),
    }
}

/// Probes `target` once within `timeout`; `Ok` with what it heard when the check passes.
///
/// `target` is as for [`run`]; `timeout` bounds the connection and the whole exchange.
///
/// # Errors
///
/// When the target is not one of the forms above, the connection fails, no answer comes
/// within `timeout`, the answer is malformed, or it does not pass: an HTTP status that is not
/// 2xx, a gRPC error status, or a serving status other than `SERVING`.
async fn check(target: &str, timeout: Duration) -> Result<Passed, HealthcheckError> {
    let target = Target::parse(target)?;
    let exchange = async {
        match target {
            Target::Http { authority, path } => http1::check(authority, path).await,
            #[cfg(feature = "grpc")]
            Target::Grpc { authority, service } => grpc::check(authority, service).await,
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HealthcheckError::TimedOut(timeout))?
}

/// What a check asks, read from its target.
#[derive(Debug, PartialEq, Eq)]
enum Target<'a> {
    /// `GET path` over HTTP/1.1.
    Http { authority: &'a str, path: &'a str },
    /// `grpc.health.v1.Health/Check` for `service` over h2c.
    #[cfg(feature = "grpc")]
    Grpc {
        authority: &'a str,
        service: &'a str,
    },
}

impl<'a> Target<'a> {
    fn parse(target: &'a str) -> Result<Self, HealthcheckError> {
        let invalid = || HealthcheckError::Url(crate::redact(target));
        let (scheme, rest) = target.split_once("://").ok_or_else(invalid)?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        // A port is required: a container's server rarely listens on 80, and guessing would
        // probe the wrong thing. Nothing in it may break the request line or a header, and
        // no user: the check has no credentials to send.
        let authority_ok = authority
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
            && !authority.contains('@')
            && authority.parse::<http::uri::Authority>().is_ok();
        // What follows the authority is written into a request line or shown on one line.
        let path_ok = !path.contains(|c: char| c.is_whitespace() || c.is_control());
        if !authority_ok || !path_ok {
            return Err(invalid());
        }
        match scheme {
            "http" => Ok(Self::Http {
                authority,
                path: if path.is_empty() { "/" } else { path },
            }),
            #[cfg(feature = "grpc")]
            "grpc" => Ok(Self::Grpc {
                authority,
                service: path.strip_prefix('/').unwrap_or(path),
            }),
            _ => Err(invalid()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `#[tokio::main]` code calls `run` inside a runtime, where building another one on the
    /// calling thread would panic.
    #[tokio::test]
    async fn run_answers_from_async_code_too() {
        use std::io::Write;

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // A server of its own thread: `run` blocks this runtime's one thread while it asks.
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
            // Until the check hangs up.
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        });
        let code = run(
            &format!("http://{addr}/health/ready"),
            Duration::from_secs(30),
        );
        assert_eq!(code, ExitCode::SUCCESS);
        server.join().unwrap();
    }

    #[test]
    fn http_urls_with_a_port() {
        let http = |authority, path| Target::Http { authority, path };
        assert_eq!(
            Target::parse("http://127.0.0.1:8080/health/ready?x=1").unwrap(),
            http("127.0.0.1:8080", "/health/ready?x=1")
        );
        assert_eq!(
            Target::parse("http://[::1]:9090").unwrap(),
            http("[::1]:9090", "/")
        );
        for bad in [
            "https://127.0.0.1:8080/",
            "127.0.0.1:8080/health",
            "http://localhost/health",
            "http://:8080/health",
            "http://user@127.0.0.1:8080/",
            "http://127.0.0.1:8080/a b",
            "http://127.0.0.1:99999/",
            "http://a\r\nX-Injected: 1:8080/",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[cfg(feature = "grpc")]
    #[test]
    fn grpc_targets_name_a_service_verbatim() {
        let grpc = |authority, service| Target::Grpc { authority, service };
        assert_eq!(
            Target::parse("grpc://127.0.0.1:50051").unwrap(),
            grpc("127.0.0.1:50051", "")
        );
        assert_eq!(
            Target::parse("grpc://127.0.0.1:50051/").unwrap(),
            grpc("127.0.0.1:50051", "")
        );
        assert_eq!(
            Target::parse("grpc://[::1]:50051/database/default").unwrap(),
            grpc("[::1]:50051", "database/default")
        );
        for bad in [
            "grpcs://127.0.0.1:50051",
            "grpc://127.0.0.1/my.Service",
            "grpc://127.0.0.1:50051/my Service",
            "grpc://127.0.0.1:50051/my.Service\n",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[cfg(not(feature = "grpc"))]
    #[test]
    fn grpc_targets_say_they_need_the_feature() {
        let error = Target::parse("grpc://127.0.0.1:50051").unwrap_err();
        assert!(error.to_string().contains("feature `grpc`"), "{error}");
    }

    #[test]
    fn the_target_is_shown_redacted() {
        let url = "http://127.0.0.1:8080/health/ready?access_token=hunter2";
        assert_eq!(
            outcome_line(url, &Ok(Passed::Http(200))),
            "healthy: http://127.0.0.1:8080/health/ready?access_token=*** answered 200"
        );
        let refused = Err(HealthcheckError::Status(503));
        assert!(!outcome_line(url, &refused).contains("hunter2"));
        let no_port = "http://localhost/health?access_token=hunter2";
        let invalid = Target::parse(no_port).unwrap_err();
        assert!(!outcome_line(no_port, &Err(invalid)).contains("hunter2"));
        #[cfg(feature = "grpc")]
        assert_eq!(
            outcome_line("grpc://127.0.0.1:50051", &Ok(Passed::Serving)),
            "healthy: grpc://127.0.0.1:50051 answered SERVING"
        );
    }
}
