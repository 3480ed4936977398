//! What the `browser` command's tests share: an engine with the browser
//! and the OS tier it runs in, on a temporary workspace and state folder,
//! and the ref a snapshot gives an element.

use clix_engine::{EngineConfig, RunOutput, SandboxSettings};

use super::{Dirs, Fixture};

/// Whether Chromium is installed; when it is not, the test is recorded as skipped.
pub(crate) fn chromium_installed() -> bool {
    let found = clix_browser::find_executable(&Default::default(), std::env::var("PATH").ok().as_deref()).is_ok();
    if !found {
        clix_testkit::skip_missing("browser", "no Chromium installed (apt-get install chromium-headless-shell)");
    }
    found
}

/// An engine with `browser` settings; `session` names it in the audit log.
pub(crate) async fn fixture(browser: clix_browser::BrowserSettings, session: &str) -> Fixture {
    let dirs = Dirs::new();
    let config = EngineConfig {
        capabilities: vec![std::sync::Arc::new(browser)],
        os: Some(dirs.os_tier(SandboxSettings::default(), session)),
        ..dirs.config()
    };
    dirs.start(config).await
}

/// The ref (`@eN`) on the first line of `text` containing `needle`.
pub(crate) fn ref_of(text: &str, needle: &str) -> String {
    let line = text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in:\n{text}"));
    let at = line.find("[ref=").unwrap() + 5;
    format!("@{}", &line[at..at + line[at..].find(']').unwrap()])
}

/// `line` through the engine, which must exit 0 (else the test fails with its text).
pub(crate) async fn run_ok(f: &mut Fixture, line: &str) -> RunOutput {
    let out = f.engine.run(line, None).await;
    assert_eq!(out.raw.exit_code, 0, "{line}:\n{}", out.text);
    out
}
