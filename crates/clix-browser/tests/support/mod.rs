//! What the browser's tests share: a workspace with its sandbox, a
//! browser launched in it, and the ref a snapshot gives an element.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // each test file uses its own part

use clix_browser::{Browser, BrowserSettings};
use clix_sandbox::{Sandbox, SandboxSettings};

/// A temporary workspace (its downloads folder made) and a sandbox on it.
pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) ws: std::path::PathBuf,
    pub(crate) sandbox: Sandbox,
}

/// A workspace with the default sandbox; `session` names it in logs.
pub(crate) fn fixture(session: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".clix/downloads")).unwrap();
    let sandbox = Sandbox::new(SandboxSettings::default(), &ws, None, None, session.into());
    Fixture { _dir: dir, ws, sandbox }
}

/// A browser in the fixture's sandbox, its downloads in the workspace.
pub(crate) async fn launch(f: &Fixture, settings: &BrowserSettings) -> Browser {
    Browser::launch(settings, &f.sandbox, &f.ws, &f.ws.join(".clix/downloads")).await.unwrap()
}

/// The ref (`@eN`) on the first snapshot line containing `needle`.
pub(crate) fn ref_of(lines: &[String], needle: &str) -> String {
    let line = lines.iter().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in {lines:#?}"));
    let at = line.find("[ref=").unwrap() + 5;
    format!("@{}", &line[at..at + line[at..].find(']').unwrap()])
}
