//! A plan agent's engine (`Engine::confined`): the whole workspace
//! readable, writes only in its own folder and its `writes`, refused the
//! same way by the shell, our commands and real programs in bubblewrap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;

use clix_engine::{Engine, EngineConfig, Namespace, OsTier, SandboxSettings};

mod support;
use support::{Dirs, Fixture};

async fn fixture() -> Fixture {
    fixture_with(SandboxSettings::default()).await.unwrap()
}

async fn fixture_with(settings: SandboxSettings) -> Result<Fixture, clix_engine::EngineError> {
    let dirs = Dirs::new();
    let ws = &dirs.ws;
    for dir in ["agents/a", "agents/b", "shared", "out"] {
        std::fs::create_dir_all(ws.path().join(dir)).unwrap();
    }
    std::fs::write(ws.path().join("shared/input.txt"), "shared input\n").unwrap();
    std::fs::write(ws.path().join("agents/b/result.txt"), "b's result\n").unwrap();
    // Planted before the agent starts: a symlink in shared/ into b's folder.
    std::os::unix::fs::symlink("../agents/b", ws.path().join("shared/to-b")).unwrap();
    let config = EngineConfig {
        // As the plan runner sets it for its agents' programs.
        os: Some(OsTier {
            env: vec![("CLIX_PLAN_AGENT".into(), "1".into())],
            ..dirs.os_tier(settings, "namespace-test")
        }),
        ..dirs.config()
    };
    let namespace =
        Namespace { home: PathBuf::from("agents/a"), writable: vec![PathBuf::from("agents/a"), PathBuf::from("out")] };
    let engine = Engine::confined(config, namespace).await?;
    Ok(dirs.with(engine))
}

async fn raw(f: &mut Fixture, line: &str) -> (String, String, i32) {
    let r = f.engine.run_raw(line, None).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}

fn sandbox_ready() -> bool {
    let ok =
        std::process::Command::new("bwrap").args(["--ro-bind", "/", "/", "true"]).status().is_ok_and(|s| s.success());
    if !ok {
        clix_testkit::skip_missing("namespace: sandboxed programs", "bubblewrap cannot start here");
    }
    ok
}

#[tokio::test]
async fn the_shell_and_our_commands_write_only_in_the_namespace() {
    let mut f = fixture().await;
    // It starts in its own folder, and reads everything.
    let (out, _, code) = raw(&mut f, "pwd; cat ../../shared/input.txt ../b/result.txt").await;
    assert_eq!(code, 0);
    assert!(out.starts_with(&format!("{}/agents/a\n", f.ws.path().canonicalize().unwrap().display())), "{out}");
    assert!(out.contains("shared input") && out.contains("b's result"), "{out}");
    let (_, err, code) = raw(&mut f, "echo mine > mine.txt && mkdir -p sub && echo gen > ../../out/gen.txt").await;
    assert_eq!((code, err.as_str()), (0, ""));
    let refused = [
        ("another agent's folder", "echo x > ../b/evil.txt"),
        ("dot-dot to the root", "echo x > ../../evil.txt"),
        ("shared", "echo x > ../../shared/input.txt"),
        ("a symlink planted in shared", "echo x > ../../shared/to-b/evil.txt"),
        ("an absolute path", &format!("echo x > {}/evil.txt", f.ws.path().display())),
        ("rm in shared", "rm ../../shared/input.txt"),
        ("mv out", "mv mine.txt ../../shared/"),
        ("our write command", "write ../b/evil.txt hello"),
        ("sed -i", "sed -i s/input/evil/ ../../shared/input.txt"),
    ];
    for (case, line) in refused {
        let (_, err, code) = raw(&mut f, line).await;
        assert_ne!(code, 0, "{case}: {line} succeeded");
        assert!(!err.is_empty(), "{case}: no error said why");
    }
    let (_, err, _) = raw(&mut f, "echo x > ../b/evil.txt").await;
    assert!(err.contains("read-only") && err.contains("agents/a/"), "{err}");
    assert_eq!(std::fs::read_to_string(f.ws.path().join("shared/input.txt")).unwrap(), "shared input\n");
    assert!(!f.ws.path().join("agents/b/evil.txt").exists() && !f.ws.path().join("evil.txt").exists());
    assert_eq!(std::fs::read_to_string(f.ws.path().join("out/gen.txt")).unwrap(), "gen\n");
    // Its spilled outputs land in its own folder (named from its cwd there).
    let shown = f.engine.run("seq 1 100000", None).await;
    assert!(shown.text.contains("Full output: .clix/out/cmd-1.txt"), "{}", shown.text);
    assert!(f.ws.path().join("agents/a/.clix/out/cmd-1.txt").is_file());
}

#[tokio::test]
async fn real_programs_in_the_sandbox_write_only_in_the_namespace() {
    if !sandbox_ready() {
        return;
    }
    let mut f = fixture().await;
    let script = "import sys\n\
        open('mine.txt','w').write('ok')\n\
        for p in ['../b/evil.txt', '../../shared/evil.txt', '../../evil.txt', '../../shared/to-b/evil.txt']:\n\
        \x20   try:\n\
        \x20       open(p, 'w').write('x'); print('WROTE', p)\n\
        \x20   except OSError as e:\n\
        \x20       print('refused', p, e.strerror)\n";
    std::fs::write(f.ws.path().join("agents/a/w.py"), script).unwrap();
    let (out, err, code) = raw(&mut f, "python3 w.py").await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("WROTE"), "{out}");
    assert_eq!(out.matches("refused").count(), 4, "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(std::fs::read_to_string(f.ws.path().join("agents/a/mine.txt")).unwrap(), "ok");
    let (out, _, _) = raw(&mut f, "python3 -c 'import os; print(os.environ.get(\"CLIX_PLAN_AGENT\"))'").await;
    assert_eq!(out.trim(), "1", "the caller's variables reach the programs");
    // A read-only folder of the workspace is still a place to run programs from.
    let (out, err, code) =
        raw(&mut f, "cd ../../shared && python3 -c 'print(open(\"input.txt\").read().strip())'").await;
    assert_eq!((out.trim(), code), ("shared input", 0), "{err}");
}

#[tokio::test]
async fn an_extra_read_write_mount_over_the_workspace_is_refused() {
    // Every agent could write through it, whatever its namespace.
    let settings = SandboxSettings { extra_rw: vec![std::env::temp_dir()], ..SandboxSettings::default() };
    let refused = fixture_with(settings).await.err().expect("a confined engine with extra_rw over the workspace");
    assert!(refused.to_string().contains("overlaps the workspace"), "{refused}");
}
