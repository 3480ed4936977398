//! The person stays in control of the workspace (issue 51): every change an
//! agent makes, by a Layer 1 command, a sandboxed program or git, is shown
//! by `clix diff` and put back by `clix undo`, byte for byte; `read-only`
//! changes nothing; `review` keeps a call's changes only on yes, with the
//! question on the screen while clix waits.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use clix_testkit::model_server::{Reply, Server, openai_calls, openai_text, run_call, start};
use clix_testkit::tree_picture;
use common::agent_home::AgentHome as Home;
use common::text;

fn git(ws: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=person", "-c", "user.email=p@example.com"])
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// A project under git, one commit, one untracked file.
fn project() -> Home {
    let h = Home::with_files(&[
        ("notes.txt", b"one\ntwo\nthree\n"),
        ("b.txt", b"bee\n"),
        ("d.txt", b"dee\n"),
        ("f.txt", b"eff\n"),
        ("mod.py", b"print('mod')\n"),
        ("untracked.txt", b"mine\n"),
    ]);
    git(h.ws.path(), &["init", "-q"]);
    git(h.ws.path(), &["add", "notes.txt", "b.txt", "d.txt", "f.txt", "mod.py"]);
    git(h.ws.path(), &["commit", "-qm", "start"]);
    // Each scripted reply is the model's answer: it is not asked again to look first.
    std::fs::write(h.home.path().join("config.toml"), "[agent]\nlook_first = false\n").unwrap();
    h
}

/// `clix ARGS` in the project with the sandbox on (bubblewrap), the model `server`.
fn clix(h: &Home, server: Option<&Server>, args: &[&str]) -> Command {
    let mut cmd = h.clix(server, args);
    cmd.env("CLIX_SANDBOX_MODE", "bwrap");
    cmd
}

async fn finish(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.stdin(Stdio::null()).output().unwrap()).await.unwrap()
}

const LAYER1: &str =
    "echo one > a.txt && write w.txt written && sed -i s/two/TWO/ notes.txt && mv b.txt c.txt && rm d.txt";
const PROGRAM: &str = "python3 -c \"import os; open('e.py','w').write('print(1)\\n'); \
     open('mod.py','a').write('# more\\n'); os.remove('f.txt'); os.chmod('e.py', 0o755); os.symlink('e.py','e-link')\"";
const COMMIT: &str = "git add -A && git -c user.name=agent -c user.email=a@example.com commit -qm agent";

/// A model that changes the project in three steps (Layer 1, a sandboxed
/// program, git), then answers.
fn three_steps() -> Vec<Reply> {
    vec![
        openai_calls(&[("run", &run_call(LAYER1))], 10, 5),
        openai_calls(&[("run", &run_call(PROGRAM))], 10, 5),
        openai_calls(&[("run", &run_call(COMMIT))], 10, 5),
        openai_text("done", 10, 1),
    ]
}

