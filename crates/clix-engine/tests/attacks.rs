//! The attack corpus against the engine: a program in the sandbox (real
//! bubblewrap, real python3) plants symlinks, FIFOs and setuid files in the
//! workspace or races the shell, and clix must not read, write or delete a
//! single canary outside the workspace. Each case was seen working on the
//! code before the workspace capability handle (docs/security.md). The
//! symlink race, and the whole corpus as an ordinary user, are in clix's
//! tests/attacks.rs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clix_engine::{Engine, EngineConfig, OsTier, SandboxSettings, ShellLimits};
use clix_testkit::Canary;

/// Not the shared `support::Dirs`: the workspace sits in a folder of its
/// own with a canary folder beside it, which no attack may reach.
struct AttackSite {
    /// Holds `ws` and, beside it, the canary folder.
    _root: tempfile::TempDir,
    ws: PathBuf,
    canary: Canary,
    state: tempfile::TempDir,
}

const CANARY: &str = "CANARY-7c1f";

fn fixture() -> AttackSite {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let canary = Canary::plant(&root.path().join("canary"), CANARY);
    let state = tempfile::tempdir().unwrap();
    AttackSite { _root: root, ws, canary, state }
}

impl AttackSite {
    async fn engine(&self, limits: ShellLimits) -> Engine {
        Engine::new(EngineConfig {
            limits,
            os: Some(OsTier {
                settings: SandboxSettings::default(),
                clix_config_dir: None,
                audit_log: Some(clix_audit::AuditLog::new(self.state.path().join("audit.jsonl"))),
                session_id: "attack-test".into(),
                env: Vec::new(),
            }),
            ..EngineConfig::new(self.ws.clone())
        })
        .await
        .unwrap()
    }
}

/// `os.symlink(target, link)` from a program in the sandbox: bashkit refuses
/// absolute symlinks, a sandboxed program does not.
async fn plant_symlink(engine: &mut Engine, target: &Path, link: &str) {
    let line = format!("python3 -c \"import os; os.symlink('{}', '{link}')\"", target.display());
    let r = engine.run_raw(&line, None).await;
    assert_eq!(r.exit_code, 0, "{line}: {}", String::from_utf8_lossy(&r.stderr));
}

/// `.clix` planted as a symlink to a host folder: a long output's spill file
/// must not be written there.
#[tokio::test]
async fn a_symlinked_spill_folder_is_never_written_through() {
    let f = fixture();
    let mut engine = f.engine(ShellLimits::default()).await;
    plant_symlink(&mut engine, f.canary.dir(), ".clix").await;
    let out = engine.run("seq 1 5000", None).await;
    assert!(!out.text.contains(CANARY));
    assert_eq!(out.spill_path, None, "the spill claims to have been saved: {}", out.text);
    f.canary.assert_untouched("spill");
}

/// FIFOs in the workspace: refused at once, never a hang, whatever reads them.
#[tokio::test]
async fn a_fifo_never_hangs_a_line() {
    let f = fixture();
    let mut engine = f.engine(ShellLimits { timeout_secs: 60, ..ShellLimits::default() }).await;
    let r = engine.run_raw("python3 -c \"import os; os.mkfifo('ff')\"", None).await;
    assert_eq!(r.exit_code, 0);
    for line in ["cat ff", "cat -b ff", "see ff", "head -1 ff", "echo x > ff"] {
        let started = Instant::now();
        let out = engine.run(line, None).await;
        // A blocked line waits for its 60 s limit; a generous bound well under it.
        assert!(started.elapsed() < Duration::from_secs(30), "{line} blocked: {}", out.text);
        assert!(!out.text.contains("timed out"), "{line}: {}", out.text);
    }
}

/// Symlinks to host files and to /proc and /dev: `cat`, `cat -b`, `see`
/// and the big-file probe must neither read nor reveal them.
#[tokio::test]
async fn symlinks_out_of_the_workspace_are_errors_that_say_so() {
    let f = fixture();
    let mut engine = f.engine(ShellLimits::default()).await;
    plant_symlink(&mut engine, f.canary.dir(), "dir-out").await;
    plant_symlink(&mut engine, &f.canary.dir().join("FILE"), "file-out").await;
    plant_symlink(&mut engine, Path::new("/dev/zero"), "zero").await;
    for line in [
        "cat dir-out/FILE",
        "cat file-out",
        "cat -b file-out",
        "see file-out",
        "grep -r CANARY .",
        "head -c 10 zero | wc -c",
    ] {
        let out = engine.run(line, None).await;
        assert!(!out.text.contains(CANARY), "{line} leaked: {}", out.text);
    }
    let out = engine.run("cat dir-out/FILE", None).await;
    assert!(out.text.contains("outside the workspace"), "{}", out.text);
}

/// The big-file probe looked at `../x` on the host: whether a file outside
/// exists and is at least the threshold must not change what runs.
#[tokio::test]
async fn the_big_file_probe_never_looks_outside() {
    let f = fixture();
    let big = f.canary.dir().join("big.log");
    std::fs::write(&big, vec![b'y'; 2 << 20]).unwrap();
    let settings = SandboxSettings { big_file_mb: 1, ..SandboxSettings::default() };
    let engine = Engine::new(EngineConfig {
        os: Some(OsTier {
            settings,
            clix_config_dir: None,
            audit_log: Some(clix_audit::AuditLog::new(f.state.path().join("audit.jsonl"))),
            session_id: "probe".into(),
            env: Vec::new(),
        }),
        ..EngineConfig::new(f.ws.clone())
    })
    .await
    .unwrap();
    let mut engine = engine;
    // Routed to the sandbox's GNU tools, `wc` would run there and count the
    // file's bytes; in the shell, the path is outside and gives nothing.
    let r = engine.run_raw("wc -c ../canary/big.log", None).await;
    assert_ne!(r.exit_code, 0, "{}", String::from_utf8_lossy(&r.stdout));
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap_or_default();
    assert!(!audit.contains("big.log"), "the line was routed to the sandbox: {audit}");
}

/// A setuid copy made in the sandbox: no file in the workspace ends up with
/// setuid or setgid bits, whoever made it.
#[tokio::test]
async fn no_setuid_file_is_left_in_the_workspace() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let mut engine = f.engine(ShellLimits::default()).await;
    engine
        .run_raw("python3 -c \"import shutil,os; shutil.copy('/usr/bin/id','x'); os.chmod('x', 0o4755)\"", None)
        .await;
    engine.run_raw("cp x y; chmod 4755 y; chmod u+s x", None).await;
    for name in ["x", "y"] {
        if let Ok(meta) = std::fs::metadata(f.ws.join(name)) {
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{name} is setuid/setgid");
        }
    }
}
