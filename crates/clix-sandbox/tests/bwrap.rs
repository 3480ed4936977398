//! The sandbox against real bubblewrap. These need `bwrap` (Debian package
//! `bubblewrap`, installed by .ci/run) and unprivileged user namespaces.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::Path;
use std::time::{Duration, Instant};

use clix_sandbox::{AuditLog, Outcome, Request, Sandbox, SandboxSettings};

fn sandbox(ws: &Path, settings: SandboxSettings, audit: Option<AuditLog>) -> Sandbox {
    Sandbox::new(settings, ws, None, audit, "test-session".into())
}

async fn run(sb: &Sandbox, ws: &Path, argv: &[&str], timeout_secs: u64) -> Outcome {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    sb.run(Request::new(&argv, ws, None, Duration::from_secs(timeout_secs))).await.expect("sandbox runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::canonicalize(ws.path()).unwrap();
    ws
}

#[tokio::test]
async fn python_and_git_work_in_the_workspace() {
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    let o = run(&sb, ws.path(), &["python3", "-c", "print(6*7)"], 30).await;
    assert_eq!((text(&o.stdout).as_str(), o.exit_code), ("42\n", 0), "{}", text(&o.stderr));
    let o =
        run(&sb, ws.path(), &["bash", "-c", "git init -q && echo x > f && git add f && git status --short"], 30).await;
    assert_eq!(text(&o.stdout), "A  f\n", "{}", text(&o.stderr));
    assert!(ws.path().join(".git").is_dir(), "the repository is in the host workspace");
}

#[tokio::test]
async fn host_files_outside_stay_out_of_reach() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").unwrap();
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    let script = format!(
        "cat {0} ; cat /etc/shadow ; ls /root/.ssh ; echo pwned > {0} ; touch /usr/pwned ; echo done",
        secret.display()
    );
    let o = run(&sb, ws.path(), &["bash", "-c", &script], 30).await;
    assert!(!text(&o.stdout).contains("TOP-SECRET"));
    assert_eq!(text(&o.stdout), "done\n");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOP-SECRET");
    assert!(!Path::new("/usr/pwned").exists());
}

#[tokio::test]
async fn no_network_by_default() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    let code = format!("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')");
    let o = run(&sb, ws.path(), &["python3", "-c", &code], 30).await;
    assert_ne!(o.exit_code, 0);
    assert!(!text(&o.stdout).contains("connected"));
    assert!(text(&o.stderr).contains("Error"), "{}", text(&o.stderr));
}

