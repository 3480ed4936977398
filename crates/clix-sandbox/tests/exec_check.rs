//! The exec-time check with real bubblewrap: every program that starts
//! inside the sandbox reaches the judge with its path, arguments and
//! folder, however it was started; a refusal ends the whole run with the
//! judge's message and exit 126, before the refused program runs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clix_sandbox::{Exec, ExecJudge, Outcome, Request, Sandbox, SandboxSettings};

/// Refuses every exec whose program's name is `refused`, and keeps every exec it is asked about.
struct Refuse {
    refused: &'static str,
    seen: Mutex<Vec<Exec>>,
}

impl ExecJudge for Refuse {
    fn judge(&self, exec: &Exec) -> Result<(), String> {
        self.seen.lock().unwrap().push(exec.clone());
        let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
        if name(&exec.path) == self.refused || exec.argv.first().is_some_and(|a| name(a) == self.refused) {
            return Err(format!("[error] policy: `{}` refused by the test\n", exec.argv.join(" ")));
        }
        Ok(())
    }
}

fn sandbox(ws: &Path, judge: Arc<Refuse>, keep_ready: bool) -> Sandbox {
    let settings = SandboxSettings { keep_ready, ..SandboxSettings::default() };
    Sandbox::new(settings, ws, None, None, "exec-check-test".into()).with_exec_judge(judge)
}

async fn run(sb: &Sandbox, ws: &Path, argv: &[&str]) -> Outcome {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    sb.run(Request::new(&argv, ws, None, Duration::from_secs(60))).await.expect("sandbox runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn every_program_started_inside_is_judged_and_a_refusal_ends_the_run() {
    for keep_ready in [false, true] {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(ws.join("keep"), "k").unwrap();
        let judge = Arc::new(Refuse { refused: "rm", seen: Mutex::default() });
        let sb = sandbox(&ws, Arc::clone(&judge), keep_ready);

        // A program that starts others: each reaches the judge with its words and folder.
        std::fs::create_dir(ws.join("sub")).unwrap();
        let o = run(&sb, &ws.join("sub"), &["sh", "-c", "ls / >/dev/null; echo made > ../made; cat ../made"]).await;
        assert_eq!(o.exit_code, 0, "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "made\n");
        let seen = judge.seen.lock().unwrap().clone();
        let argvs: Vec<Vec<String>> = seen.iter().map(|e| e.argv.clone()).collect();
        assert!(argvs.iter().any(|a| a.first().is_some_and(|p| p == "sh")), "the program itself: {argvs:?}");
        assert!(argvs.iter().any(|a| a == &["ls", "/"]), "what it started: {argvs:?}");
        assert!(argvs.iter().any(|a| a == &["cat", "../made"]), "{argvs:?}");
        let ls = seen.iter().find(|e| e.argv == ["ls", "/"]).unwrap();
        assert!(ls.path.ends_with("/ls"), "the path executed: {}", ls.path);
        assert_eq!(ls.cwd.as_deref(), Some(ws.join("sub").as_path()), "the folder it starts in");
        assert!(
            !seen.iter().any(|e| e.path.ends_with("bwrap") || e.argv.iter().any(|a| a.contains("/proc/self/fd/3"))),
            "the sandbox's own set-up is not the judge's: {argvs:?}"
        );

        // A refused program: the run ends there, with the judge's words, exit 126.
        let o = run(&sb, &ws, &["sh", "-c", "echo before; rm -rf keep; echo after"]).await;
        assert_eq!(o.exit_code, 126, "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "before\n", "nothing after the refusal runs");
        assert!(text(&o.stderr).contains("`rm -rf keep` refused by the test"), "{}", text(&o.stderr));
        assert!(ws.join("keep").exists(), "the refused program never ran");

        // Started by a program's own call, not a shell: python's os.execv and subprocess.
        let py =
            "import subprocess, os\nsubprocess.run(['/bin/rm', '-f', 'keep'])\nos.execv('/bin/echo', ['echo', 'x'])";
        let o = run(&sb, &ws, &["python3", "-c", py]).await;
        assert_eq!(o.exit_code, 126, "{}", text(&o.stderr));
        assert!(ws.join("keep").exists(), "subprocess's rm was refused");

        // A renamed argv[0] does not hide the program: the path decides too.
        let o = run(&sb, &ws, &["python3", "-c", "import os; os.execv('/bin/rm', ['ls', '-f', 'keep'])"]).await;
        assert_eq!(o.exit_code, 126, "{}", text(&o.stderr));
        assert!(ws.join("keep").exists(), "rm named ls");

        // The next run starts clean.
        let o = run(&sb, &ws, &["true"]).await;
        assert_eq!(o.exit_code, 0, "{}", text(&o.stderr));
    }
}
