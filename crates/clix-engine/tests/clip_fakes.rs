//! `clip` for containers and Kubernetes against FAKE `docker`, `podman` and
//! `kubectl` programs placed first on PATH: each records its exact argv and
//! plays the other side (an `exec` runs the given argv in a folder standing
//! for the container's filesystem, `cp` copies to and from it). No real
//! engine or cluster is involved: these tests pin the argv and clip's
//! handling of exit codes, stdin and copies.
//!
//! PATH is changed only in a child process: each test runs itself again
//! with the fakes' folder first on PATH.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::{Path, PathBuf};
use std::process::Command;

use clix_clip::argv::{READY_JSONPATH, WRAPPER};
use clix_clip::{ClipConfig, ClipEntry};
use clix_engine::{Engine, EngineConfig, ShellLimits};

const FAKE: &str = r#"#!/usr/bin/env python3
import json, os, shutil, sys
state = os.environ["CLIX_TEST_FAKE_CLIENTS"]
root = os.path.join(state, "root")
program = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.path.join(state, "calls.jsonl"), "a") as log:
    log.write(json.dumps({"program": program, "argv": args}) + "\n")
CONTAINERS = {"web"}
PODS = {"api-0", "api-1"}

def fail(message, code=1):
    print(message, file=sys.stderr)
    sys.exit(code)

def run_inside(argv):
    os.chdir(root)
    os.execvp(argv[0], argv)

def copy(src, dst):
    if not os.path.exists(src):
        fail("error: %s: no such file or directory" % src)
    if os.path.isdir(dst):
        dst = os.path.join(dst, os.path.basename(src.rstrip("/")))
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy(src, dst)
    sys.exit(0)

if program in ("docker", "podman"):
    inside = lambda p: os.path.join(root, p.split(":", 1)[1].lstrip("/"))
    if args[0] == "inspect":
        if args[-1] in CONTAINERS:
            print("true")
            sys.exit(0)
        fail("Error: No such object: " + args[-1])
    if args[0] == "exec":
        if args[2] not in CONTAINERS:
            fail("Error response from daemon: No such container: " + args[2])
        run_inside(args[3:])
    if args[0] == "cp":
        src, dst = args[1], args[2]
        is_remote = lambda p: ":" in p and p.split(":")[0] in CONTAINERS
        copy(inside(src) if is_remote(src) else src, inside(dst) if is_remote(dst) else dst)
if program == "kubectl":
    while args and args[0] in ("--context", "-n"):
        args = args[2:]
    if args[:2] == ["get", "pods"]:
        print("api-0 False")
        print("api-1 True")
        sys.exit(0)
    if args[:2] == ["get", "pod"]:
        if args[2] in PODS:
            sys.stdout.write("Running")
            sys.exit(0)
        fail('Error from server (NotFound): pods "%s" not found' % args[2])
    if args[0] == "exec":
        if args[2] not in PODS:
            fail('Error from server (NotFound): pods "%s" not found' % args[2])
        run_inside(args[args.index("--") + 1:])
    if args[0] == "cp":
        rest = args[1:]
        if rest[0] == "-c":
            rest = rest[2:]
        src, dst = rest
        remote = lambda p: ":" in p and p.split(":")[0] in PODS
        inside = lambda p: os.path.join(root, p.split(":", 1)[1].lstrip("/"))
        copy(inside(src) if remote(src) else src, inside(dst) if remote(dst) else dst)
fail("fake %s: unexpected call %r" % (program, args), 99)
"#;

