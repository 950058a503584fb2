//! The `Host` and `Origin` allowlist of loopback binds: blocks DNS rebinding, where a web page
//! on a domain that resolves to 127.0.0.1 reads the server from the visitor's browser.

use std::net::IpAddr;

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

#[derive(Clone, Debug)]
pub(crate) struct HostPolicy {
    /// Lower-cased host names; IPv6 literals in brackets.
    allowed: Vec<String>,
    port: u16,
}

impl HostPolicy {
    pub(crate) fn new(bind: IpAddr, port: u16, extra: &[String]) -> Self {
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).into();
        allowed.push(match bind {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        });
        allowed.extend(extra.iter().cloned());
        Self { allowed, port }
    }

    /// Whether the request's `Host` (when present; browsers always send it) and `Origin` (when
    /// present) name this server.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        let host_ok = headers
            .get(HOST)
            .is_none_or(|host| host.to_str().is_ok_and(|host| self.allows_authority(host)));
        let origin_ok = headers.get(ORIGIN).is_none_or(|origin| {
            origin.to_str().is_ok_and(|origin| {
                origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    .is_some_and(|authority| self.allows_authority(authority))
            })
        });
        host_ok && origin_ok
    }

    /// `name` or `name:port`, the port being this server's.
    fn allows_authority(&self, authority: &str) -> bool {
        let (name, port) = match authority.rfind(':') {
            // `[::1]` alone: the colon is inside the brackets.
            Some(colon) if !authority[colon..].contains(']') => {
                (&authority[..colon], Some(&authority[colon + 1..]))
            }
            _ => (authority, None),
        };
        let port_ok = port.is_none_or(|port| port.parse() == Ok(self.port));
        port_ok
            && self
                .allowed
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn allows(headers: &[(&'static str, &'static str)]) -> bool {
        let policy = HostPolicy::new(
            IpAddr::from([127, 0, 0, 1]),
            9090,
            &["admin.internal".into()],
        );
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, HeaderValue::from_static(value));
        }
        policy.allows(&map)
    }

    #[test]
    fn loopback_names_the_bind_address_and_extras_pass() {
        for host in [
            "localhost",
            "LOCALHOST:9090",
            "127.0.0.1:9090",
            "[::1]:9090",
            "[::1]",
            "admin.internal",
        ] {
            assert!(allows(&[("host", host)]), "{host}");
        }
        assert!(allows(&[]), "no Host at all (HTTP/1.0)");
        assert!(allows(&[
            ("host", "localhost:9090"),
            ("origin", "http://localhost:9090")
        ]));
    }

    #[test]
    fn other_names_ports_and_origins_are_refused() {
        for host in [
            "evil.example",
            "evil.example:9090",
            "localhost:8080",
            "127.0.0.1.nip.io",
            "[::2]",
            "localhost:x",
        ] {
            assert!(!allows(&[("host", host)]), "{host}");
        }
        for origin in [
            "http://evil.example",
            "null",
            "https://localhost:1",
            "file://",
        ] {
            assert!(
                !allows(&[("host", "localhost"), ("origin", origin)]),
                "{origin}"
            );
        }
    }
}
