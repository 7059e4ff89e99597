//! The names a server answers to. A browser that loads an attacker's page under a name that
//! resolves to 127.0.0.1 (DNS rebinding) sends that name as `Host`, and the page's own origin
//! as `Origin`; a server that answers only to its loopback names with its port, and only to its
//! own origin, gives such a page nothing.

use std::net::SocketAddr;

use http::HeaderMap;
use http::header::HOST;

use crate::error::{AccessError, Refusal};

/// The one flag, on every server command, that allows listening beyond this machine.
pub const ALLOW_REMOTE_FLAG: &str = "--allow-remote";

/// The `Host` values a listening server answers to, and the origins it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedNames {
    /// `None` when remote access was allowed: any `Host` is answered.
    loopback: Option<Vec<String>>,
}

impl ServedNames {
    /// The names of a server listening on `address` (the port it actually got): the bound
    /// address, `127.0.0.1`, `localhost` and `[::1]`, each with that port; any name when
    /// `allow_remote`.
    pub fn new(address: SocketAddr, allow_remote: bool) -> Self {
        if allow_remote {
            return Self { loopback: None };
        }
        let port = address.port();
        let mut names = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        let bound = address.to_string();
        if !names.contains(&bound) {
            names.push(bound);
        }
        Self {
            loopback: Some(names),
        }
    }

    /// The exact `host:port` values answered, or `None` when any is.
    pub fn loopback(&self) -> Option<&[String]> {
        self.loopback.as_deref()
    }

    /// The request's one `Host`, if the server answers to it. Compared byte for byte: another
    /// port, userinfo (`evil:1@127.0.0.1`), another name or case, a second `Host` header, or
    /// none at all is refused.
    pub fn check_host<'a>(&self, headers: &'a HeaderMap) -> Result<&'a str, Refusal> {
        let mut hosts = headers.get_all(HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Err(Refusal::BadHost);
        };
        let host = host.to_str().map_err(|_| Refusal::BadHost)?;
        match &self.loopback {
            Some(names) if !names.iter().any(|name| name == host) => Err(Refusal::BadHost),
            _ => Ok(host),
        }
    }

    /// Whether a request that says it comes from `origin`, sent to `host` (already checked),
    /// comes from the server's own pages: `http://` and one of its loopback names, or when
    /// remote access is allowed, `http://` and the `Host` it was sent to. `null`, another
    /// scheme, name or port is refused.
    pub fn check_origin(&self, origin: &str, host: &str) -> Result<(), Refusal> {
        let Some(authority) = origin.strip_prefix("http://") else {
            return Err(Refusal::BadOrigin);
        };
        let own = match &self.loopback {
            Some(names) => names.iter().any(|name| name == authority),
            None => authority == host,
        };
        if own { Ok(()) } else { Err(Refusal::BadOrigin) }
    }
}

/// Refuses to serve `server` (e.g. "the console") on a non-loopback `bind` unless
/// `allow_remote`.
pub fn check_bind(
    bind: SocketAddr,
    allow_remote: bool,
    server: &'static str,
) -> Result<(), AccessError> {
    if bind.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(AccessError::NotLoopback {
            address: bind,
            server,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use http::HeaderValue;

    use super::*;

    fn headers(hosts: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for host in hosts {
            headers.append(HOST, HeaderValue::from_str(host).unwrap());
        }
        headers
    }

    #[test]
    fn a_loopback_server_answers_only_its_loopback_names_with_its_port() {
        let served = ServedNames::new("127.0.0.1:8765".parse().unwrap(), false);
        for host in ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"] {
            assert_eq!(served.check_host(&headers(&[host])), Ok(host));
        }
        for hosts in [
            &["127.0.0.1:8766"][..],
            &["127.0.0.1"],
            &["evil:8765@127.0.0.1"],
            &["evil:1@127.0.0.1:8765"],
            &["evil.example"],
            &["evil.example:8765"],
            &["LOCALHOST:8765"],
            &["127.0.0.2:8765"],
            &[""],
            &[],
            &["127.0.0.1:8765", "evil.example"],
        ] {
            assert_eq!(
                served.check_host(&headers(hosts)),
                Err(Refusal::BadHost),
                "{hosts:?}"
            );
        }
    }

    #[test]
    fn the_bound_loopback_address_is_one_of_the_names() {
        let served = ServedNames::new("127.0.0.2:9000".parse().unwrap(), false);
        assert_eq!(
            served.loopback().unwrap(),
            [
                "127.0.0.1:9000",
                "localhost:9000",
                "[::1]:9000",
                "127.0.0.2:9000"
            ]
        );
    }

    #[test]
    fn only_the_servers_own_origin_is_accepted() {
        let served = ServedNames::new("127.0.0.1:8765".parse().unwrap(), false);
        let host = "127.0.0.1:8765";
        for origin in [
            "http://127.0.0.1:8765",
            "http://localhost:8765",
            "http://[::1]:8765",
        ] {
            assert_eq!(served.check_origin(origin, host), Ok(()), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:8766",
            "http://127.0.0.1",
            "https://127.0.0.1:8765",
            "http://evil:1@127.0.0.1:8765",
            "null",
            "",
        ] {
            assert_eq!(
                served.check_origin(origin, host),
                Err(Refusal::BadOrigin),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_remote_server_answers_any_host_and_its_own_origin_under_it() {
        let served = ServedNames::new("0.0.0.0:8765".parse().unwrap(), true);
        assert_eq!(served.loopback(), None);
        let host = "cua.internal:8765";
        assert_eq!(served.check_host(&headers(&[host])), Ok(host));
        assert_eq!(
            served.check_origin("http://cua.internal:8765", host),
            Ok(())
        );
        assert_eq!(
            served.check_origin("http://evil.example", host),
            Err(Refusal::BadOrigin)
        );
    }

    #[test]
    fn a_non_loopback_bind_needs_the_flag() {
        let remote: SocketAddr = "0.0.0.0:8700".parse().unwrap();
        assert_eq!(
            check_bind(remote, false, "the console")
                .unwrap_err()
                .to_string(),
            "0.0.0.0:8700 is not a loopback address: pass --allow-remote to serve the console \
             beyond this machine"
        );
        assert!(check_bind(remote, true, "the console").is_ok());
        assert!(check_bind("[::1]:8700".parse().unwrap(), false, "the console").is_ok());
    }
}
