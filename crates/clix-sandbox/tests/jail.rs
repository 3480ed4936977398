//! The workspace jail against a hostile program, with real bubblewrap and
//! python3. The program runs as uid 1000 of a user namespace, which is the
//! host's root when these tests run as root: every file it makes in the
//! workspace is owned by root on the host, so a setuid bit or a file
//! capability on it would be a way to root for any local user.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use clix_sandbox::{Outcome, Request, Sandbox, SandboxSettings};

fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn sandbox(ws: &Path) -> Sandbox {
    Sandbox::new(SandboxSettings::default(), ws, None, None, "jail-test".into())
}

async fn run(sb: &Sandbox, ws: &Path, argv: &[&str]) -> Outcome {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    sb.run(Request::new(&argv, ws, None, Duration::from_secs(60))).await.expect("sandbox runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Each attempt of `tries` as `name: ok` or `name: <errno name>`.
fn attempts(tries: &[(&str, &str)]) -> String {
    let mut py = String::from("import os, stat, errno, shutil, ctypes\n");
    for (name, code) in tries {
        py.push_str(&format!(
            "try:\n    {code}\n    print('{name}: ok')\nexcept OSError as e:\n    print('{name}: ' + errno.errorcode.get(e.errno, str(e.errno)))\n"
        ));
    }
    py
}

fn setid_bits(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).map(|m| m.permissions().mode() & 0o6000).unwrap_or(0)
}

#[tokio::test]
async fn the_setuid_attack_fails_and_no_setid_file_reaches_the_host() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    // The attack from the issue, as one program.
    let o = run(
        &sb,
        ws.path(),
        &["python3", "-c", "import shutil,os; shutil.copy('/usr/bin/id','x'); os.chmod('x', 0o4755)"],
    )
    .await;
    assert_ne!(o.exit_code, 0, "chmod 4755 must fail: {}", text(&o.stderr));
    assert!(text(&o.stderr).contains("Operation not permitted"), "{}", text(&o.stderr));
    let x = ws.path().join("x");
    assert!(x.exists(), "the copy itself is allowed");
    assert_eq!(setid_bits(&x), 0, "x on the host has mode {:o}", std::fs::metadata(&x).unwrap().permissions().mode());

    // Every other way to a setuid or setgid file.
    let script = attempts(&[
        ("chmod_setgid", "os.chmod('x', 0o2755)"),
        ("fchmod_setuid", "fd = os.open('x', os.O_RDONLY); os.fchmod(fd, 0o4755)"),
        ("open_creat_setuid", "os.close(os.open('o', os.O_CREAT | os.O_WRONLY, 0o4755))"),
        ("open_creat_setgid", "os.close(os.open('g', os.O_CREAT | os.O_WRONLY, 0o2755))"),
        (
            "tmpfile_setuid",
            "fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755); os.link(f'/proc/self/fd/{fd}', 't', follow_symlinks=True)",
        ),
        ("mknod_regular_setuid", "os.mknod('m', 0o4755 | stat.S_IFREG)"),
        ("chmod_plain", "os.chmod('x', 0o700)"),
        ("open_creat_plain", "os.close(os.open('plain', os.O_CREAT | os.O_WRONLY, 0o644))"),
        ("mkfifo", "os.mkfifo('fifo')"),
    ]);
    let o = run(&sb, ws.path(), &["python3", "-c", &script]).await;
    let out = text(&o.stdout);
    for refused in [
        "chmod_setgid: EPERM",
        "fchmod_setuid: EPERM",
        "open_creat_setuid: EPERM",
        "open_creat_setgid: EPERM",
        "tmpfile_setuid: EPERM",
        "mknod_regular_setuid: EPERM",
    ] {
        assert!(out.contains(refused), "{refused} expected in:\n{out}{}", text(&o.stderr));
    }
    for allowed in ["chmod_plain: ok", "open_creat_plain: ok", "mkfifo: ok"] {
        assert!(out.contains(allowed), "{allowed} expected in:\n{out}{}", text(&o.stderr));
    }
    // The shell's chmod (coreutils, fchmodat) too.
    let o = run(&sb, ws.path(), &["sh", "-c", "chmod u+s x; chmod g+s x; echo done"]).await;
    assert!(text(&o.stderr).contains("Operation not permitted"), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "done\n");
    for entry in std::fs::read_dir(ws.path()).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(setid_bits(&path), 0, "{} has a setuid/setgid bit on the host", path.display());
    }
}