/// Runs `test` again in a child process with the fakes first on PATH and
/// returns false; returns true when this is that child.
fn with_fakes(test: &str) -> bool {
    if std::env::var_os("CLIX_TEST_FAKE_CLIENTS").is_some() {
        return true;
    }
    let state = tempfile::tempdir().unwrap();
    let bin = state.path().join("bin");
    std::fs::create_dir_all(bin.join("../root")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    for program in ["docker", "podman", "kubectl"] {
        std::fs::write(bin.join(program), FAKE).unwrap();
        std::fs::set_permissions(bin.join(program), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env("PATH", path)
        .env("CLIX_TEST_FAKE_CLIENTS", state.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the test ran in the child: {text}");
    false
}

fn state() -> PathBuf {
    PathBuf::from(std::env::var_os("CLIX_TEST_FAKE_CLIENTS").unwrap())
}

/// The calls the fakes recorded since the last look, as (program, argv).
fn calls() -> Vec<(String, Vec<String>)> {
    let path = state().join("calls.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, "").unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let argv = v["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
            (v["program"].as_str().unwrap().to_string(), argv)
        })
        .collect()
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

async fn engine(ws: &Path, home: &Path, entries: Vec<ClipEntry>) -> Engine {
    Engine::new(EngineConfig {
        limits: ShellLimits { timeout_secs: 30, ..ShellLimits::default() },
        capabilities: vec![std::sync::Arc::new(ClipConfig {
            environments: entries,
            state_dir: home.join("state"),
            audit_log: Some(clix_audit::AuditLog::new(home.join("state/audit.jsonl"))),
            session_id: "fakes".into(),
            sandbox: None,
            clix_config_dir: None,
            output_cap_bytes: 1 << 20,
        })],
        ..EngineConfig::new(ws)
    })
    .await
    .unwrap()
}

async fn raw(engine: &mut Engine, line: &str) -> (String, String, i32) {
    let r = engine.run_raw(line, None).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}

fn container(name: &str, engine: &str, container: &str) -> ClipEntry {
    ClipEntry {
        name: name.into(),
        description: format!("the {container} container"),
        kind: "container".into(),
        engine: Some(engine.into()),
        container: Some(container.into()),
        ..ClipEntry::default()
    }
}

#[tokio::test]
async fn containers_get_the_exact_argv_exit_codes_stdin_and_copies() {
    if !with_fakes("containers_get_the_exact_argv_exit_codes_stdin_and_copies") {
        return;
    }
    let (ws, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let entries = vec![
        container("web", "docker", "web"),
        container("pod-man", "podman", "web"),
        container("gone", "docker", "gone"),
    ];
    let mut e = engine(ws.path(), home.path(), entries).await;
    calls();

    let (out, err, code) = raw(&mut e, "clip web 'echo hi; echo oops >&2; exit 4'").await;
    assert_eq!((out.as_str(), err.as_str(), code), ("hi\n", "oops\n", 4));
    let want =
        strings(&["exec", "-i", "web", "sh", "-c", WRAPPER, "30", "bash", "-c", "echo hi; echo oops >&2; exit 4"]);
    assert_eq!(calls(), [("docker".to_string(), want)]);

    // stdin from the pipeline reaches the command in the container.
    let (out, _, code) = raw(&mut e, "printf 'a\\nb\\nc\\n' | clip web 'wc -l' | tr -d ' '").await;
    assert_eq!((out.as_str(), code), ("3\n", 0));
    assert_eq!(calls()[0].1[..4], strings(&["exec", "-i", "web", "sh"]));
    // podman, and the line after `--` when it starts like a subcommand.
    let (out, _, code) = raw(&mut e, "clip pod-man -- 'pull() { echo pulled; }; pull'").await;
    assert_eq!((out.as_str(), code), ("pulled\n", 0));
    assert_eq!(calls()[0].0, "podman");

    // Copies: `docker cp` through the staging folder, bytes reported.
    std::fs::create_dir_all(state().join("root/etc/app")).unwrap();
    std::fs::write(state().join("root/etc/app/app.conf"), "port = 80\n").unwrap();
    std::fs::write(state().join("root/etc/app/extra.conf"), "x\n").unwrap();
    let (out, err, code) = raw(&mut e, "clip web pull /etc/app/app.conf").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pulled web:/etc/app/app.conf → app.conf: 1 file, 10 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.path().join("app.conf")).unwrap(), "port = 80\n");
    let call = calls().remove(0);
    assert_eq!((call.0.as_str(), &call.1[..2]), ("docker", &strings(&["cp", "web:/etc/app/app.conf"])[..]));
    assert!(call.1[2].ends_with("/app.conf") && call.1[2].contains("/state/clip/staging-"), "{:?}", call.1);
    let (out, err, code) = raw(&mut e, "clip web pull /etc/app conf").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 files, 12 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.path().join("conf/extra.conf")).unwrap(), "x\n");
    calls();
    std::fs::write(ws.path().join("report.md"), "# ok\n").unwrap();
    std::fs::create_dir_all(state().join("root/tmp")).unwrap();
    let (out, err, code) = raw(&mut e, "clip web push report.md /tmp").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pushed report.md → web:/tmp: 1 file, 5 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(state().join("root/tmp/report.md")).unwrap(), "# ok\n");
    let call = calls().remove(0);
    assert_eq!(call.1[0], "cp");
    assert!(call.1[1].ends_with("/report.md"), "{:?}", call.1);
    assert_eq!(call.1[2], "web:/tmp");
    // A copy that fails says so in the engine's words.
    let (_, err, code) = raw(&mut e, "clip web pull /no/such").await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("docker failed (exit 1): error:"), "{err}");

    // A container that is not there: what failed and what to check.
    let (_, err, code) = raw(&mut e, "clip gone 'ls'").await;
    assert_eq!(code, 255, "{err}");
    assert!(err.contains("cannot reach gone (docker container gone): not running"), "{err}");
    assert!(err.contains("hint: start it, or fix `container` of [[clip]] gone: docker ps -a"), "{err}");
    let (out, _, _) = raw(&mut e, "clip list").await;
    assert!(out.lines().any(|l| l.starts_with("web ") && l.contains("yes")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("gone ") && l.contains("NO")), "{out}");
    let probes: Vec<_> = calls().into_iter().filter(|(_, a)| a[0] == "inspect").map(|(_, a)| a).collect();
    assert!(probes.contains(&strings(&["inspect", "-f", "{{.State.Running}}", "web"])), "{probes:?}");
}

