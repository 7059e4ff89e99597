//! Where any actor may go: scheme, host and port, no embedded credentials, optional patterns.

use regex::Regex;
use url::Url;

/// A malformed allowlist entry.
#[derive(Debug, thiserror::Error)]
pub enum AllowlistError {
    #[error("allowlist pattern `{pattern}` does not compile")]
    BadPattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("allowlist host `{0}` is not `host`, `host:port`, `[v6]` or `[v6]:port`")]
    BadHost(String),
}

/// Why a URL was refused. The reason never echoes credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedUrl {
    pub url: String,
    pub reason: String,
}

/// The navigation allowlist. A URL is allowed when its scheme is http or https, it carries no
/// credentials, and its `host[:port]` is listed (a host listed without a port allows every
/// port) or the whole URL matches a pattern. A narrowing, when present, must also allow it:
/// a capability can only narrow what the policy file allows, never re-open it.
#[derive(Debug, Clone)]
pub struct Allowlist {
    hosts: Vec<HostEntry>,
    patterns: Vec<Regex>,
    narrowing: Option<Box<Allowlist>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

impl Allowlist {
    /// Builds an allowlist from `host[:port]` entries and URL regexes (anchored at the start).
    pub fn new(hosts: &[String], patterns: &[String]) -> Result<Self, AllowlistError> {
        let hosts = hosts
            .iter()
            .map(|entry| parse_host_entry(entry))
            .collect::<Result<_, _>>()?;
        let patterns = patterns
            .iter()
            .map(|pattern| {
                let anchored = if pattern.starts_with('^') {
                    pattern.clone()
                } else {
                    format!("^(?:{pattern})")
                };
                Regex::new(&anchored).map_err(|source| AllowlistError::BadPattern {
                    pattern: pattern.clone(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            hosts,
            patterns,
            narrowing: None,
        })
    }

    /// This allowlist further narrowed to `domains` (entries `host[:port]` or full URLs).
    /// An empty list narrows nothing.
    pub fn narrowed(&self, domains: &[String]) -> Result<Self, AllowlistError> {
        if domains.is_empty() {
            return Ok(self.clone());
        }
        let hosts = domains
            .iter()
            .map(|domain| match Url::parse(domain) {
                Ok(url) if url.host_str().is_some() => {
                    let host = url.host_str().unwrap_or_default().to_string();
                    Ok(format!(
                        "{host}{}",
                        url.port()
                            .map(|port| format!(":{port}"))
                            .unwrap_or_default()
                    ))
                }
                _ => Ok(domain.clone()),
            })
            .collect::<Result<Vec<_>, AllowlistError>>()?;
        let mut narrowed = self.clone();
        let inner = Allowlist::new(&hosts, &[])?;
        narrowed.narrowing = Some(Box::new(match narrowed.narrowing.take() {
            Some(previous) => Allowlist {
                narrowing: Some(previous),
                ..inner
            },
            None => inner,
        }));
        Ok(narrowed)
    }

    /// Checks one URL.
    pub fn check(&self, raw: &str) -> Result<(), BlockedUrl> {
        let block = |reason: &str| BlockedUrl {
            url: display_url(raw),
            reason: reason.to_string(),
        };
        if raw.trim().is_empty() {
            return Err(block("empty URL"));
        }
        let url = Url::parse(raw).map_err(|_| block("not a parseable absolute URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(block(&format!(
                "scheme `{}` is not http or https",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(block("URL carries embedded credentials"));
        }
        let Some(host) = url.host_str() else {
            return Err(block("URL has no host"));
        };
        let host = host.to_ascii_lowercase();
        let port = url.port_or_known_default();
        let host_listed = self
            .hosts
            .iter()
            .any(|entry| entry.host == host && entry.port.is_none_or(|p| Some(p) == port));
        let pattern_listed = self
            .patterns
            .iter()
            .any(|pattern| pattern.is_match(url.as_str()));
        if !host_listed && !pattern_listed {
            return Err(block(&format!(
                "host `{host}{}` is not on the allowlist",
                url.port().map(|p| format!(":{p}")).unwrap_or_default()
            )));
        }
        if let Some(narrowing) = &self.narrowing {
            narrowing.check(raw).map_err(|blocked| BlockedUrl {
                reason: format!(
                    "outside the capability's allowed domains: {}",
                    blocked.reason
                ),
                ..blocked
            })?;
        }
        Ok(())
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; the host as a URL's `host_str` gives it (an IPv6
/// literal keeps its brackets). Anything else, an unbracketed IPv6 literal included, could never
/// match a URL and is refused as a misconfiguration.
fn parse_host_entry(entry: &str) -> Result<HostEntry, AllowlistError> {
    let entry = entry.trim().to_ascii_lowercase();
    let bad = || AllowlistError::BadHost(entry.clone());
    let (host, port) = match entry.strip_prefix('[') {
        Some(bracketed) => {
            let (address, after) = bracketed.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(bad)?),
            };
            (format!("[{address}]"), port)
        }
        None => match entry.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (entry.clone(), None),
        },
    };
    let port = port
        .map(|port| port.parse::<u16>().map_err(|_| bad()))
        .transpose()?;
    let inner = host.trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() || ['/', '@', '[', ']'].iter().any(|c| inner.contains(*c)) {
        return Err(bad());
    }
    if !host.starts_with('[') && host.contains(':') {
        return Err(bad());
    }
    Ok(HostEntry { host, port })
}

/// The URL as it may appear in evidence: credentials removed.
fn display_url(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        Err(_) => raw.chars().take(200).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(hosts: &[&str], patterns: &[&str]) -> Allowlist {
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        Allowlist::new(&hosts, &patterns).unwrap()
    }

    fn check(allowlist: &Allowlist, url: &str, expect: Result<(), &str>) {
        let got = allowlist.check(url).map_err(|blocked| blocked.reason);
        match expect {
            Ok(()) => assert_eq!(got, Ok(()), "{url}"),
            Err(fragment) => {
                let reason = got.expect_err(url);
                assert!(
                    reason.contains(fragment),
                    "{url}: {reason:?} lacks {fragment:?}"
                );
            }
        }
    }

    #[test]
    fn hosts_ports_schemes_and_credentials() {
        let allowlist = list(&["127.0.0.1", "localhost:8811"], &[]);
        check(&allowlist, "http://127.0.0.1:9/x", Ok(()));
        check(&allowlist, "http://localhost:8811/", Ok(()));
        check(
            &allowlist,
            "http://localhost:8812/",
            Err("not on the allowlist"),
        );
        check(
            &allowlist,
            "https://evil.example/",
            Err("not on the allowlist"),
        );
        check(&allowlist, "ftp://127.0.0.1/", Err("scheme `ftp`"));
        check(
            &allowlist,
            "javascript:alert(1)",
            Err("scheme `javascript`"),
        );
        check(&allowlist, "http://user:pw@127.0.0.1/", Err("credentials"));
        // A user name alone, or a password alone, is a credential too.
        check(&allowlist, "http://user@127.0.0.1/", Err("credentials"));
        check(&allowlist, "http://:pw@127.0.0.1/", Err("credentials"));
        check(&allowlist, "", Err("empty"));
        check(&allowlist, "not a url", Err("parseable"));
        check(
            &allowlist,
            "http://127.0.0.1.evil.example/",
            Err("not on the allowlist"),
        );
        let blocked = allowlist
            .check("http://user:secretpw@evil.example/")
            .unwrap_err();
        assert_eq!(
            blocked.url, "http://evil.example/",
            "credentials removed, the rest kept"
        );
    }

    #[test]
    fn host_entries_are_hosts_with_an_optional_port_or_refused() {
        let v6 = list(&["[::1]", "[::2]:8811"], &[]);
        check(&v6, "http://[::1]:9/", Ok(()));
        check(&v6, "http://[::2]:8811/", Ok(()));
        check(&v6, "http://[::2]:8812/", Err("not on the allowlist"));
        for bad in [
            "::1",
            "a:b:80",
            "host:port",
            "a/b",
            "a@b",
            "",
            "[::1",
            "[::1]x",
            "[]",
            "host:99999",
        ] {
            assert!(
                Allowlist::new(&[bad.to_owned()], &[]).is_err(),
                "{bad:?} is not a host entry"
            );
        }
    }

    #[test]
    fn hosts_and_patterns_each_admit_on_their_own() {
        let allowlist = list(&["localhost:8811"], &[r"https://docs\.example/"]);
        check(&allowlist, "http://localhost:8811/", Ok(()));
        check(&allowlist, "https://docs.example/page", Ok(()));
        check(
            &allowlist,
            "https://other.example/",
            Err("not on the allowlist"),
        );
    }

    #[test]
    fn patterns_match_whole_urls_from_the_start() {
        let allowlist = list(&[], &[r"https?://(localhost|127\.0\.0\.1):881[12](/.*)?$"]);
        check(&allowlist, "http://localhost:8811/search", Ok(()));
        check(
            &allowlist,
            "http://localhost:8813/",
            Err("not on the allowlist"),
        );
        check(
            &allowlist,
            "http://evil.example/?http://localhost:8811/",
            Err("not on the allowlist"),
        );
    }

    #[test]
    fn narrowing_never_reopens() {
        let allowlist = list(&["127.0.0.1", "localhost"], &[r"https?://wide\.example/"]);
        let narrowed = allowlist
            .narrowed(&["http://127.0.0.1:8811".to_string()])
            .unwrap();
        check(&narrowed, "http://127.0.0.1:8811/", Ok(()));
        check(&narrowed, "http://127.0.0.1:8812/", Err("allowed domains"));
        check(&narrowed, "http://localhost:8811/", Err("allowed domains"));
        check(&narrowed, "https://wide.example/", Err("allowed domains"));
        // A bare `host:port` (which a URL parser reads as a scheme) narrows to that host and
        // port, not to nothing.
        let bare = allowlist.narrowed(&["localhost:8811".to_string()]).unwrap();
        check(&bare, "http://localhost:8811/", Ok(()));
        check(&bare, "http://localhost:8812/", Err("allowed domains"));
        // A second narrowing keeps the first: nothing outside both is reachable.
        let twice = allowlist
            .narrowed(&["http://127.0.0.1:8811".to_string()])
            .unwrap()
            .narrowed(&["localhost".to_string()])
            .unwrap();
        check(&twice, "http://localhost:8811/", Err("allowed domains"));
        check(&twice, "http://127.0.0.1:8811/", Err("allowed domains"));
        let outside = list(&["127.0.0.1"], &[])
            .narrowed(&["evil.example".to_string()])
            .unwrap();
        check(
            &outside,
            "http://evil.example/",
            Err("not on the allowlist"),
        );
    }
}