#[tokio::test]
async fn device_nodes_are_refused() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    let script = attempts(&[
        ("chr", "os.mknod('d', 0o600 | stat.S_IFCHR, os.makedev(1, 3))"),
        ("blk", "os.mknod('b', 0o600 | stat.S_IFBLK, os.makedev(8, 0))"),
    ]);
    let o = run(&sb, ws.path(), &["python3", "-c", &script]).await;
    assert_eq!(text(&o.stdout), "chr: EPERM\nblk: EPERM\n", "{}", text(&o.stderr));
    assert!(!ws.path().join("d").exists() && !ws.path().join("b").exists());
}

#[tokio::test]
async fn no_nested_user_namespace_so_no_file_capabilities() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    // In a nested user namespace the program would be "root" over its own
    // files and could write security.capability (here cap_setuid=ep), which
    // the host honours because the file's owner is the host's root.
    let cap = "import os, struct; os.setxattr('c', 'security.capability', struct.pack('<5I', 0x02000001, 1 << 7, 0, 0, 0)); print('capability set')";
    let script = format!("cp /usr/bin/id c; unshare -U -r python3 -c \"{cap}\"; python3 -c \"{cap}\"; echo done");
    let o = run(&sb, ws.path(), &["sh", "-c", &script]).await;
    assert!(!text(&o.stdout).contains("capability set"), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).ends_with("done\n"));
    assert!(text(&o.stderr).contains("unshare"), "unshare itself is refused: {}", text(&o.stderr));
    let c = ws.path().join("c");
    assert!(c.exists());
    let c_path = std::ffi::CString::new(c.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: valid NUL-terminated strings and a buffer of the given size.
    let len = unsafe {
        libc::lgetxattr(c_path.as_ptr(), c"security.capability".as_ptr(), buf.as_mut_ptr().cast(), buf.len())
    };
    let has_cap = len >= 0;
    assert!(!has_cap, "c has a file capability on the host");
    // Other namespaces that need no privilege still work (unshare -n needs a user namespace: refused).
    let o = run(
        &sb,
        ws.path(),
        &[
            "python3",
            "-c",
            "import threading; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()",
        ],
    )
    .await;
    assert_eq!(text(&o.stdout), "thread\n", "{}", text(&o.stderr));
}

#[tokio::test]
async fn calls_the_filter_cannot_inspect_answer_enosys() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    // openat2(AT_FDCWD, ".", &open_how{0}, 24), clone3(NULL, 0) and
    // io_uring_setup(8, &params) through libc's syscall().
    let script = "import ctypes, os, errno\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        libc.syscall.restype = ctypes.c_long\n\
        how = ctypes.create_string_buffer(24)\n\
        params = ctypes.create_string_buffer(120)\n\
        for name, args in [('openat2', (437, -100, b'.', how, 24)), ('clone3', (435, None, 0)), ('io_uring_setup', (425, 8, params))]:\n\
        \x20   r = libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args])\n\
        \x20   print(name, 'ok' if r >= 0 else errno.errorcode[ctypes.get_errno()])\n\
        print(open('f', 'w').write('plain open still works'))\n";
    let o = run(&sb, ws.path(), &["python3", "-c", script]).await;
    assert_eq!(text(&o.stdout), "openat2 ENOSYS\nclone3 ENOSYS\nio_uring_setup ENOSYS\n22\n", "{}", text(&o.stderr));
}

#[tokio::test]
async fn the_workspace_is_mounted_nosuid_inside() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    let o = run(&sb, ws.path(), &["cat", "/proc/self/mountinfo"]).await;
    let table = text(&o.stdout);
    let ws_path = ws.path().display().to_string();
    // mountinfo: id parent major:minor root mount-point options ...
    let line = table
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(ws_path.as_str()))
        .unwrap_or_else(|| panic!("no mount at {ws_path} in:\n{table}"));
    let options: Vec<&str> = line.split(' ').nth(5).unwrap().split(',').collect();
    assert!(options.contains(&"nosuid"), "{line}");
    assert!(options.contains(&"nodev"), "{line}");
    assert!(options.contains(&"rw"), "{line}");
}