#[tokio::test]
async fn pods_get_the_exact_argv_a_selectors_ready_pod_stdin_and_copies() {
    if !with_fakes("pods_get_the_exact_argv_a_selectors_ready_pod_stdin_and_copies") {
        return;
    }
    let (ws, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let api = ClipEntry {
        name: "api".into(),
        description: "the API pods in prod".into(),
        kind: "kubernetes".into(),
        context: Some("kind-test".into()),
        namespace: Some("prod".into()),
        selector: Some("app=api".into()),
        container: Some("app".into()),
        shell: Some("sh".into()),
        ..ClipEntry::default()
    };
    let ghost = ClipEntry {
        name: "ghost".into(),
        kind: "kubernetes".into(),
        pod: Some("ghost-0".into()),
        ..ClipEntry::default()
    };
    let mut e = engine(ws.path(), home.path(), vec![api, ghost]).await;
    calls();

    let (out, err, code) = raw(&mut e, "clip api 'echo from the pod; exit 7'").await;
    assert_eq!((out.as_str(), code), ("from the pod\n", 7), "{err}");
    let prefix = strings(&["--context", "kind-test", "-n", "prod"]);
    let mut list = prefix.clone();
    list.extend(strings(&["get", "pods", "-l", "app=api", "-o", READY_JSONPATH]));
    let mut exec = prefix.clone();
    exec.extend(strings(&["exec", "-i", "api-1", "-c", "app", "--", "sh", "-c", WRAPPER]));
    let recorded = calls();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(recorded[0], ("kubectl".to_string(), list));
    assert_eq!(recorded[1].1[..exec.len()], exec[..], "the first READY pod, api-1");
    assert_eq!(recorded[1].1[exec.len() + 1..], strings(&["sh", "-c", "echo from the pod; exit 7"]));

    let (out, _, code) = raw(&mut e, "seq 1 5 | clip api 'paste -sd+ | bc'").await;
    assert_eq!((out.as_str(), code), ("15\n", 0));
    calls();

    std::fs::create_dir_all(state().join("root/data")).unwrap();
    std::fs::write(state().join("root/data/x.csv"), "a,b\n").unwrap();
    let (out, err, code) = raw(&mut e, "clip api pull /data/x.csv in/x.csv").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 file, 4 bytes"), "{out}");
    let cp = calls().pop().unwrap().1;
    assert_eq!(cp[..8], strings(&["--context", "kind-test", "-n", "prod", "cp", "-c", "app", "api-1:/data/x.csv"])[..]);
    std::fs::write(ws.path().join("new.csv"), "c,d\n1,2\n").unwrap();
    let (out, err, code) = raw(&mut e, "clip api push new.csv /data/new.csv").await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 file, 8 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(state().join("root/data/new.csv")).unwrap(), "c,d\n1,2\n");
    let cp = calls().pop().unwrap().1;
    assert_eq!(cp.last().unwrap(), "api-1:/data/new.csv");

    let (_, err, code) = raw(&mut e, "clip ghost 'ls'").await;
    assert_eq!(code, 255, "{err}");
    assert!(err.contains("not running") && err.contains("kubectl get pods"), "{err}");
    assert_eq!(calls()[0].1[..3], strings(&["exec", "-i", "ghost-0"]));
    let (out, _, _) = raw(&mut e, "clip api").await;
    assert!(out.contains("kind:    kubernetes") && out.contains("status:  reachable"), "{out}");
    assert!(out.contains("first ready pod of app=api, container app in namespace prod (context kind-test)"), "{out}");
}

/// Issue 28, finding 13: a pull staged whatever the copy client wrote, with
/// no cap (an 858 MB remote file was staged, then read whole into memory).
/// Now no staged file grows past clip's cap (RLIMIT_FSIZE on the client),
/// and the pull says so, with nothing left in the workspace.
#[tokio::test]
async fn a_pull_past_the_transfer_cap_stops_with_the_cap_and_leaves_nothing() {
    if !with_fakes("a_pull_past_the_transfer_cap_stops_with_the_cap_and_leaves_nothing") {
        return;
    }
    let (ws, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut e = engine(ws.path(), home.path(), vec![container("web", "docker", "web")]).await;
    std::fs::create_dir_all(state().join("root/data")).unwrap();
    // Sparse: it costs no disk until the fake client copies it.
    let big = std::fs::File::create(state().join("root/data/big.bin")).unwrap();
    big.set_len(clix_clip::MAX_FILE_BYTES + (1 << 20)).unwrap();
    let (out, err, code) = raw(&mut e, "clip web pull /data/big.bin").await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("larger than clip's cap of 1024 MiB per transfer"), "{err}");
    assert!(!ws.path().join("big.bin").exists(), "nothing reaches the workspace");
    let staging = home.path().join("state/clip");
    let left: Vec<_> = std::fs::read_dir(&staging).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "the staging folder is cleared: {left:?}");
}