#[tokio::test]
async fn timeout_kills_the_group_with_124() {
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    // The bounds say "cut at the limit, not run to its end (100 s)": generous,
    // far below it, so a busy machine does not fail them.
    let started = Instant::now();
    let o = run(&sb, ws.path(), &["sleep", "100"], 2).await;
    assert_eq!(o.exit_code, 124);
    assert_eq!(o.timed_out, Some(Duration::from_secs(2)));
    assert!(started.elapsed() < Duration::from_secs(50), "{:?}", started.elapsed());
    // A program that ignores SIGTERM is killed after the grace period.
    let started = Instant::now();
    let o = run(&sb, ws.path(), &["bash", "-c", "trap '' TERM; sleep 100"], 1).await;
    assert_eq!(o.exit_code, 124);
    assert!(started.elapsed() < Duration::from_secs(50), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hang() {
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    let started = Instant::now();
    let o = run(&sb, ws.path(), &["bash", "-c", "(sleep 100 &); echo done"], 60).await;
    assert_eq!(text(&o.stdout), "done\n");
    assert_eq!(o.exit_code, 0);
    // A hang would last until the 60 s limit; a generous bound well under it.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

#[tokio::test]
async fn endless_output_is_capped_with_exact_counts() {
    let ws = workspace();
    let settings = SandboxSettings { output_cap_mb: 1, ..SandboxSettings::default() };
    let sb = sandbox(ws.path(), settings, None);
    let o = run(&sb, ws.path(), &["seq", "1", "2000000"], 30).await;
    let expected_bytes: u64 = (1..=2_000_000u64).map(|n| n.to_string().len() as u64 + 1).sum();
    assert_eq!(o.exit_code, 0);
    assert_eq!(o.stdout.len(), 1 << 20);
    assert_eq!(o.stdout_total, expected_bytes);
    assert_eq!(o.stdout_lines_total, 2_000_000);
    assert_eq!(o.stdout_dropped(), expected_bytes - (1 << 20));
    let o = run(&sb, ws.path(), &["yes"], 2).await;
    assert_eq!((o.exit_code, o.stdout.len()), (124, 1 << 20));
    assert!(o.stdout_total > 1 << 20);
}

#[tokio::test]
async fn fork_bomb_is_contained() {
    let ws = workspace();
    let settings = SandboxSettings { max_processes: 64, ..SandboxSettings::default() };
    let sb = sandbox(ws.path(), settings, None);
    if !sb.process_limit_enforced() {
        clix_testkit::skip_host_limit(
            "fork_bomb_is_contained",
            "the process limit cannot be enforced on this host (root without a pids cgroup)",
        );
        return;
    }
    let started = Instant::now();
    let o = run(&sb, ws.path(), &["bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived"], 10).await;
    // Ended by its 10 s limit at the latest, not left running: a generous bound.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(text(&o.stderr).contains("fork") || text(&o.stderr).contains("resource"), "{}", text(&o.stderr));
    // The host is fine and the sandbox still works.
    let o = run(&sb, ws.path(), &["python3", "-c", "print('ok')"], 30).await;
    assert_eq!(text(&o.stdout), "ok\n");
}

#[tokio::test]
async fn every_run_is_audited_with_secrets_redacted() {
    let ws = workspace();
    let state = tempfile::tempdir().unwrap();
    let log = AuditLog::new(state.path().join("audit.jsonl"));
    let sb = sandbox(ws.path(), SandboxSettings::default(), Some(log.clone()));
    run(&sb, ws.path(), &["env", "API_KEY=hunter2", "true"], 30).await;
    run(&sb, ws.path(), &["false"], 30).await;
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&log.path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["argv"], serde_json::json!(["env", "API_KEY=***", "true"]));
    assert_eq!(lines[0]["session"], "test-session");
    assert_eq!(lines[1]["exit_code"], 1);
    assert!(lines[1]["duration_ms"].is_number() && lines[1]["ts_ms"].is_number());
    assert!(!std::fs::read_to_string(&log.path).unwrap().contains("hunter2"));
}

#[tokio::test]
async fn status_tells_the_truth() {
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    let status = sb.status();
    assert!(status.starts_with("isolation: bubblewrap"), "{status}");
    assert!(status.contains("network: off"));
    assert!(status.contains(&format!("workspace (read-write): {}", ws.path().display())));
    let open = sandbox(ws.path(), SandboxSettings { network: true, ..SandboxSettings::default() }, None);
    assert!(open.status().contains("network: ON"));
}

#[tokio::test]
async fn per_run_read_only_folders_env_and_cwd() {
    let ws = workspace();
    let ws = std::fs::canonicalize(ws.path()).unwrap();
    let tool_dir = ws.join(".clix/hub/t");
    std::fs::create_dir_all(&tool_dir).unwrap();
    std::fs::write(tool_dir.join("data.txt"), "tool data\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::write(outside.join("x.txt"), "outside\n").unwrap();
    let sb = sandbox(&ws, SandboxSettings::default(), None);
    let argv: Vec<String> = ["bash", "-c", "cat data.txt $OUT/x.txt; echo $TOOL_MODE; echo w > data.txt"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let read_only = [tool_dir.clone(), outside.clone()];
    let env = [("TOOL_MODE".to_string(), "strict".to_string()), ("OUT".to_string(), outside.display().to_string())];
    // cwd in a read-only folder outside the workspace is allowed for this run only.
    let mut req = Request::new(&argv, &outside, None, Duration::from_secs(30));
    req.read_only = &read_only;
    req.env = &env;
    let o = sb.run(req.clone()).await.unwrap();
    assert_eq!(text(&o.stdout), "outside\nstrict\n", "{}", text(&o.stderr));
    let mut inside = req.clone();
    inside.cwd = &tool_dir;
    let o = sb.run(inside).await.unwrap();
    assert_eq!(text(&o.stdout), "tool data\noutside\nstrict\n", "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("Read-only file system"), "the tool folder inside the workspace stays read-only");
    assert_eq!(std::fs::read_to_string(tool_dir.join("data.txt")).unwrap(), "tool data\n");
    // Without the per-run folder, that cwd is refused.
    let err = sb.run(Request::new(&argv, &outside, None, Duration::from_secs(5))).await.unwrap_err();
    assert!(err.to_string().contains("outside the workspace"), "{err}");
}

/// Every process's command line, as `ps` shows it to any local user.
fn all_command_lines() -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .collect()
}

#[tokio::test]
async fn variables_reach_the_program_without_showing_in_ps() {
    let ws = workspace();
    let sb = sandbox(ws.path(), SandboxSettings::default(), None);
    // The program waits for `go`, which the test makes once it has looked.
    let script = "until [ -e go ]; do sleep 0.05; done; echo $TOOL_TOKEN";
    let argv: Vec<String> = ["bash", "-c", script].iter().map(|s| s.to_string()).collect();
    let env = [("TOOL_TOKEN".to_string(), "s3cret-value-42".to_string())];
    let mut req = Request::new(&argv, ws.path(), None, Duration::from_secs(120));
    req.env = &env;
    let run = sb.run(req);
    let look = async {
        // Looks once the program runs (its command line shows up).
        let started = Instant::now();
        let mut lines = all_command_lines();
        while !lines.iter().any(|l| l.contains(script)) && started.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            lines = all_command_lines();
        }
        std::fs::write(ws.path().join("go"), "").unwrap();
        lines
    };
    let (outcome, lines) = tokio::join!(run, look);
    assert_eq!(text(&outcome.unwrap().stdout), "s3cret-value-42\n");
    assert!(lines.iter().any(|l| l.contains(script)), "the program was running when we looked");
    assert!(!lines.iter().any(|l| l.contains("s3cret-value-42")), "a value in a command line: {lines:?}");
}

/// A service's own folder (an MCP server's) is checked as a run's extra
/// folder is: one that is or holds a secret store, the home folder or
/// clix's own folders is refused before anything starts; a folder of the
/// program's own is not.
#[tokio::test]
async fn a_service_folder_bringing_secrets_or_clix_folders_is_refused() {
    let ws = workspace();
    let host = tempfile::tempdir().unwrap();
    let home = host.path().join("home");
    let config = host.path().join("config/clix");
    for dir in [home.join(".ssh"), config.clone(), host.path().join("servers/notes")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let host_env = clix_sandbox::HostEnv { path: "/usr/bin:/bin".into(), home: Some(home.clone()) };
    let sb = Sandbox::with_host(SandboxSettings::default(), ws.path(), Some(&config), None, "t".into(), host_env);
    let argv = vec!["/bin/cat".to_string()];
    let start = |folder: std::path::PathBuf| {
        let sb = &sb;
        let (argv, cwd) = (&argv, ws.path());
        async move {
            let read_only = [folder];
            let req = clix_sandbox::ServiceRequest {
                argv,
                cwd,
                read_only: &read_only,
                share_network: false,
                fds: Vec::new(),
            };
            sb.start_stdio_service(req, &[]).await.map(|_| ()).map_err(|e| e.to_string())
        }
    };
    for refused in [home.join(".ssh"), home.clone(), host.path().join("config"), host.path().to_path_buf()] {
        let error = start(refused.clone()).await.expect_err("refused");
        assert!(
            error.contains("would expose a secret store, clix's own folders or the home folder"),
            "{refused:?}: {error}"
        );
    }
    if let Err(error) = start(host.path().join("servers/notes")).await {
        assert!(!error.contains("would expose"), "a folder of its own: {error}");
    }
}
