//! A whole command line through `clix_engine::Engine::run_within`, with a
//! small time limit, in a fresh temp workspace for every input.
//!
//! Input: the command line, then optionally a NUL byte and the bytes given
//! as stdin. `@PARENT@` and `@GRAND@` in the line become the absolute paths
//! of the workspace's parent and grandparent folders, so the fuzzer (and
//! `fuzz/dicts/engine_line.dict`) can aim at them by name. The OS tier is
//! off (no sandboxed host programs): this target is about the in-process
//! shell, our commands and the jail.
//!
//! Layout on disk, made once per process:
//!
//! ```text
//! G/                 the grandparent, holds canary.txt
//!   P/               the parent, holds canary.txt
//!     ws/            the workspace, laid anew before every input; it holds
//!                    symlinks out of itself (up -> .., canary-link -> ../canary.txt),
//!                    as a hostile cloned repository may
//! M/                 CLIX_HOME and the memory file, beside G
//! ```
//!
//! Properties checked on every input:
//! - nothing panics;
//! - G and P are unchanged afterwards, entry by entry and byte by byte (the
//!   line wrote nothing outside the workspace);
//! - the call returns within the time limit plus a slack ([`SLACK`]);
//! - the text ends with the footer of its raw result and has no NUL.

#![no_main]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use clix_engine::{Engine, EngineConfig, MemoryAccess, MemoryConfig, PresentOptions, ShellLimits};
use libfuzzer_sys::fuzz_target;

/// The time limit of one line.
const LIMIT: Duration = Duration::from_millis(200);
/// How much longer than [`LIMIT`] a call may take before it counts as not
/// honouring its limit (process start-up of a slow machine, a big output
/// shown through Layer 2).
const SLACK: Duration = Duration::from_secs(5);
const CANARY: &str = "canary: nothing may write here\n";
/// A 1x1 PNG, for `see` and the binary guard.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

struct Fixture {
    /// Kept for their lifetime only: removed with the process's TMPDIR by scripts/fuzz.sh.
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    grand: PathBuf,
    parent: PathBuf,
    ws: PathBuf,
    home: PathBuf,
    before: BTreeMap<PathBuf, String>,
    runtime: tokio::runtime::Runtime,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let grand_dir = tempfile::tempdir().expect("a temp dir");
    let home_dir = tempfile::tempdir().expect("a temp dir");
    let grand = grand_dir.path().to_path_buf();
    let parent = grand.join("p");
    let ws = parent.join("ws");
    fs::create_dir_all(&ws).expect("the workspace folder");
    fs::write(grand.join("canary.txt"), CANARY).expect("a canary");
    fs::write(parent.join("canary.txt"), CANARY).expect("a canary");
    // SAFETY: set once, before the runtime (and any other thread of ours) exists.
    unsafe { std::env::set_var("CLIX_HOME", home_dir.path()) };
    let before = snapshot(&grand, &ws);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    Fixture { grand, parent, ws, home: home_dir.path().to_path_buf(), before, _dirs: (grand_dir, home_dir), runtime }
});

/// A small project, as an agent finds one: text, a log, CSV, JSON, an image,
/// nested folders, and symlinks that lead out of the workspace.
fn lay_workspace(ws: &Path) {
    let _ = fs::remove_dir_all(ws);
    let files: &[(&str, &[u8])] = &[
        ("notes.txt", b"alpha\n\n\nbeta\tgamma\r\n"),
        (
            "app.log",
            b"2024-03-01 10:00:00 INFO start\n2024-03-01 10:00:07 ERROR [db] timeout user=bob\n\
              2024-03-01 10:00:14 WARN slow query took 930ms\n2024-03-01 10:00:21 ERROR [disk] disk full\n",
        ),
        ("data.csv", b"id,name,score\n1,ann,11\n2,ben,48\n3,cara,85\n"),
        ("config.json", b"{\"name\": \"demo\", \"port\": 5432, \"tags\": [\"web\", \"api\"]}\n"),
        ("src/main.py", b"import sys\n# TODO: parse flags\nprint(sys.argv)\n"),
        ("docs/a.txt", b"alpha\nbeta\ngamma\n"),
        ("photo.png", PNG),
        ("blob.bin", b"\0\x01\x02\xff\xfe"),
    ];
    for (rel, body) in files {
        let path = ws.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).expect("a workspace folder");
        }
        fs::write(&path, body).expect("a workspace file");
    }
    std::os::unix::fs::symlink("..", ws.join("up")).expect("a symlink");
    std::os::unix::fs::symlink("../canary.txt", ws.join("canary-link")).expect("a symlink");
}

/// Every entry below `root` except the workspace: its path and what it is
/// (a file's bytes, a symlink's target, a folder), never following a symlink.
fn snapshot(root: &Path, skip: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path == skip {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&path) else { continue };
            let what = if meta.file_type().is_symlink() {
                format!("symlink -> {:?}", fs::read_link(&path).ok())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else {
                format!("file {:?}", fs::read(&path).ok().map(|b| String::from_utf8_lossy(&b).into_owned()))
            };
            out.insert(path, what);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let f = &*FIXTURE;
    let (line, stdin) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], Some(&data[at + 1..])),
        None => (data, None),
    };
    let line = String::from_utf8_lossy(line)
        .replace("@PARENT@", &f.parent.to_string_lossy())
        .replace("@GRAND@", &f.grand.to_string_lossy());
    lay_workspace(&f.ws);

    let started = Instant::now();
    let out = f.runtime.block_on(async {
        let mut engine = Engine::new(EngineConfig {
            workspace: f.ws.clone(),
            limits: ShellLimits { timeout_secs: 1, ..ShellLimits::default() },
            present: PresentOptions::default(),
            memory: Some(MemoryConfig {
                path: f.home.join("memory.sqlite"),
                topic: "fuzz".into(),
                session: "fuzz".into(),
                settings: Default::default(),
                progress: None,
                access: MemoryAccess::Session,
            }),
            hub: None,
            os: None,
        })
        .await
        .expect("the engine starts on the fixture workspace");
        engine.run_within(&line, stdin, Some(LIMIT)).await
    });
    let took = started.elapsed();

    let after = snapshot(&f.grand, &f.ws);
    assert!(after == f.before, "{line:?} changed something outside the workspace:\n{:#?}", diff(&f.before, &after));
    assert!(took <= LIMIT + SLACK, "{line:?} took {took:?}, limit {LIMIT:?}");
    let footer = clix_present::footer(out.raw.exit_code, &out.failed_stages, out.raw.duration);
    assert!(out.text.ends_with(&footer), "{line:?}: no footer {footer:?} at the end of {:?}", out.text);
    assert!(!out.text.contains('\0'), "{line:?}: NUL in the presentation {:?}", out.text);
});

/// The entries that differ between two snapshots, for the crash message.
fn diff(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, what) in after {
        match before.get(path) {
            None => out.push(format!("new: {} ({what})", path.display())),
            Some(old) if old != what => out.push(format!("changed: {} ({old} -> {what})", path.display())),
            Some(_) => {}
        }
    }
    out.extend(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("gone: {}", p.display())));
    out
}