#[tokio::test]
async fn python_git_cargo_and_sh_still_work_under_the_filter() {
    let ws = workspace();
    let sb = sandbox(ws.path());
    let script = "set -e; sh -c 'echo sh ok'; python3 -c 'import subprocess, tempfile, os; print(subprocess.run([\"echo\", \"python ok\"], capture_output=True, text=True).stdout.strip())'; \
        git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && git log --oneline | wc -l; \
        cd .. && cargo new -q --vcs none hello && cd hello && cargo build -q --offline && ./target/debug/hello";
    let o = run(&sb, ws.path(), &["bash", "-c", script]).await;
    assert_eq!(text(&o.stdout), "sh ok\npython ok\n1\nHello, world!\n", "{}", text(&o.stderr));
    assert_eq!(o.exit_code, 0);
}

#[tokio::test]
async fn credentials_inside_mounted_toolchains_are_never_readable() {
    // A fake home: its toolchains are found through PATH, as on a real host.
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let node = h.join(".nvm/versions/node/v20.0.0");
    for dir in
        [h.join(".cargo/bin"), h.join(".cargo/stash"), node.join("bin"), node.join("etc"), h.join(".pyenv/shims")]
    {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(h.join(".pyenv/versions/3.12.0")).unwrap();
    std::fs::create_dir_all(h.join(".local/bin")).unwrap();
    std::fs::create_dir_all(h.join(".local/share/keyrings")).unwrap();
    std::fs::write(h.join(".cargo/env"), "VISIBLE\n").unwrap();
    std::fs::write(h.join(".cargo/credentials.toml"), "[registry]\ntoken = \"CANARY-cargo\"\n").unwrap();
    std::fs::write(h.join(".cargo/stash/legacy"), "CANARY-linked\n").unwrap();
    std::os::unix::fs::symlink("stash/legacy", h.join(".cargo/credentials")).unwrap();
    std::fs::write(node.join("etc/npmrc"), "//registry.npmjs.org/:_authToken=CANARY-npm\n").unwrap();
    std::fs::write(h.join(".local/share/keyrings/login.keyring"), "CANARY-keyring\n").unwrap();
    let path = format!(
        "{0}/.cargo/bin:{1}/bin:{0}/.pyenv/shims:{0}/.local/bin:/usr/local/bin:/usr/bin:/bin",
        h.display(),
        node.display()
    );
    let host = clix_sandbox::HostEnv { path, home: Some(h.to_path_buf()) };
    let ws = workspace();
    let sb = Sandbox::with_host(SandboxSettings::default(), ws.path(), None, None, "jail-test".into(), host);
    // Made after the sandbox: `pip config` or `cargo login` while clix runs.
    std::fs::write(h.join(".pyenv/versions/3.12.0/pip.conf"), "[global]\nindex-url = https://u:CANARY-pip@x/\n")
        .unwrap();
    let status = sb.status();
    assert!(status.contains(&format!("hidden: {}", h.join(".cargo/credentials.toml").display())), "{status}");

    // Read every file under the fake home that the sandbox can see.
    let script = format!(
        "import os\n\
         for top in ['{0}/.cargo', '{0}/.nvm', '{0}/.pyenv', '{0}/.local']:\n\
         \x20   print('mounted' if os.path.isdir(top) else 'missing', top)\n\
         \x20   for d, _, files in os.walk(top):\n\
         \x20       for f in files:\n\
         \x20           try:\n\
         \x20               print(os.path.join(d, f), repr(open(os.path.join(d, f)).read()))\n\
         \x20           except OSError as e:\n\
         \x20               print(os.path.join(d, f), 'refused', e.strerror)\n",
        h.display()
    );
    let o = run(&sb, ws.path(), &["python3", "-c", &script]).await;
    let out = text(&o.stdout);
    assert!(!out.contains("CANARY"), "a credential leaked:\n{out}");
    assert!(out.contains("VISIBLE"), "the toolchain itself is readable:\n{out}{}", text(&o.stderr));
    for top in [".cargo", ".nvm", ".pyenv", ".local"] {
        assert!(out.contains(&format!("mounted {}", h.join(top).display())), "{top} not mounted:\n{out}");
    }
    let o =
        run(&sb, ws.path(), &["sh", "-c", "cat \"$CARGO_HOME/credentials.toml\" \"$CARGO_HOME/credentials\""]).await;
    assert!(!text(&o.stdout).contains("CANARY"), "{}", text(&o.stdout));
    assert_ne!(o.exit_code, 0, "reading a covered file is refused: {}", text(&o.stderr));
    // The host's files are untouched.
    assert!(std::fs::read_to_string(h.join(".cargo/credentials.toml")).unwrap().contains("CANARY-cargo"));
}

/// Security round 4, finding 4: what git runs on the host from the
/// workspace's repository (config, hooks, info) is read-only inside the
/// sandbox, and `.git` cannot be moved away and replaced; git itself still
/// commits. A repository made by one run is protected from the next on,
/// also when that next run's sandbox was set up ahead.
#[tokio::test]
async fn what_git_runs_on_the_host_is_read_only_inside() {
    let ws = workspace();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let sb = sandbox(&root);
    let o = run(&sb, &root, &["git", "init", "-q", "."]).await;
    assert_eq!(o.exit_code, 0, "{}", text(&o.stderr));
    let tries = attempts(&[
        ("config", "open('.git/config', 'a').write('[core]\\n\\tfsmonitor = touch pwned\\n')"),
        ("config replaced", "open('.git/config.new', 'w').write('x'); os.rename('.git/config.new', '.git/config')"),
        ("hook", "open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\ntouch pwned\\n')"),
        ("attributes", "open('.git/info/attributes', 'w').write('* filter=x\\n')"),
        ("git moved", "os.rename('.git', 'old')"),
        ("index", "open('.git/clix-probe', 'w').write('ok')"),
    ]);
    let o = run(&sb, &root, &["python3", "-c", &tries]).await;
    let out = text(&o.stdout);
    for line in ["config: EROFS", "config replaced: EBUSY", "hook: EROFS", "attributes: EROFS", "git moved: EBUSY"] {
        assert!(out.contains(line), "{line}: {out}{}", text(&o.stderr));
    }
    assert!(out.contains("index: ok"), "the rest of .git is git's to write: {out}");
    let o = run(&sb, &root, &["git", "config", "core.fsmonitor", "touch pwned"]).await;
    assert_ne!(o.exit_code, 0, "git config cannot write either: {}", text(&o.stdout));
    std::fs::write(root.join("f"), "x").unwrap();
    let commit = ["git", "-c", "user.name=n", "-c", "user.email=e@x", "commit", "-qm", "m"];
    let o = run(&sb, &root, &["sh", "-c", &format!("git add f && {}", commit.join(" "))]).await;
    assert_eq!(o.exit_code, 0, "a commit still works: {}", text(&o.stderr));
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(root.join(".git").is_dir() && !root.join("old").exists());
}

/// A store below the workspace's top is covered in every sandbox of it: one
/// with the workspace read-write, and one confined to a place (a plan's
/// agent, a read-only session), whose workspace is mounted read-only.
#[tokio::test]
async fn nested_secret_stores_are_covered_whether_confined_or_not() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("mine")).unwrap();
    std::fs::create_dir_all(ws.path().join("web")).unwrap();
    std::fs::write(ws.path().join("web/.npmrc"), "//r/:_authToken=CANARY-nested\n").unwrap();
    std::fs::write(ws.path().join("web/app.js"), "ok\n").unwrap();
    let confined = sandbox(ws.path()).confined(&[std::path::PathBuf::from("mine")]).unwrap();
    for sb in [sandbox(ws.path()), confined] {
        let out = run(&sb, ws.path(), &["sh", "-c", "cat web/.npmrc; cat web/app.js"]).await;
        assert!(!text(&out.stdout).contains("CANARY"), "{}", text(&out.stdout));
        assert!(text(&out.stdout).contains("ok"), "the rest is served: {}", text(&out.stderr));
    }
}
