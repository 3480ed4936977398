//! The attack corpus against the real binary: what a hostile workspace can
//! make `clix` do. Canaries live outside the workspace and in the
//! environment; none may come out, and clix's own files may never be inside
//! a workspace. (The engine-level cases, the symlink race among them, are in
//! clix-engine's tests/attacks.rs; see docs/security.md.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use clix_testkit::Canary;
use common::{clix, peak_rss_mib, text};

const CANARY: &str = "canary-5e2d";

/// A workspace that is the home folder, holds clix's config or lies in a
/// secret store is refused before anything runs, with what to pass instead.
#[test]
fn workspaces_that_hold_clix_files_or_secrets_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let clix_home = home.join(".clix-home");
    std::fs::create_dir_all(&clix_home).unwrap();
    std::fs::write(clix_home.join("config.toml"), format!("# {CANARY}\n")).unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();

    // The home folder itself (it holds ~/.config/clix and the secret stores).
    let out = clix(&clix_home, &home, &["run", "cat .clix-home/config.toml"]).env("HOME", &home).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(!text(&out.stdout).contains(CANARY) && !err.contains(CANARY));
    assert!(err.contains("your home folder") && err.contains("--workspace"), "{err}");

    // A folder that holds CLIX_HOME.
    let out = clix(&clix_home, &home, &["run", "true"]).env("HOME", &project).output().unwrap();
    assert!(text(&out.stderr).contains("clix's config folder"), "{}", text(&out.stderr));

    // A folder inside a secret store.
    let inside = root.path().join("p/.aws/project");
    std::fs::create_dir_all(&inside).unwrap();
    let out = clix(&clix_home, &inside, &["run", "true"]).env("HOME", &project).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "a folder inside .aws was accepted");
    assert!(text(&out.stderr).contains("inside a secret store"), "{}", text(&out.stderr));

    // A project folder is fine.
    let out = clix(&clix_home, &project, &["run", "echo ok"]).env("HOME", &home).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Issue 52: a project with secret stores of its own (`.npmrc` at its top,
/// `.aws` beside it, `web/.npmrc` below) is served, never refused; the
/// stores are hidden from the shell and from the sandbox's programs alike,
/// and clix says once which are hidden.
#[test]
fn a_projects_secret_stores_are_hidden_not_refused() {
    let root = tempfile::tempdir().unwrap();
    let (home, ws) = (root.path().join("home"), root.path().join("project"));
    std::fs::create_dir_all(ws.join("web/deep/er")).unwrap();
    std::fs::create_dir_all(ws.join(".aws")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for (file, text) in [
        (".npmrc", format!("//registry.npmjs.org/:_authToken={CANARY}\n")),
        (".aws/credentials", format!("aws_secret_access_key = {CANARY}\n")),
        ("web/.npmrc", format!("//r/:_authToken={CANARY}\n")),
        ("web/deep/er/.npmrc", format!("//r/:_authToken={CANARY}\n")),
        ("package.json", "{\"name\": \"app\"}\n".into()),
        ("web/app.js", "console.log(1)\n".into()),
    ] {
        std::fs::write(ws.join(file), text).unwrap();
    }
    let lines = [
        // The shell: not listed, not read, not found.
        "ls -a; ls -a web; cat .npmrc web/.npmrc web/deep/er/.npmrc .aws/credentials; test -e .npmrc && echo FOUND; grep -r authToken . ; cat package.json",
        // The sandbox's programs: covered.
        "python3 -c 'import os\nfor p in [\".npmrc\", \"web/.npmrc\", \"web/deep/er/.npmrc\", \".aws/credentials\"]:\n  try: print(p, repr(open(p).read()))\n  except OSError as e: print(p, type(e).__name__)\nprint(sorted(os.listdir(\".aws\")))'",
        "bash -c 'cat .npmrc web/.npmrc .aws/credentials; grep -r authToken .'",
    ];
    for (n, line) in lines.iter().enumerate() {
        let out = clix(&home, &ws, &["run", line]).env("HOME", &home).output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(!stdout.contains(CANARY) && !stderr.contains(CANARY), "{line}\n{stdout}\n{stderr}");
        assert!(!stdout.contains("FOUND"), "{stdout}");
        if n == 0 {
            assert!(
                stdout.contains("package.json") && stdout.contains("app.js") && stdout.contains("\"app\""),
                "{stdout}"
            );
            assert!(!stdout.contains(".npmrc\n") && !stdout.contains(".aws\n"), "listed: {stdout}");
            assert!(stdout.contains("hidden from agents"), "{stdout}");
            // Said once, naming what is hidden.
            assert!(stderr.contains("hidden from the agent") && stderr.contains(".aws, .npmrc"), "{stderr}");
        } else {
            assert!(!stderr.contains("hidden from the agent"), "said again: {stderr}");
        }
    }
    assert!(ws.join(".npmrc").exists() && ws.join("web/.npmrc").exists(), "a store was lost");
}

/// Issue 28, finding 5: a line whose program wrote 64 MB to stdout and 64 MB
/// to stderr took clix to about 680 MB (the output was copied five times on
/// its way through the shell). It is held once now: the peak stays under the
/// output's size plus 64 MiB. The program writes in 1 MiB pieces, so its own
/// memory stays small and the peak measured is clix's.
#[test]
fn a_programs_output_is_held_once() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    const MIB: usize = 64;
    let line = format!(
        "python3 -c 'import sys\nfor _ in range({MIB}): sys.stdout.write(\"x\" * (1 << 20)); sys.stderr.write(\"y\" * (1 << 20))'"
    );
    let (code, peak_mib) = peak_rss_mib(clix(home.path(), ws.path(), &["run", &line]));
    assert_eq!(code, Some(0), "clix failed");
    let spilled: u64 =
        std::fs::read_dir(ws.path().join(".clix/out")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(spilled >= (MIB as u64) << 20, "the output was not kept whole: {spilled} bytes spilled");
    let bound = 2 * MIB as u64 + 64;
    assert!(peak_mib < bound, "clix peaked at {peak_mib} MiB for 2 x {MIB} MiB of output (bound {bound})");
}

/// Issue 28, finding 5: files written outside the workspace live in the
/// session's memory for as long as the session. They are bounded by
/// `[limits] max_tmp_bytes`: a write past it fails and says where to write
/// instead, and what fits is kept whole.
#[test]
fn in_memory_files_are_bounded_by_max_tmp_bytes() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(home.path().join("config.toml"), "[limits]\nmax_tmp_bytes = 1000000\n").unwrap();
    let line = "head -c 600000 /dev/zero > /tmp/a; wc -c < /tmp/a; head -c 600000 /dev/zero > /tmp/b; \
                seq 1 300000 > /tmp/c; ls /tmp";
    let out = clix(home.path(), ws.path(), &["run", line]).output().unwrap();
    let shown = text(&out.stdout);
    assert!(shown.contains("600000\n"), "{shown}");
    assert!(shown.contains("filesystem full"), "{shown}");
    assert!(shown.contains("file too large"), "{shown}");
    assert!(
        shown.contains("held in memory, 976.6KB in all ([limits] max_tmp_bytes); write big files inside the workspace"),
        "{shown}"
    );
    let listed: Vec<&str> = shown.lines().filter(|l| ["a", "b", "c"].contains(l)).collect();
    assert_eq!(listed, ["a"], "{shown}");
}

/// Issue 28, finding 2: with `~/.local/bin` on PATH (Ubuntu's default
/// `~/.profile`) and no CLIX_HOME, `~/.local` was mounted, and with it
/// `~/.local/share/clix/memory.sqlite` and `~/.local/state/clix/audit.jsonl`;
/// with `~/bin` on PATH, the whole home.
#[test]
fn clix_own_folders_and_the_home_are_never_mounted_for_a_path_folder() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().canonicalize().unwrap().join("home");
    let ws = root.path().canonicalize().unwrap().join("ws");
    for dir in [home.join(".local/bin"), home.join("bin"), home.join(".local/share/clix"), ws.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let path = format!("{0}/.local/bin:{0}/bin:{1}", home.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(env!("CARGO_BIN_EXE_clix"))
        .args(["run", "sandbox status"])
        .current_dir(&ws)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", &path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let status = text(&out.stdout);
    let read_only = status.lines().find(|l| l.starts_with("read-only:")).unwrap_or_else(|| panic!("{status}"));
    let mounts: Vec<&str> = read_only.trim_start_matches("read-only:").split_whitespace().collect();
    let (local, local_bin, bin) = (home.join(".local"), home.join(".local/bin"), home.join("bin"));
    for refused in [&local, &home] {
        assert!(!mounts.contains(&refused.to_str().unwrap()), "{} is mounted: {status}", refused.display());
    }
    for mounted in [&local_bin, &bin] {
        assert!(mounts.contains(&mounted.to_str().unwrap()), "{} is not mounted: {status}", mounted.display());
    }
}

/// Issue 28, finding 9: an eval suite's `hub` folder was loaded like the
/// person's own, though a suite is untrusted input (a cloned repository's
/// `evals/`): a task's tool with `network: true` reached a host listener
/// with the sandbox's network off. Now it is the attempt's workspace hub:
/// such a tool is not ready (with the reason), and a symlink in the folder
/// is not followed.
#[test]
fn an_eval_suites_hub_is_a_workspaces_hub() {
    let root = tempfile::tempdir().unwrap();
    let (home, suite) = (root.path().join("home"), root.path().join("suite"));
    let tool = suite.join("hub/probe");
    std::fs::create_dir_all(&tool).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        tool.join("manifest.toml"),
        "name = \"probe\"\nversion = \"1.0.0\"\ndescription = \"tries the host\"\ncommand = \"./probe\"\nnetwork = true\n",
    )
    .unwrap();
    let probe = format!(
        "#!/usr/bin/env python3\nimport socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n    \
         print('REACHED')\nexcept OSError:\n    print('BLOCKED')\n"
    );
    std::fs::write(tool.join("probe"), probe).unwrap();
    std::fs::set_permissions(tool.join("probe"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let canary = root.path().join("canary.txt");
    std::fs::write(&canary, CANARY).unwrap();
    std::os::unix::fs::symlink(&canary, tool.join("leak")).unwrap();
    let task = serde_json::json!({
        "id": "hub_probe", "category": "hub", "description": "a suite's tool asks for the network",
        "prompt": "Run the probe tool.", "hub": "hub", "tags": ["run-only", "hub"],
        "solution": ["probe; cat .clix/hub/probe/leak"],
        "expectations": [
            {"check": "command:probe 2>&1 | grep -q 'cannot have network: true'"},
            {"check": "command:test ! -e .clix/hub/probe/leak"},
        ],
    });
    std::fs::write(suite.join("suite.jsonl"), format!("{task}\n")).unwrap();
    let out = clix(&home, &suite, &["eval", "suite.jsonl", "--solution", "--tools", "run", "--json"]).output().unwrap();
    let all = all_text(&out);
    assert!(!all.contains("REACHED"), "a suite's hub tool reached a host listener: {all}");
    assert!(!all.contains(CANARY), "a suite's hub folder's symlink was followed: {all}");
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    let attempt = &results["attempts"][0];
    assert_eq!(attempt["passed"], true, "{all}");
    // The oracle: nothing knocked on the host's listener.
    listener.set_nonblocking(true).unwrap();
    let knocked = listener.accept();
    assert!(knocked.is_err(), "a suite's hub tool reached a host listener: {knocked:?}");
}

/// Who runs clix: this process's user, or `nobody` (only a root test
/// process can switch to it, with util-linux's setpriv).
struct Runner {
    /// The binary; for `nobody`, a copy every user can run (the build folder
    /// may be private).
    bin: PathBuf,
    as_nobody: bool,
    _dir: tempfile::TempDir,
}

const NOBODY: u32 = 65534;

impl Runner {
    fn new(as_nobody: bool) -> Runner {
        let dir = open_tempdir();
        if !as_nobody {
            return Runner { bin: env!("CARGO_BIN_EXE_clix").into(), as_nobody, _dir: dir };
        }
        // Copied by another process: a write handle opened here could leak
        // into a child another test forks meanwhile, and running the copy
        // would then fail with "Text file busy".
        let bin = dir.path().join("clix");
        let copied = Command::new("install").args(["-m", "0755", env!("CARGO_BIN_EXE_clix")]).arg(&bin).status();
        assert!(copied.is_ok_and(|s| s.success()), "cannot copy the binary for nobody");
        Runner { bin, as_nobody, _dir: dir }
    }

    /// `clix args…` in `ws` with its own CLIX_HOME, a cleared environment
    /// and, before it, `wrapper` (e.g. prlimit).
    fn clix(&self, home: &Path, ws: &Path, wrapper: &[&str], args: &[&str]) -> Command {
        let mut argv: Vec<OsString> = Vec::new();
        if self.as_nobody {
            argv.extend(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"].map(OsString::from));
        }
        argv.extend(wrapper.iter().map(OsString::from));
        argv.push(self.bin.clone().into());
        argv.extend(args.iter().map(OsString::from));
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(ws)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CLIX_HOME", home)
            .env("OPENAI_API_KEY", format!("{CANARY}-openai"))
            .env("MY_TOKEN", format!("{CANARY}-token"))
            .stdin(Stdio::null());
        cmd
    }

    /// A workspace and a CLIX_HOME owned by the runner, beside a canary
    /// folder whose files the runner could read, change and delete, if the
    /// jail let it.
    fn fixture(&self) -> Corpus {
        let root = open_tempdir();
        let (ws, home) = (root.path().join("ws"), root.path().join("home"));
        for dir in [&ws, &home] {
            std::fs::create_dir(dir).unwrap();
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let canary = Canary::plant(&root.path().join("canary"), CANARY);
        if self.as_nobody {
            for dir in [&ws, &home] {
                std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
            }
        }
        Corpus { _root: root, ws, home, canary }
    }
}

/// A temp folder others can enter (tempfile makes them 0700).
fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

struct Corpus {
    _root: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
    canary: Canary,
}

impl Corpus {
    fn assert_canary_untouched(&self, case: &str) {
        self.canary.assert_untouched(case);
    }
}

/// Runs `cmd` to its end within `limit`, or kills it and fails.
fn finish(mut cmd: Command, limit: Duration, case: &str) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{case}: clix did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn all_text(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// `os.symlink(target, link)` from a program in the sandbox (bashkit itself
/// refuses absolute symlinks; a sandboxed program does not).
fn plant(r: &Runner, c: &Corpus, target: &Path, link: &str) {
    let line = format!("python3 -c \"import os; os.symlink('{}', '{link}')\"", target.display());
    let out = r.clix(&c.home, &c.ws, &[], &["run", &line]).output().unwrap();
    assert!(out.status.success(), "{line}: {}", all_text(&out));
}

/// The swap loop of a hostile program: exchange `d` and `x` with
/// renameat2(RENAME_EXCHANGE) until `stop` exists, then print the count.
const SWAPPER: &str = r#"
import ctypes, os, platform
nr = {"x86_64": 316, "aarch64": 276}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
open("started", "w").close()
swaps = 0
while not os.path.exists("stop"):
    if libc.syscall(nr, -100, b"d", -100, b"x", 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    swaps += 1
print(swaps)
"#;

/// The race that broke bashkit's RealFs: a sandboxed program swaps a real
/// folder `d` and a symlink `x` to the canary folder for as long as another
/// clix sends 1,000 reads, 100 writes and 100 deletes through `d`.
fn symlink_race(r: &Runner) {
    let c = r.fixture();
    let out = r.clix(&c.home, &c.ws, &[], &["run", "mkdir d && echo inside > d/FILE"]).output().unwrap();
    assert!(out.status.success(), "{}", all_text(&out));
    std::fs::write(c.ws.join("swap.py"), SWAPPER).unwrap();
    plant(r, &c, c.canary.dir(), "x");
    let swapper = r
        .clix(&c.home, &c.ws, &[], &["run", "--timeout", "300", "python3 swap.py"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !c.ws.join("started").exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the swapper never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Reads go on until one went through, so the test has raced something:
    // on a busy machine the swapper may win every read of a round.
    let mut rounds = Vec::new();
    while rounds.len() < 20 {
        let round = r
            .clix(&c.home, &c.ws, &[], &["run", "--raw", "for i in $(seq 1000); do cat d/FILE 2>/dev/null; done"])
            .output()
            .unwrap();
        let through = text(&round.stdout).contains("inside");
        rounds.push(round);
        if through {
            break;
        }
    }
    let writes = r
        .clix(&c.home, &c.ws, &[], &["run", "for i in $(seq 100); do echo pwned > d/pwned-$i.txt; done 2>/dev/null"])
        .output()
        .unwrap();
    let deletes = r
        .clix(&c.home, &c.ws, &[], &["run", "for i in $(seq 100); do rm -f d/victim; done 2>/dev/null"])
        .output()
        .unwrap();
    std::fs::write(c.ws.join("stop"), "").unwrap();
    let swapped = swapper.wait_with_output().unwrap();
    let swaps: u64 = text(&swapped.stdout)
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("the swapper failed: {}", all_text(&swapped)));
    assert!(swaps > 1000, "the race did not run: {swaps} swaps");
    let read_text: String = rounds.iter().map(|round| text(&round.stdout)).collect();
    assert!(read_text.contains("inside"), "no read of {} rounds went through: the test raced nothing", rounds.len());
    for out in rounds.iter().chain([&writes, &deletes]) {
        assert!(!all_text(out).contains(CANARY), "a read reached the canary");
    }
    c.assert_canary_untouched("race");
    eprintln!(
        "symlink race: {swaps} swaps, {} of {} reads went through",
        read_text.matches("inside").count(),
        rounds.len() * 1000
    );
}

/// Manifests symlinked to /proc/self/environ and to a host file, a FIFO
/// manifest and a /dev/zero one (under a 2 GB address-space limit): `hub
/// check` and later runs finish, and quote none of it.
fn hub_manifests(r: &Runner) {
    let c = r.fixture();
    let out = r.clix(&c.home, &c.ws, &[], &["run", "mkdir -p .clix/hub"]).output().unwrap();
    assert!(out.status.success(), "{}", all_text(&out));
    plant(r, &c, Path::new("/proc/self/environ"), ".clix/hub/e.toml");
    plant(r, &c, &c.canary.dir().join("FILE"), ".clix/hub/f.toml");
    plant(r, &c, Path::new("/dev/zero"), ".clix/hub/z.json");
    let out =
        r.clix(&c.home, &c.ws, &[], &["run", "python3 -c \"import os; os.mkfifo('.clix/hub/evil.json')\""]).output();
    assert!(out.unwrap().status.success());
    for args in [&["hub", "check"][..], &["run", "echo still here"][..]] {
        let out =
            finish(r.clix(&c.home, &c.ws, &["prlimit", "--as=2000000000", "--"], args), Duration::from_secs(60), "hub");
        let all = all_text(&out);
        assert!(!all.contains(CANARY), "{args:?} leaked: {all}");
        if args[0] == "run" {
            assert!(all.contains("still here"), "{all}");
        }
    }
}

/// `.clix` planted as a symlink to a host folder, then a long output.
fn spill_symlink(r: &Runner) {
    let c = r.fixture();
    plant(r, &c, c.canary.dir(), ".clix");
    let out = r.clix(&c.home, &c.ws, &[], &["run", "seq 1 5000"]).output().unwrap();
    assert!(!all_text(&out).contains(".clix/out/cmd-1.txt"), "{}", all_text(&out));
    c.assert_canary_untouched("spill");
}

/// A setuid copy from the sandbox, and chmod from the shell.
fn setuid_files(r: &Runner) {
    use std::os::unix::fs::PermissionsExt;
    let c = r.fixture();
    let line =
        "python3 -c \"import shutil,os; shutil.copy('/usr/bin/id','x'); os.chmod('x', 0o4755)\"; cp x y; chmod 4755 y";
    r.clix(&c.home, &c.ws, &[], &["run", line]).output().unwrap();
    for name in ["x", "y"] {
        if let Ok(meta) = std::fs::metadata(c.ws.join(name)) {
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{name} is setuid or setgid");
        }
    }
}

/// The kernel keyring calls, by architecture, for the Python helpers below.
const KEYCTL_PY: &str = r#"
import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219)}[platform.machine()]
SESSION = -3
def add(desc, payload):
    data = payload.encode()
    return libc.syscall(ADD_KEY, b"user", desc.encode(), data, len(data), SESSION)
def search(desc):
    return libc.syscall(KEYCTL, 10, SESSION, b"user", desc.encode(), 0)
def read(serial):
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(KEYCTL, 11, serial, buf, 256)
    return buf.raw[:n].decode() if n >= 0 else "ERR%d" % ctypes.get_errno()
"#;

/// Issue 28, finding 1: a login's session keyring (Kerberos tickets,
/// ecryptfs keys) was readable and writable from the sandbox. clix starts
/// in a session keyring holding a canary key; a sandboxed program must
/// neither read it nor leave a key of its own behind.
fn keyring(r: &Runner) {
    let c = r.fixture();
    let wrapper = c.ws.join("..").join("keyring-wrapper.py");
    std::fs::write(
        &wrapper,
        format!(
            "{KEYCTL_PY}
import subprocess
libc.syscall(KEYCTL, 1, b\"clix-test\")  # a fresh session keyring, joined
if add(\"clix-canary\", \"{CANARY}-keyring\") < 0:
    print(\"NO-KEYRING\", ctypes.get_errno(), file=sys.stderr); sys.exit(0)
code = subprocess.call(sys.argv[1:])
print(\"PLANTED-FOUND\" if search(\"planted\") >= 0 else \"PLANTED-NONE\", file=sys.stderr)
sys.exit(code)
"
        ),
    )
    .unwrap();
    std::fs::write(
        c.ws.join("probe.py"),
        format!(
            "{KEYCTL_PY}
serial = search(\"clix-canary\")
print(\"READ\", read(serial) if serial >= 0 else \"ERR%d\" % ctypes.get_errno())
print(\"ADDED\" if add(\"planted\", \"x\") >= 0 else \"ADD-ERR%d\" % ctypes.get_errno())
"
        ),
    )
    .unwrap();
    let wrapper = wrapper.display().to_string();
    // The system's python3: a toolchain's under /root is not for `nobody`.
    let out = r.clix(&c.home, &c.ws, &["/usr/bin/python3", &wrapper], &["run", "python3 probe.py"]).output().unwrap();
    let all = all_text(&out);
    if all.contains("NO-KEYRING") {
        clix_testkit::skip_host_limit("the attack corpus's keyring case", "this kernel gives no session keyring");
        return;
    }
    assert!(!all.contains(&format!("{CANARY}-keyring")), "the sandbox read the login's keyring: {all}");
    assert!(all.contains("PLANTED-NONE"), "the sandbox left a key in the login's keyring: {all}");
    assert!(all.contains("READ ERR") && all.contains("ADD-ERR"), "the probe did not run: {all}");
}

/// An MCP `initialize` to `url` from another user (uid 65533, when the
/// tests run as root; else this user, without the server's token), and
/// that user's try at the token file: `STATUS <http code> FILE <ok|error>`.
const MCP_PROBE_PY: &str = r#"
import sys, urllib.request, urllib.error
url, token_file, auth = sys.argv[1], sys.argv[2], sys.argv[3]
body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}'
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if auth:
    headers["Authorization"] = "Bearer " + auth
try:
    code = urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=60).status
except urllib.error.HTTPError as e:
    code = e.code
try:
    open(token_file).read(); readable = "ok"
except OSError:
    readable = "error"
print("STATUS", code, "FILE", readable)
"#;

/// Issue 28, findings 4 and 12: `clix mcp --http` on loopback served any
/// local user (another user's MCP client read a 0600 file through it), and
/// the only guard was a token on argv, in `/proc/PID/cmdline` for all.
/// Now every listener has a token, made and kept 0600 when none is given.
fn mcp_listener(r: &Runner) {
    let c = r.fixture();
    let mut server = r.clix(&c.home, &c.ws, &[], &["mcp", "--http", "127.0.0.1:0"]);
    let mut child = server.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut serving, mut told) = (String::new(), String::new());
    stderr.read_line(&mut serving).unwrap();
    stderr.read_line(&mut told).unwrap();
    let url = serving.trim().strip_prefix("clix mcp: serving ").unwrap_or_else(|| panic!("{serving}{told}")).to_owned();
    let token = told.split("Bearer ").nth(1).and_then(|t| t.split('`').next()).unwrap_or_else(|| panic!("{told}"));
    let token_file = c.home.join("state").join("mcp-token");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), token, "{told}");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the token file is private");

    let probe = |auth: &str| {
        let mut argv: Vec<String> = Vec::new();
        if is_root() {
            // Neither root nor the server's own user (nobody, in the second run).
            argv.extend(["setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", "--"].map(String::from));
        }
        argv.extend(
            ["/usr/bin/python3", "-c", MCP_PROBE_PY, &url, token_file.to_str().unwrap(), auth].map(String::from),
        );
        let out = Command::new(&argv[0]).args(&argv[1..]).stdin(Stdio::null()).output().unwrap();
        all_text(&out)
    };
    let stranger = probe("");
    assert!(stranger.contains("STATUS 401"), "a local client without the token was served: {stranger}");
    if is_root() {
        assert!(stranger.contains("FILE error"), "another user read the token file: {stranger}");
    }
    let owner = probe(token);
    assert!(owner.contains("STATUS 200"), "the printed token did not let its holder in: {owner}");
    let _ = child.kill();
    let _ = child.wait();
}

fn corpus(r: &Runner) {
    symlink_race(r);
    hub_manifests(r);
    spill_symlink(r);
    setuid_files(r);
    keyring(r);
    mcp_listener(r);
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// The corpus as the user running the tests (root in CI).
#[test]
fn the_attack_corpus_as_this_user() {
    eprintln!("running the attack corpus as uid {}", unsafe { libc::geteuid() });
    corpus(&Runner::new(false));
}

/// The same corpus as an ordinary user (`nobody`): needs root to switch.
#[test]
fn the_attack_corpus_as_an_ordinary_user() {
    if !is_root() {
        clix_testkit::skip_host_limit(
            "the_attack_corpus_as_an_ordinary_user",
            "switching to nobody needs root; the corpus ran only as this user",
        );
        return;
    }
    corpus(&Runner::new(true));
}

/// Security round 4, finding 13: a line wrote 600 MB at 1 GB/s, bounded
/// only by 4 GiB per file. A line may take at most `[limits]
/// max_workspace_growth_bytes` of the workspace's disk, whoever writes:
/// past it, the line stops with the limit's `[error]` (the sandboxed writer
/// killed), and the rest of the line does not run.
#[test]
fn a_line_takes_at_most_its_share_of_the_workspaces_disk() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(home.path().join("config.toml"), "[limits]\nmax_workspace_growth_bytes = 50000000\n").unwrap();
    let line = "sandbox bash 'head -c 600000000 /dev/zero > big; echo written'; echo after";
    let out = clix(home.path(), ws.path(), &["run", line]).output().unwrap();
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("[error] stopped: the line took ")
            && shown.contains("more than the 47 MiB one line may take ([limits] max_workspace_growth_bytes)"),
        "{shown}"
    );
    assert!(!shown.contains("written") && !shown.contains("after"), "{shown}");
    let written = std::fs::metadata(ws.path().join("big")).map(|m| m.len()).unwrap_or(0);
    assert!(written < 600_000_000, "the writer was stopped at {written} bytes");
}

/// Security round 4, finding 7: with the limit at 100 MB,
/// `x=$(seq 1 11000000); y="$x$x…"` peaked at 2.7 GB, because a word was
/// checked against `max_memory_bytes` only once built (and an unquoted one
/// was split from copies nothing counted). Words are charged as they grow
/// now: each spelling stops with the limit's `[error]`, and clix's peak stays
/// within the peak of the line that only makes `$x`, plus the limit (the
/// word), plus a fixed 16 MiB.
#[test]
fn a_word_is_charged_while_it_grows() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    const LIMIT_MIB: u64 = 20;
    std::fs::write(home.path().join("config.toml"), format!("[limits]\nmax_memory_bytes = {}\n", LIMIT_MIB << 20))
        .unwrap();
    let make_x = "x=$(seq 1 1000000)"; // 6.9 MB
    let (code, base_mib) = peak_rss_mib(clix(home.path(), ws.path(), &["run", &format!("{make_x}; echo ${{#x}}")]));
    assert_eq!(code, Some(0), "making $x alone must fit");
    let forty = "$x".repeat(40); // 276 MB asked for
    let spellings = [
        format!("y=\"{forty}\"; echo ${{#y}}"),
        format!("echo {forty} | wc -c"),
        format!("echo a{forty} | wc -c"),
        format!("a=(\"{forty}\"); echo ${{#a[0]}}"),
        format!("cat <<< \"{forty}\" | wc -c"),
    ];
    let bound = base_mib + LIMIT_MIB + 16;
    for spelling in &spellings {
        let line = format!("{make_x}; {spelling}");
        let out = clix(home.path(), ws.path(), &["run", &line]).output().unwrap();
        let shown = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{spelling}: {shown}");
        assert!(
            shown.contains("passed the memory one line may hold (20 MiB, [limits] max_memory_bytes)"),
            "{spelling}: {shown}"
        );
        let (_, peak_mib) = peak_rss_mib(clix(home.path(), ws.path(), &["run", &line]));
        assert!(peak_mib <= bound, "{spelling}: clix peaked at {peak_mib} MiB (bound {bound} MiB)");
    }
}
