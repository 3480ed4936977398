//! The engine with its OS tier: real bubblewrap behind ordinary command lines.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_engine::{EngineConfig, SandboxSettings, ShellLimits};

mod support;
use support::{Dirs, Fixture};

async fn fixture(settings: SandboxSettings) -> Fixture {
    fixture_with(settings, ShellLimits::default()).await
}

async fn fixture_with(settings: SandboxSettings, limits: ShellLimits) -> Fixture {
    let dirs = Dirs::new().file(
        "gen.py",
        "for i in range(100):
    print('x' if i % 4 == 0 else 'y', i)
",
    );
    let config = EngineConfig { limits, os: Some(dirs.os_tier(settings, "engine-test")), ..dirs.config() };
    dirs.start(config).await
}

#[tokio::test]
async fn host_programs_join_pipelines_transparently() {
    let mut f = fixture(SandboxSettings::default()).await;
    let cases = [
        ("python3 -c 'print(6*7)'", "42\n"),
        ("python3 gen.py | grep x | wc -l", "25\n"),
        ("seq 1 10 | python3 -c 'import sys; print(sum(map(int, sys.stdin)))'", "55\n"),
        ("cat gen.py | python3 -c 'import sys; print(len(sys.stdin.readlines()))'", "2\n"),
        ("mkdir -p sub && cd sub && python3 -c 'import os; print(os.getcwd())' && cd ..", ""),
        ("git init -q && git status --short | sort", "?? gen.py\n"),
    ];
    for (line, want) in cases {
        let (out, err, code) = f.run(line).await;
        let want =
            if want.is_empty() { format!("{}/sub\n", f.engine.shell().workspace().display()) } else { want.into() };
        assert_eq!((out, code), (want, 0), "{line}: {err}");
    }
    let (out, err, code) = f.run("definitely-not-a-program --x").await;
    assert_eq!((out.as_str(), code), ("", 127));
    assert!(err.starts_with("[error] unknown command: definitely-not-a-program"), "{err}");
}

#[tokio::test]
async fn sandbox_command_levels_of_help_and_status() {
    let mut f = fixture(SandboxSettings::default()).await;
    let cases = [
        ("sandbox", "[error] sandbox: usage: sandbox bash|run|status\n", 2),
        ("sandbox bash", "[error] sandbox bash: usage: sandbox bash '<script>' [args…]\n", 2),
        ("sandbox run", "[error] sandbox run: usage: sandbox run <program> [args…]\n", 2),
        ("sandbox fly", "[error] sandbox: no subcommand fly. usage: sandbox bash|run|status\n", 2),
    ];
    for (line, want, code) in cases {
        let (out, err, got) = f.run(line).await;
        assert_eq!((out.as_str(), err.as_str(), got), ("", want, code), "{line}");
    }
    let (out, _, code) = f.run("sandbox bash 'echo $1 from $(basename $BASH); shopt -q extglob; echo $?' hi").await;
    assert_eq!((out.as_str(), code), ("hi from bash\n1\n", 0));
    let (out, _, _) = f.run("echo piped | sandbox run tr a-z A-Z").await;
    assert_eq!(out, "PIPED\n");
    let (out, _, _) = f.run("sandbox status").await;
    assert!(out.contains("network: off") && out.starts_with("isolation: bubblewrap"), "{out}");
}

#[tokio::test]
async fn program_time_limit_keeps_output_and_says_what_to_do() {
    // 10 s: python3 must start in bubblewrap and print before the limit,
    // which a busy machine may make slow; the limit still ends the sleep.
    let limits = ShellLimits { timeout_secs: 10, ..ShellLimits::default() };
    let mut f = fixture_with(SandboxSettings::default(), limits).await;
    let started = std::time::Instant::now();
    let out = f.engine.run("python3 -c 'import time; print(\"tick\", flush=True); time.sleep(120)'", None).await;
    // Cut at the limit, not run to its end: a generous bound, far below 120 s.
    assert!(started.elapsed().as_secs() < 60);
    assert_eq!(out.raw.exit_code, 124);
    assert!(out.text.starts_with("tick\n[stderr] timed out after 10s; raise with --timeout"), "{}", out.text);
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap();
    assert!(audit.contains("\"ended\":\"timeout\""), "{audit}");
}