#[tokio::test]
async fn every_change_of_an_agent_is_shown_and_undone_byte_for_byte() {
    let server = start(three_steps()).await;
    let h = project();
    let ws = h.ws.path();
    let start = tree_picture(ws);
    let o = finish(clix(&h, Some(&server), &["ask", "tidy up"])).await;
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // After each call, a person reads what it changed.
    assert!(err.contains("changed 6 files: +3 ~1 \u{2212}2 (clix diff "), "{err}");
    assert!(err.contains("changed 4 files: +2 ~1 \u{2212}1 (clix diff "), "{err}");
    assert!(err.contains("and the repository (.git)"), "{err}");
    assert_eq!(git(ws, &["log", "--format=%s"]), "agent\nstart\n");
    // The trajectory carries each change set.
    let runs = h.runs();
    let id = runs[0]["id"].as_str().unwrap().to_string();
    let replay = text(&clix(&h, None, &["replay", &id, "--jsonl"]).output().unwrap().stdout);
    let sets: Vec<serde_json::Value> = replay
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|e| e["changes"].as_object().cloned().map(serde_json::Value::Object))
        .collect();
    assert_eq!(sets.iter().map(|s| s["step"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3], "{replay}");
    assert!(sets.iter().all(|s| s["run"] == id.as_str()), "{replay}");

    let diff = text(&clix(&h, None, &["diff", "last"]).output().unwrap().stdout);
    for shown in [
        "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+one\n",
        "+++ b/w.txt\n",
        "-two\n+TWO\n",
        "--- a/b.txt\n+++ /dev/null\n",
        "+++ b/c.txt\n",
        "--- a/d.txt\n+++ /dev/null\n",
        "diff --clix a/e.py b/e.py\nnew file mode 100755\n",
        "+# more\n",
        "--- a/f.txt\n+++ /dev/null\n",
        "e-link: nothing \u{2192} symlink \u{2192} e.py",
        "the repository (.git): ",
    ] {
        assert!(diff.contains(shown), "{shown:?} is not in:\n{diff}");
    }
    let step2 = text(&clix(&h, None, &["diff", "last", "--step", "2", "--stat"]).output().unwrap().stdout);
    assert!(step2.contains("mod.py") && !step2.contains("notes.txt"), "{step2}");

    // From step 2 on: just after step 1.
    let o = clix(&h, None, &["undo", "last", "--step", "2"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(git(ws, &["log", "--format=%s"]), "start\n");
    assert!(!ws.join("e.py").exists() && std::fs::symlink_metadata(ws.join("e-link")).is_err());
    assert_eq!(std::fs::read_to_string(ws.join("f.txt")).unwrap(), "eff\n");
    assert_eq!(std::fs::read_to_string(ws.join("mod.py")).unwrap(), "print('mod')\n");
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "one\nTWO\nthree\n");
    assert!(ws.join("c.txt").exists() && !ws.join("d.txt").exists() && ws.join("w.txt").exists());

    // The person edits a file the agent made; undo leaves it and says so.
    std::fs::write(ws.join("a.txt"), "the person's\n").unwrap();
    let o = clix(&h, None, &["undo", "last"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("left a.txt: changed since the agent's call"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "the person's\n");
    let mut expected = start.clone();
    expected.insert("a.txt".into(), (b"the person's\n".to_vec(), 0o644, None));
    assert_eq!(tree_picture(ws), expected, "all but the person's file is as it was");

    // --force: put back too, the person's version kept beside it.
    let o = clix(&h, None, &["undo", "last", "--force"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let mut expected = start;
    expected.insert("a.txt.clix-undo-backup".into(), (b"the person's\n".to_vec(), 0o644, None));
    assert_eq!(tree_picture(ws), expected);
}

#[test]
fn read_only_changes_nothing_and_says_why() {
    let h = project();
    let ws = h.ws.path();
    let start = tree_picture(ws);
    for line in [
        "echo x > notes.txt",
        "rm b.txt",
        "python3 -c \"open('p.txt','w').write('x')\"",
        "sandbox bash 'echo y > q.txt'",
        COMMIT,
    ] {
        let o = clix(&h, None, &["run", "--mode", "read-only", line]).output().unwrap();
        let shown = text(&o.stdout);
        assert_ne!(o.status.code(), Some(0), "{line}: {shown}");
        assert!(shown.contains("read-only in this session (--mode read-only)"), "{line}: {shown}");
    }
    // Reading still works.
    let o = clix(&h, None, &["run", "--mode", "read-only", "cat notes.txt | wc -l"]).output().unwrap();
    assert_eq!(text(&o.stdout).lines().next(), Some("3"), "{}", text(&o.stdout));
    assert_eq!(tree_picture(ws), start);
}

#[test]
fn review_needs_a_person() {
    let h = project();
    let o = clix(&h, None, &["run", "--mode", "review", "echo x > n.txt"]).output().unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("review mode asks a person"), "{}", text(&o.stderr));
    assert!(!h.ws.path().join("n.txt").exists());
}

/// What a VT100 screen of 160×48 shows after `bytes`, read by pyte.
fn screen_of(bytes: &str) -> String {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import pyte, sys\ns = pyte.Screen(160, 48)\npyte.ByteStream(s).feed(sys.stdin.buffer.read())\n\
             print('\\n'.join(l.rstrip() for l in s.display))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(bytes.as_bytes()).unwrap();
    text(&child.wait_with_output().unwrap().stdout)
}

fn pyte_present() -> bool {
    let ok = Command::new("python3").args(["-c", "import pyte"]).status().is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "pyte is missing under CI: .ci/run should have installed it");
        eprintln!("SKIPPED: pyte is not installed (pip install pyte)");
    }
    ok
}

/// `clix ask --mode review` on a pseudo-terminal: the question stays on
/// the screen while clix waits (the spinner is paused), `n` puts the
/// workspace back, `y` keeps the changes.
#[tokio::test]
async fn review_asks_on_the_screen_and_keeps_changes_only_on_yes() {
    if !pyte_present() {
        return;
    }
    for (answer, kept) in [("n", false), ("y", true)] {
        let server = start(vec![
            openai_calls(&[("run", &run_call("echo reviewed > r.txt && sed -i s/one/ONE/ notes.txt"))], 10, 5),
            openai_text("done", 10, 1),
        ])
        .await;
        let h = project();
        let ws = h.ws.path();
        let start = tree_picture(ws);
        let inner = clix(&h, Some(&server), &["ask"]);
        let words = "ask --mode review 'change things'";
        let mut child = common::clix_in_a_terminal(&inner, words, ws, "xterm-256color");
        let screen = common::Screen::watch(&mut child);
        let asked = Instant::now();
        while !screen.text().contains("keep these changes?") {
            assert!(asked.elapsed() < Duration::from_secs(60), "never asked:\n{}", screen.text());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Several of the spinner's ticks (120 ms) while clix waits.
        tokio::time::sleep(Duration::from_millis(800)).await;
        let shown = screen_of(&screen.text());
        assert!(shown.contains("keep these changes? [y] yes, [n] no"), "the question is not on the screen:\n{shown}");
        assert!(shown.contains("+reviewed") && shown.contains("-one") && shown.contains("+ONE"), "{shown}");
        use std::io::Write;
        let mut keys = child.stdin.take().unwrap();
        keys.write_all(format!("{answer}\r").as_bytes()).unwrap();
        drop(keys);
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
        let all = screen.finish();
        if kept {
            assert_eq!(std::fs::read_to_string(ws.join("r.txt")).unwrap(), "reviewed\n", "{all}");
            assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "ONE\ntwo\nthree\n");
        } else {
            assert_eq!(tree_picture(ws), start, "{all}");
            // The model is told.
            let told = server.requests()[1].body["messages"].to_string();
            assert!(
                told.contains(
                    "the person declined this call's changes (review mode): the workspace is as it was before the call."
                ),
                "{told}"
            );
            assert!(all.contains("declined, put back: changed 2 files"), "{all}");
        }
    }
}

/// In a chat, `/diff` shows what the last task changed, `/undo` puts it
/// back, `/mode` switches only to what the session can do, and a line that
/// starts with `/` is never sent to the model as a task.
#[tokio::test]
async fn chat_shows_and_undoes_the_last_task() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("echo hi > chat.txt && sed -i s/one/ONE/ notes.txt"))], 10, 5),
        openai_text("made it", 10, 1),
        openai_text("fresh start", 7, 1),
    ])
    .await;
    let h = project();
    let start = tree_picture(h.ws.path());
    let turns = b"make a file\n/diff\n/undo\n/mode\n/mode review\n/model other-model\n/cost\n/clear\n/nope\nnext\n";
    let o = h.output_with_stdin(Some(&server), &["chat"], turns).await;
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(out.contains("+++ b/chat.txt") && out.contains("+ONE"), "{out}\n{err}");
    assert!(err.contains("put back 2 paths"), "{err}");
    assert_eq!(tree_picture(h.ws.path()), start, "{err}");
    assert!(err.contains("mode: auto"), "{err}");
    assert!(err.contains("review mode asks a person about each call's changes"), "{err}");
    assert!(err.contains("model: other-model from the next call on"), "{err}");
    assert!(err.contains("this chat so far: 20 in / 6 out tokens"), "{err}");
    assert!(err.contains("unknown command /nope; the chat's commands are:\n/diff"), "{err}");
    let asked = server.requests();
    assert_eq!(asked.len(), 3, "only the tasks went to the model");
    assert_eq!(asked[2].body["model"], "other-model");
    let last = asked[2].body["messages"].to_string();
    assert!(last.contains("next") && !last.contains("make a file"), "/clear began anew: {last}");
}

