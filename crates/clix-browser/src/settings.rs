//! The `[browser]` section of the configuration, and what it means for
//! the hosts a page may reach.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How the browser is found, kept and confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserSettings {
    /// The Chromium to run; empty looks for `chromium-headless-shell`,
    /// `chromium`, `chromium-browser` and `google-chrome` on PATH. (Not an
    /// `Option`: the config file knows its keys from the defaults, and a
    /// `None` has no key there.)
    pub executable: PathBuf,
    /// Seconds without a `browser` command before the browser is closed.
    pub idle_secs: u64,
    /// Hosts pages may reach besides loopback and `file://` (`example.com`,
    /// `*.internal`). With `sandbox.network = true` every host may.
    pub allow: Vec<String>,
    /// Allow `browser eval JS` (off: scripts of the agent's own run in the page).
    pub eval: bool,
    /// Longest wait for a page to load, in seconds (capped by the line's time limit).
    pub load_timeout_secs: u64,
    /// The window's size in CSS pixels, as `WIDTHxHEIGHT`.
    pub window: String,
    /// How a page's dialog (alert, confirm, prompt, beforeunload) is
    /// answered when `browser dialog` armed no answer: "dismiss" or "accept".
    pub dialog: String,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            executable: PathBuf::new(),
            idle_secs: 600,
            allow: Vec::new(),
            eval: false,
            load_timeout_secs: 15,
            window: "1280x800".into(),
            dialog: "dismiss".into(),
        }
    }
}

impl BrowserSettings {
    /// The window size, or what is wrong with the setting.
    pub(crate) fn window_size(&self) -> Result<(u32, u32), String> {
        let parsed =
            self.window.split_once('x').and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
        parsed.filter(|&(w, h): &(u32, u32)| (1..=8192).contains(&w) && (1..=8192).contains(&h)).ok_or_else(|| {
            format!(
                "[browser] window = {:?} is not a size; give WIDTHxHEIGHT in pixels, each 1 to 8192, e.g. \"1280x800\"",
                self.window
            )
        })
    }
}

/// The browser must be able to wait, stay open and draw its window.
impl clix_common::settings::Validate for BrowserSettings {
    fn validate(&self) -> Vec<clix_common::settings::BadValue> {
        use clix_common::settings::{BadValue, seconds};
        let mut bad: Vec<BadValue> = [
            seconds("idle_secs", self.idle_secs, "without a browser command before it closes"),
            seconds("load_timeout_secs", self.load_timeout_secs, "of waiting for a page"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if self.window_size().is_err() {
            bad.push(BadValue::new("window", format!("{:?}", self.window), "WIDTHxHEIGHT in pixels, each 1 to 8192"));
        }
        if !matches!(self.dialog.as_str(), "dismiss" | "accept") {
            bad.push(BadValue::new("dialog", format!("{:?}", self.dialog), "\"dismiss\" or \"accept\""));
        }
        bad
    }
}

/// Which hosts pages may reach: loopback and `file://` always; the named
/// hosts of `[browser] allow`; every host when the network is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRules {
    /// The sandbox's network is on: no restriction.
    pub open: bool,
    /// Allowed patterns: a host, or `*.domain` for its subdomains.
    pub allow: Vec<String>,
}

const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

impl HostRules {
    /// Whether a page may load `url`.
    pub fn allows(&self, url: &str) -> bool {
        match host_of(url) {
            None => true,
            Some(host) => {
                self.open
                    || LOOPBACK.contains(&host.as_str())
                    || host.ends_with(".localhost")
                    || self.allow.iter().any(|pattern| matches(pattern, &host))
            }
        }
    }

    /// Chromium's `--host-resolver-rules`: every name (and IP literal) fails
    /// to resolve except loopback and the allowed ones. `None` when open.
    pub(crate) fn resolver_rules(&self) -> Option<String> {
        if self.open {
            return None;
        }
        let mut rules = vec!["MAP * ~NOTFOUND".to_string()];
        for host in
            LOOPBACK.iter().map(|h| h.to_string()).chain(["*.localhost".into()]).chain(self.allow.iter().cloned())
        {
            rules.push(format!("EXCLUDE {host}"));
        }
        Some(rules.join(", "))
    }
}

/// `pattern` (`host` or `*.domain`) against a lower-case host.
fn matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(domain) => host.ends_with(&format!(".{domain}")),
        None => host == pattern,
    }
}

/// The lower-case host of an `http(s)://` or `ws(s)://` URL; `None` for
/// other schemes (`file:`, `about:`, `data:`), which reach no network.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https" | "ws" | "wss") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next().unwrap_or(host_port)
    } else {
        host_port.split(':').next().unwrap_or(host_port)
    };
    Some(host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_files_and_allowed_hosts_pass_the_rest_do_not() {
        let rules = HostRules { open: false, allow: vec!["example.com".into(), "*.internal".into()] };
        let table = [
            ("http://127.0.0.1:8080/x", true),
            ("http://localhost:3000/", true),
            ("http://[::1]:9/", true),
            ("http://app.localhost/", true),
            ("file:///ws/page.html", true),
            ("about:blank", true),
            ("https://example.com/a", true),
            ("https://EXAMPLE.com", true),
            ("https://www.example.com/", false),
            ("http://api.internal/v1", true),
            ("http://internal/", false),
            ("http://1.1.1.1/", false),
            ("https://user@evil.com/", false),
            ("http://localhost.evil.com/", false),
        ];
        for (url, allowed) in table {
            assert_eq!(rules.allows(url), allowed, "{url}");
        }
        assert!(HostRules { open: true, allow: vec![] }.allows("https://anything.org"));
    }

    #[test]
    fn resolver_rules_refuse_everything_but_the_allowed() {
        let rules = HostRules { open: false, allow: vec!["*.internal".into()] };
        let text = rules.resolver_rules().unwrap();
        assert!(text.starts_with("MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"), "{text}");
        assert!(text.ends_with("EXCLUDE *.internal"), "{text}");
        assert_eq!(HostRules { open: true, allow: vec![] }.resolver_rules(), None);
    }

    #[test]
    fn a_dialog_answer_is_dismiss_or_accept() {
        use clix_common::settings::Validate;
        let with = |d: &str| BrowserSettings { dialog: d.into(), ..BrowserSettings::default() }.validate();
        assert!(with("dismiss").is_empty() && with("accept").is_empty());
        let bad = with("ignore");
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].key, "dialog");
    }

    #[test]
    fn window_sizes_parse_or_say_what_is_wrong() {
        let with = |w: &str| BrowserSettings { window: w.into(), ..BrowserSettings::default() }.window_size();
        assert_eq!(with("800x600"), Ok((800, 600)));
        assert_eq!(BrowserSettings::default().window_size(), Ok((1280, 800)));
        for bad in ["huge", "0x5", "800x", "99999x10"] {
            let err = with(bad).unwrap_err();
            assert!(err.contains("[browser] window") && err.contains("WIDTHxHEIGHT"), "{bad}: {err}");
        }
    }
}
