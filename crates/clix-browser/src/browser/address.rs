//! The addresses the agent types, and the patterns `wait --url` takes.

use std::path::{Path, PathBuf};

/// `pattern` with `*` wildcards against the whole address, or as a substring without any.
pub fn url_matches(pattern: &str, url: &str) -> bool {
    if !pattern.contains('*') {
        return url.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = url;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else { return false };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

/// Whether opening `url` would run a script in the current page, as
/// `browser eval` does: a `javascript:` address, however spelled (URL parsers
/// drop whitespace and control characters and ignore the scheme's case).
pub(crate) fn runs_script(url: &str) -> bool {
    let bare: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    bare.to_ascii_lowercase().starts_with("javascript:")
}

/// What the agent typed as an address: a scheme is kept; a workspace path
/// becomes `file://`; `host:port/...` gets `http://`.
pub fn normalize_url(url: &str, cwd: &Path) -> String {
    if url.contains("://") || url.starts_with("about:") || url.starts_with("data:") {
        return url.to_string();
    }
    const FILE_ENDINGS: &[&str] = &["html", "htm", "xhtml", "svg", "txt", "md", "json", "xml", "pdf", "png", "jpg"];
    let first = url.split('/').next().unwrap_or_default();
    let ending = first.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let looks_like_host = !url.starts_with(['.', '/'])
        && (first.starts_with("localhost")
            || first.contains(':')
            || ending
                .is_some_and(|e| !FILE_ENDINGS.contains(&e.as_str()) && e.chars().all(|c| c.is_ascii_alphanumeric())));
    if looks_like_host {
        return format!("http://{url}");
    }
    let path = if url.starts_with('/') { PathBuf::from(url) } else { cwd.join(url) };
    format!("file://{}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javascript_addresses_however_spelled() {
        for (url, script) in [
            ("javascript://x%0Avoid(document.title=document.cookie)", true),
            ("JavaScript:alert(1)", true),
            ("  java\tscript:alert(1)", true),
            ("java\nscript:void(0)", true),
            ("\u{1}javascript:1", true),
            ("http://javascript.example/", false),
            ("data:text/html,<p>hi", false),
            ("about:blank", false),
        ] {
            assert_eq!(runs_script(url), script, "{url:?}");
        }
    }

    #[test]
    fn addresses_the_agent_types() {
        let cwd = Path::new("/ws/site");
        let table = [
            ("http://127.0.0.1:8000/x", "http://127.0.0.1:8000/x"),
            ("localhost:3000", "http://localhost:3000"),
            ("127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
            ("example.com/page", "http://example.com/page"),
            ("index.html", "file:///ws/site/index.html"),
            ("./docs/a.html", "file:///ws/site/./docs/a.html"),
            ("/ws/p.html", "file:///ws/p.html"),
            ("about:blank", "about:blank"),
        ];
        for (typed, url) in table {
            assert_eq!(normalize_url(typed, cwd), url, "{typed}");
        }
    }

    #[test]
    fn url_patterns() {
        assert!(url_matches("*/done*", "http://h/done?x=1"));
        assert!(url_matches("done", "http://h/done"));
        assert!(!url_matches("http://h/a*", "http://h/b"));
        assert!(url_matches("http://h/*", "http://h/"));
    }
}
