//! A newcomer's first session, the way the README tells it: clix installed
//! from its release tarball (scripts/release.sh, packaging this build) into
//! a prefix of their own; `clix run` in a JavaScript project with a
//! top-level `.npmrc`; `clix ask` against an OpenAI-compatible server and
//! an Anthropic one, each given as the bare address the README shows; and
//! `clix runs` on an 80-column terminal.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clix_testkit::model_server::{anthropic_reply, openai_calls, openai_text, run_call, start};
use common::text;

/// The repository's root (scripts/, README.md).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// This build packaged by the release script, unpacked into `prefix` as
/// the README says (`tar -xzf … --strip-components=1 -C PREFIX`).
fn install_from_tarball(dist: &Path, prefix: &Path) {
    let built = Command::new("bash")
        .arg(repository().join("scripts/release.sh"))
        .args(["--binary", env!("CARGO_BIN_EXE_clix"), "--out"])
        .arg(dist)
        .arg("--tarball-only")
        .output()
        .unwrap();
    assert!(built.status.success(), "release.sh: {}{}", text(&built.stdout), text(&built.stderr));
    let tarball = std::fs::read_dir(dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-x86_64-linux.tar.gz"))
        .expect("a tarball");
    std::fs::create_dir_all(prefix).unwrap();
    let unpacked =
        Command::new("tar").arg("-xzf").arg(&tarball).arg("--strip-components=1").arg("-C").arg(prefix).status();
    assert!(unpacked.unwrap().success());
    for shipped in [
        "bin/clix",
        "share/man/man1/clix.1",
        "share/man/man1/clix-run.1",
        "share/man/man1/clix-ask.1",
        "share/bash-completion/completions/clix",
        "share/zsh/site-functions/_clix",
        "share/fish/vendor_completions.d/clix.fish",
    ] {
        assert!(prefix.join(shipped).is_file(), "{shipped} is not in the tarball");
    }
}

/// A newcomer's environment: their own home, clix's data in it, the
/// installed clix first on PATH, and nothing of this machine's settings.
struct Newcomer {
    home: PathBuf,
    prefix: PathBuf,
}

impl Newcomer {
    fn clix(&self, project: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.prefix.join("bin/clix"));
        let path = format!("{}:{}", self.prefix.join("bin").display(), std::env::var("PATH").unwrap_or_default());
        cmd.args(args).current_dir(project).env_clear().env("PATH", path).env("HOME", &self.home);
        cmd.env("CLIX_HOME", self.home.join(".clix"));
        cmd
    }
}

async fn finish(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test]
async fn a_first_session_from_the_tarball() {
    let root = tempfile::tempdir().unwrap();
    let newcomer = Newcomer { home: root.path().join("home"), prefix: root.path().join("prefix") };
    std::fs::create_dir_all(&newcomer.home).unwrap();
    install_from_tarball(&root.path().join("dist"), &newcomer.prefix);

    let version = newcomer.clix(root.path(), &["--version"]).output().unwrap();
    assert!(text(&version.stdout).starts_with("clix "), "{}", text(&version.stderr));

    // A JavaScript project with its registry token at the top: served, the token hidden.
    let project = root.path().join("shop");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join(".npmrc"), "//registry.npmjs.org/:_authToken=npm_CANARYCANARYCANARY\n").unwrap();
    std::fs::write(project.join("package.json"), "{\"name\": \"shop\", \"version\": \"1.0.0\"}\n").unwrap();
    std::fs::write(project.join("src/cart.js"), "// TODO: taxes\nexport const total = (xs) => xs.length;\n").unwrap();
    let o = finish(newcomer.clix(&project, &["run", "ls", "-a"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("package.json") && !text(&o.stdout).contains(".npmrc"), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("hidden from the agent") && text(&o.stderr).contains(".npmrc"));
    let o = finish(newcomer.clix(&project, &["run", "grep", "-rn", "TODO", "src"])).await;
    assert!(text(&o.stdout).starts_with("src/cart.js:1:// TODO: taxes"), "{}", text(&o.stdout));
    let o = finish(newcomer.clix(&project, &["run", "cat .npmrc; grep -r npm_ ."])).await;
    assert!(!text(&o.stdout).contains("CANARY") && !text(&o.stderr).contains("CANARY"), "{}", text(&o.stdout));

    // `clix ask` with an OpenAI-compatible server given by its bare address (Ollama's form).
    let openai = start(vec![
        openai_calls(&[("run", &run_call("grep -rn TODO src"))], 120, 20),
        openai_text("One TODO: taxes, in src/cart.js.", 180, 12),
    ])
    .await;
    let mut ask = newcomer.clix(&project, &["ask", "what is left to do?"]);
    ask.env("AGENT_BASE_URL", &openai.url).env("AGENT_MODEL", "qwen2.5-coder:7b");
    let o = finish(ask).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "One TODO: taxes, in src/cart.js.");
    assert!(openai.requests().iter().all(|r| r.path == "/v1/chat/completions"), "{:?}", openai.requests());

    // And an Anthropic one, the address given the same way.
    let anthropic = start(vec![
        anthropic_reply("", &[("toolu_1", &run_call("cat package.json"))], 100, 10),
        anthropic_reply("The package is shop 1.0.0.", &[], 150, 8),
    ])
    .await;
    let mut ask = newcomer.clix(&project, &["ask", "--provider", "anthropic", "which package is this?"]);
    ask.env("AGENT_BASE_URL", &anthropic.url).env("AGENT_MODEL", "claude-sonnet-4-5");
    ask.env("ANTHROPIC_API_KEY", "sk-ant-first-session-0123456789");
    let o = finish(ask).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "The package is shop 1.0.0.");
    assert!(anthropic.requests().iter().all(|r| r.path == "/v1/messages"), "{:?}", anthropic.requests());

    // Both runs, in a table that fits an 80-column terminal.
    let mut runs = newcomer.clix(&project, &["runs"]);
    runs.env("COLUMNS", "80");
    let o = finish(runs).await;
    let table = text(&o.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "a header and two runs:\n{table}");
    assert!(lines[0].starts_with("ID ") && lines[0].ends_with("TASK"), "{table}");
    assert!(lines[1].contains("qwen2.5-coder:7b") && lines[2].contains("claude-sonnet-4-5"), "{table}");
    assert!(lines[1].contains("300/32") && lines[2].contains("250/18"), "the run's tokens: {table}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "wider than 80 columns:\n{table}");
}