/// `clix ask --resume RUN --from-step N` goes back in both: the model is
/// asked with the conversation as it was before step N, and the workspace
/// is as it was before step N's calls.
#[tokio::test]
async fn resume_from_a_step_goes_back_in_the_conversation_and_the_workspace() {
    let first = start(three_steps()).await;
    let h = project();
    let ws = h.ws.path();
    let o = finish(clix(&h, Some(&first), &["ask", "tidy up"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let id = h.runs()[0]["id"].as_str().unwrap().to_string();

    let second = start(vec![openai_text("went another way", 10, 1)]).await;
    let o = finish(clix(&h, Some(&second), &["ask", "--resume", &id, "--from-step", "2", "do it differently"])).await;
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("back at step 2 of run {id}")), "{err}");
    // The workspace: step 1's changes, nothing of steps 2 and 3.
    assert_eq!(git(ws, &["log", "--format=%s"]), "start\n");
    assert!(!ws.join("e.py").exists() && ws.join("f.txt").exists() && ws.join("c.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "one\nTWO\nthree\n");
    // The conversation: step 1's call and result, then the new task; no step 2.
    let sent = second.requests()[0].body["messages"].to_string();
    assert!(sent.contains("sed -i s/two/TWO/") && sent.contains("do it differently"), "{sent}");
    assert!(!sent.contains("os.symlink"), "step 2 was cut off: {sent}");
    // A step the run does not have is refused before anything changes.
    let o = finish(clix(&h, Some(&second), &["ask", "--resume", &id, "--from-step", "40", "x"])).await;
    assert!(text(&o.stderr).contains("has no step 40"), "{}", text(&o.stderr));
}

/// Chat's `/rewind N` goes back to step N in the conversation and the
/// workspace: the next task is asked without what was cut off.
#[tokio::test]
async fn chat_rewinds_to_a_step() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("echo first > one.txt"))], 10, 5),
        openai_calls(&[("run", &run_call("echo second > two.txt"))], 10, 5),
        openai_text("made both", 10, 1),
        openai_text("went on", 10, 1),
    ])
    .await;
    let h = project();
    let turns = b"make two files\n/rewind 2\nand now?\n";
    let o = h.output_with_stdin(Some(&server), &["chat"], turns).await;
    let err = text(&o.stderr);
    assert!(err.contains("back at step 2 of run"), "{err}");
    assert!(h.ws.path().join("one.txt").exists() && !h.ws.path().join("two.txt").exists(), "{err}");
    let last = server.requests().last().unwrap().body["messages"].to_string();
    assert!(last.contains("echo first") && last.contains("and now?"), "{last}");
    assert!(!last.contains("echo second") && !last.contains("made both"), "step 2 on was cut off: {last}");
}