#[tokio::test]
async fn big_files_stream_through_gnu_tools_in_the_sandbox() {
    let mut f = fixture(SandboxSettings { big_file_mb: 1, ..SandboxSettings::default() }).await;
    let mut log = String::new();
    for i in 0..60_000 {
        log.push_str(if i % 3 == 0 { "2024-01-01 ERROR disk full\n" } else { "2024-01-01 INFO all good\n" });
    }
    std::fs::write(f.ws.path().join("big.log"), &log).unwrap();
    let cases = [
        ("grep -c ERROR big.log", "20000\n"),
        ("grep ERROR big.log | wc -l", "20000\n"),
        ("sort big.log | uniq -c | sort -rn | head -n 1", "  40000 2024-01-01 INFO all good\n"),
        ("tail -n 1 big.log", "2024-01-01 INFO all good\n"),
    ];
    for (line, want) in cases {
        let (out, err, code) = f.run(line).await;
        assert_eq!((out.as_str(), code), (want, 0), "{line}: {err}");
    }
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap();
    assert!(audit.contains(r#""argv":["grep","-c","ERROR","big.log"]"#), "a plain command runs directly: {audit}");
    assert!(
        audit.contains(r#""argv":["bash","-c","grep ERROR big.log | wc -l"]"#),
        "a pipeline runs in GNU bash: {audit}"
    );
    // Lines that need the session (variables) or our commands stay in-process.
    let (out, _, _) = f.run("P=ERROR; grep -c $P big.log").await;
    assert_eq!(out, "20000\n");
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap();
    assert!(!audit.contains("grep -c $P"), "{audit}");
}

#[tokio::test]
async fn programs_cannot_run_outside_the_workspace() {
    let mut f = fixture(SandboxSettings::default()).await;
    let (_, err, code) = f.run("cd /tmp && python3 -c 1").await;
    assert_eq!(code, 126);
    assert!(err.contains("is outside the workspace; cd into"), "{err}");
}

#[tokio::test]
async fn a_cancel_stops_sandboxed_and_big_file_lines() {
    let mut f = fixture(SandboxSettings { big_file_mb: 1, ..SandboxSettings::default() }).await;
    std::fs::write(f.ws.path().join("big.log"), "line\n".repeat(400_000)).unwrap();
    // Each program never ends by itself; the second element is how its
    // command line shows in /proc.
    let lines = [
        ("tail -f big.log", "tail\0-f\0big.log"),
        ("python3 -c 'import time; time.sleep(60)'", "import time; time.sleep(60)"),
    ];
    for (line, running) in lines {
        let handle = f.engine.cancel_handle();
        let canceller = tokio::spawn(async move {
            // The cancel lands once the program runs (a cancel before the
            // line starts would stop it before it ran).
            let started = std::time::Instant::now();
            while clix_testkit::pids_with_cmdline(running).is_empty()
                && started.elapsed() < std::time::Duration::from_secs(60)
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            handle.cancel();
        });
        let (_, err, code) = f.run(line).await;
        canceller.abort();
        // Not cancelled, the line would end at its 30 s limit with 124.
        assert_eq!(code, 130, "{line}: {err}");
        assert!(err.contains("clix: cancelled"), "{line}: {err}");
    }
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap();
    assert!(
        audit.contains(r#""argv":["tail","-f","big.log"]"#) && audit.contains("\"ended\":\"cancelled\""),
        "{audit}"
    );
}

/// A tiny HTTP server on the host's loopback answering every request with
/// `body`; its URL.
fn serve(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hello.txt", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    url
}

fn on_host(program: &str) -> bool {
    std::env::var("PATH").unwrap_or_default().split(':').any(|dir| std::path::Path::new(dir).join(program).is_file())
}

/// With the network on (the sandbox shares the host's network), `curl` and
/// `wget` are the sandbox's real programs, like any host program.
#[tokio::test]
async fn http_clients_are_the_real_programs_when_the_network_is_on() {
    let url = serve("hello from the host\n");
    let mut f = fixture(SandboxSettings { network: true, ..SandboxSettings::default() }).await;
    let cases = [
        (format!("curl -sS {url}"), "hello from the host\n"),
        (format!("curl -sS {url} | tr a-z A-Z"), "HELLO FROM THE HOST\n"),
        (format!("wget -qO- {url}"), "hello from the host\n"),
        (format!("curl -sSo got.txt {url} && cat got.txt"), "hello from the host\n"),
    ];
    for (line, want) in &cases {
        let program = line.split(' ').next().unwrap();
        if !on_host(program) {
            clix_testkit::skip_missing(
                "http_clients_are_the_real_programs_when_the_network_is_on",
                &format!("{program} is not installed (.ci/run installs curl and wget)"),
            );
            continue;
        }
        let (out, err, code) = f.run(line).await;
        assert_eq!((out.as_str(), code), (*want, 0), "{line}: {err}");
    }
    if !on_host("http") {
        let (out, err, code) = f.run(&format!("http GET {url}")).await;
        let want = "[error] http: not available; use curl, e.g. curl -sS URL, or curl -sS --json '{\"k\": 1}' URL to post JSON\n";
        assert_eq!((out.as_str(), err.as_str(), code), ("", want, 127));
    }
}

/// With the network off, the HTTP clients say so and how a person turns it
/// on; the host's curl is not even started.
#[tokio::test]
async fn http_clients_say_there_is_no_network_when_it_is_off() {
    let url = serve("unreachable\n");
    let mut f = fixture(SandboxSettings::default()).await;
    for line in [format!("curl -sS {url}"), format!("wget -qO- {url}"), format!("http GET {url}")] {
        let name = line.split(' ').next().unwrap();
        let (out, err, code) = f.run(&line).await;
        let want = format!(
            "[error] {name}: this session has no network; a person can turn it on with --network (clix run, clix mcp) \
             or sandbox.network = true\n"
        );
        assert_eq!((out.as_str(), err, code), ("", want, 127), "{line}");
    }
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap_or_default();
    assert!(!audit.contains("curl") && !audit.contains("wget"), "{audit}");
}

/// The missing-programs table speaks only for programs that are missing:
/// one that is on the sandbox's PATH runs (the offline HTTP clients aside).
#[tokio::test]
async fn the_missing_programs_table_applies_only_to_missing_programs() {
    let mut f = fixture(SandboxSettings::default()).await;
    for entry in clix_present::MISSING_PROGRAMS {
        let (_, _, found) = f.run(&format!("sandbox bash 'command -v {}'", entry.name)).await;
        let present = found == 0 && !clix_shell::NETWORK_BUILTINS.contains(&entry.name);
        let (out, err, code) = f.run(&format!("{} --version", entry.name)).await;
        let advice = format!("[error] {}\n", clix_present::missing_program(entry.name, false).unwrap());
        if present {
            assert!(code != 127 && err != advice, "{}: ran? {code} {out} {err}", entry.name);
        } else {
            assert_eq!((out.as_str(), err, code), ("", advice, 127), "{}", entry.name);
        }
    }
}

/// An installed program that fails for a reason of this place (no system
/// packages, no terminal) is followed by what works instead.
#[tokio::test]
async fn an_installed_program_that_fails_here_gets_the_advice() {
    let mut f = fixture(SandboxSettings::default()).await;
    let Some(program) = ["apt-get", "vim"].into_iter().find(|p| on_host(p)) else {
        clix_testkit::skip_missing(
            "an_installed_program_that_fails_here_gets_the_advice",
            "neither apt-get nor vim is installed",
        );
        return;
    };
    let line = if program == "apt-get" { "apt-get install -y cowsay" } else { "vim -es -c 'q!' nosuch" };
    let (_, err, code) = f.run(line).await;
    let hint = clix_present::failure_hint(program, false).unwrap();
    assert_ne!(code, 0, "{line}: {err}");
    assert!(err.ends_with(&format!("clix: {hint}\n")), "{line}: {err}");
}

/// An installed editor is not started on a file: with no terminal it would
/// only wait for the time limit. Its batch modes run.
#[tokio::test]
async fn an_installed_editor_is_not_opened_on_a_file() {
    let mut f = fixture(SandboxSettings::default()).await;
    for editor in ["vim", "vi", "nano"] {
        let started = std::time::Instant::now();
        let (out, err, code) = f.run(&format!("{editor} gen.py")).await;
        let advice = clix_present::missing_program(editor, false).unwrap();
        let want = if on_host(editor) { 126 } else { 127 };
        assert_eq!((out.as_str(), err, code), ("", format!("[error] {advice}\n"), want), "{editor}");
        // Opened, it would wait for the 30 s time limit; a generous bound under it.
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{editor}: {:?}", started.elapsed());
    }
    if on_host("vim") {
        let (out, err, code) = f.run("vim -es -c '%s/print/PRINT/' -c wq gen.py && grep -c PRINT gen.py").await;
        assert_eq!((out.as_str(), code), ("1\n", 0), "{err}");
    }
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap_or_default();
    for editor in ["vim", "vi", "nano"] {
        let opened = format!(r#""argv":["{editor}","gen.py"]"#);
        assert!(!audit.contains(&opened), "{editor} was started on the file: {audit}");
    }
}

/// What a line exports reaches a sandboxed program, as in bash (a stderr
/// hint "run with MODE=release" must be followable); a secret-looking name
/// never does, and the sandbox keeps its own PATH and HOME.
#[tokio::test]
async fn exported_variables_reach_sandboxed_programs_but_secrets_do_not() {
    let mut f = fixture(SandboxSettings::default()).await;
    let show = |name: &str| format!("python3 -c \"import os; print(os.environ.get('{name}'))\"");
    let cases = [
        (format!("export MODE=release; {}", show("MODE")), "release\n"),
        (format!("LEVEL=debug {}", show("LEVEL")), "debug\n"),
        (show("LEVEL"), "None\n"),
        (format!("export STAGE=a; {} | tr a-z A-Z", show("STAGE")), "A\n"),
        (format!("export GITHUB_TOKEN=t0k; {}", show("GITHUB_TOKEN")), "None\n"),
        (format!("API_KEY=k {}", show("API_KEY")), "None\n"),
        (format!("export HOME=/root; {}", show("HOME")), "/home/agent\n"),
        (format!("export PATH=/nowhere:$PATH; {}", show("PATH")), ""),
    ];
    for (line, want) in &cases {
        let (out, err, code) = f.run(line).await;
        assert_eq!(code, 0, "{line}: {err}");
        if want.is_empty() {
            assert!(!out.contains("/nowhere"), "{line}: the sandbox's PATH was replaced: {out}");
        } else {
            assert_eq!(&out, want, "{line}: {err}");
        }
    }
}

/// Issue 29: a program's output past what the sandbox kept was cut, and
/// the next stage (or a file) took the rest as whole, with exit 0
/// (`python3 … | wc -c` printed 67108864 for 73400320 bytes). Now a stage's
/// output past the line's memory budget stops the whole line, as the
/// shell's own stages do: nothing after it runs, no partial file is left,
/// and a routed line stops the same way.
#[tokio::test]
async fn output_past_the_memory_budget_stops_the_line() {
    let limits = ShellLimits { max_memory_bytes: 1 << 20, ..ShellLimits::default() };
    let mut f = fixture_with(SandboxSettings { big_file_mb: 1, ..SandboxSettings::default() }, limits).await;
    std::fs::write(f.ws.path().join("big.log"), "line\n".repeat(300_000)).unwrap();
    let stop = "passed the memory one line may hold (1 MiB, [limits] max_memory_bytes)";
    for (line, what) in [
        ("python3 -c 'print(\"x\" * 2000000)' | wc -c; echo after", "python3's output"),
        ("python3 -c 'import sys; sys.stderr.write(\"e\" * 2000000)' 2>&1 | wc -c", "python3's output"),
        ("python3 -c 'print(\"x\" * 2000000)' > out.txt", "python3's output"),
        ("sandbox bash 'head -c 2000000 /dev/zero' | wc -c", "bash's output"),
        ("cat big.log", "cat's output"),
    ] {
        let (out, err, code) = f.run(line).await;
        assert_eq!(code, 1, "{line}: {out}{err}");
        assert!(err.contains(&format!("[error] stopped: {what} {stop}")), "{line}: {err}");
        assert!(!out.contains("after") && !out.contains("1048576"), "{line}: {out}");
    }
    assert!(
        !f.ws.path().join("out.txt").exists() || std::fs::metadata(f.ws.path().join("out.txt")).unwrap().len() == 0
    );
    // A routed line already streamed in GNU tools: the way out is a file
    // GNU bash writes, not running the line there again.
    let (_, err, _) = f.run("cat big.log").await;
    assert!(err.contains("though the line already ran in the sandbox's GNU tools"), "{err}");
    assert!(err.contains("sandbox bash '<line> > out.txt'"), "{err}");
    let (_, err, _) = f.run("python3 -c 'print(\"x\" * 2000000)' | wc -c").await;
    assert!(err.contains("Raise the limit, or run the line in the sandbox's GNU bash"), "{err}");
    // Under the budget, the whole output passes.
    let (out, _, code) = f.run("python3 -c 'print(\"x\" * 500000)' | wc -c").await;
    assert_eq!((out.as_str(), code), ("500001\n", 0));
}

/// Issue 29: tree walks over a big tree run whole in the sandbox's GNU
/// tools, which read listings where the shell stats every entry through the
/// handle (`find` over 30,000 files was 4× bash). The answers are bash's;
/// a small tree, and a `find` that runs commands, stay in the shell.
#[tokio::test]
async fn big_trees_walk_through_gnu_tools_in_the_sandbox() {
    let mut f = fixture(SandboxSettings { big_tree_entries: 50, ..SandboxSettings::default() }).await;
    for i in 0..120 {
        let dir = f.ws.path().join(format!("src/m{}/n{}", i % 4, i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        let body = if i % 5 == 0 { format!("fn f{i}() {{}} // TODO\n") } else { format!("fn f{i}() {{}}\n") };
        std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
    }
    std::fs::create_dir_all(f.ws.path().join("small")).unwrap();
    std::fs::write(f.ws.path().join("small/a.txt"), "TODO\n").unwrap();
    let routed = [
        "find src -type f | wc -l",
        "find src -name '*.rs' | sort | tail -3",
        "find src -type f -name '*.rs' | xargs grep -l TODO | wc -l",
        "grep -rl TODO src | sort | head -3",
        "grep -rc TODO src | grep -vc ':0$'",
        "du -a src | wc -l",
        "ls -R src | wc -l",
    ];
    let stays = ["find small -type f | wc -l", "find src -name f1.rs -exec cat {} +"];
    for line in routed.iter().chain(&stays) {
        let bash = std::process::Command::new("bash").args(["-c", line]).current_dir(f.ws.path()).output().unwrap();
        let (out, err, code) = f.run(line).await;
        assert_eq!((out.as_str(), code), (String::from_utf8_lossy(&bash.stdout).as_ref(), 0), "{line}: {err}");
    }
    let audit = std::fs::read_to_string(f.state.path().join("audit.jsonl")).unwrap();
    for line in routed {
        let logged = serde_json::to_string(line).unwrap();
        assert!(audit.contains(&format!(r#""argv":["bash","-c",{logged}]"#)), "not routed: {line}\n{audit}");
    }
    for line in stays {
        assert!(!audit.contains(&serde_json::to_string(line).unwrap()), "routed: {line}\n{audit}");
    }
}
