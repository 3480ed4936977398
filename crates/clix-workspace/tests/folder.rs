//! The capability handle against a hostile folder: symlinks out, FIFOs,
//! devices, oversized files, setuid bits and a symlink swapped in mid-call.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::ffi::CString;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clix_workspace::{Folder, Kind};

struct Fixture {
    _tmp: tempfile::TempDir,
    folder: Folder,
    /// A folder beside the workspace holding the canary.
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("canary.txt"), "CANARY-SECRET\n").unwrap();
    std::fs::write(ws.join("a.txt"), "hello\n").unwrap();
    let folder = Folder::open(&ws).unwrap();
    Fixture { _tmp: tmp, folder, outside }
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn reads_and_writes_regular_files_inside() {
    let f = fixture();
    assert_eq!(f.folder.read(Path::new("a.txt"), 1 << 20).unwrap(), b"hello\n");
    f.folder.create_dir(Path::new("d/e"), true).unwrap();
    f.folder.write(Path::new("d/e/new.txt"), b"x").unwrap();
    f.folder.append(Path::new("d/e/new.txt"), b"y").unwrap();
    let abs = f.folder.root().join("d/e/new.txt");
    assert_eq!(f.folder.read(&abs, 10).unwrap(), b"xy");
    assert_eq!(f.folder.metadata(Path::new("d")).unwrap().kind, Kind::Dir);
}

#[test]
fn symlinks_out_are_refused_for_every_operation() {
    let f = fixture();
    let root = f.folder.root().to_path_buf();
    symlink(&f.outside, root.join("out")).unwrap();
    symlink(f.outside.join("canary.txt"), root.join("leaf")).unwrap();
    symlink("/proc/self/environ", root.join("environ")).unwrap();
    for path in ["out/canary.txt", "leaf", "environ"] {
        let err = f.folder.read(Path::new(path), 1 << 20).unwrap_err().to_string();
        assert!(!err.contains("CANARY"), "{path}: {err}");
    }
    assert!(
        f.folder.read(Path::new("out/canary.txt"), 1 << 20).unwrap_err().to_string().contains("outside the workspace")
    );
    assert!(f.folder.write(Path::new("out/pwned.txt"), b"x").is_err());
    assert!(f.folder.write(Path::new("leaf"), b"x").is_err());
    assert!(f.folder.remove(Path::new("out/canary.txt"), false).is_err());
    assert!(f.folder.create_dir(Path::new("out/made"), true).is_err());
    assert!(f.folder.rename(Path::new("a.txt"), Path::new("out/moved.txt")).is_err());
    assert!(f.folder.read(Path::new("../outside/canary.txt"), 1 << 20).is_err());
    assert!(f.folder.read(&f.outside.join("canary.txt"), 1 << 20).is_err());
    // Removing the link removes the link, never the target.
    f.folder.remove(Path::new("out"), true).unwrap();
    assert_eq!(std::fs::read_to_string(f.outside.join("canary.txt")).unwrap(), "CANARY-SECRET\n");
    assert!(!f.outside.join("pwned.txt").exists() && !f.outside.join("made").exists());
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let f = fixture();
    let root = f.folder.root().to_path_buf();
    mkfifo(&root.join("ff"));
    symlink("/dev/zero", root.join("zero")).unwrap();
    // On another thread: a FIFO open that blocks never returns, so the test
    // waits for the calls to end (60 s at most, a safety net), not for a time.
    let (done, ended) = std::sync::mpsc::channel();
    let calls = std::thread::spawn(move || {
        let err = f.folder.read(Path::new("ff"), 1 << 20).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        let err = f.folder.write(Path::new("ff"), b"x").unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(f.folder.read(Path::new("zero"), 1 << 20).is_err());
        let _ = done.send(());
    });
    if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(Duration::from_secs(60)) {
        panic!("a FIFO blocked the caller");
    }
    calls.join().unwrap();
}

#[test]
fn reads_are_capped() {
    let f = fixture();
    f.folder.write(Path::new("big"), &vec![b'x'; 4096]).unwrap();
    let err = f.folder.read(Path::new("big"), 100).unwrap_err().to_string();
    assert!(err.contains("4096 bytes"), "{err}");
}

#[test]
fn chmod_and_copy_never_set_setuid_or_setgid() {
    let f = fixture();
    f.folder.chmod(Path::new("a.txt"), 0o6755).unwrap();
    let mode = std::fs::metadata(f.folder.root().join("a.txt")).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);
    f.folder.copy(Path::new("a.txt"), Path::new("b.txt"), 1 << 20).unwrap();
    let mode = std::fs::metadata(f.folder.root().join("b.txt")).unwrap().permissions().mode();
    assert_eq!(mode & 0o6000, 0);
}

/// A thread swaps a real folder and a symlink to the canary folder with
/// `renameat2(RENAME_EXCHANGE)` as fast as it can, while reads, writes and
/// deletes go through the swapped name. None may reach the canary.
#[test]
fn a_swapped_symlink_never_leads_outside() {
    let f = fixture();
    let root = f.folder.root().to_path_buf();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/canary.txt"), "inside\n").unwrap();
    std::fs::write(root.join("d/victim"), "inside\n").unwrap();
    std::fs::write(f.outside.join("victim"), "CANARY-VICTIM\n").unwrap();
    symlink(&f.outside, root.join("x")).unwrap();
    let swapper = clix_testkit::Swapper::start(&root.join("d"), &root.join("x"));
    let (mut leaked_reads, mut inside_reads) = (0, 0);
    let mut reads = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // On until one read went through too: on a busy machine the swapper may
    // win every read of the first thousands, and a test that raced nothing
    // through the handle proved nothing.
    while swapper.keep_racing(reads, Duration::from_secs(30))
        || (inside_reads == 0 && std::time::Instant::now() < deadline)
    {
        reads += 1;
        if let Ok(bytes) = f.folder.read(Path::new("d/canary.txt"), 1 << 20) {
            if bytes == b"CANARY-SECRET\n" { leaked_reads += 1 } else { inside_reads += 1 }
        }
    }
    for i in 0..100 {
        let _ = f.folder.write(Path::new(&format!("d/pwned-{i}.txt")), b"pwned");
    }
    for _ in 0..100 {
        let _ = f.folder.remove(Path::new("d/victim"), false);
    }
    swapper.stop();
    assert_eq!(leaked_reads, 0, "{leaked_reads} reads reached the canary");
    assert!(inside_reads > 0, "no read went through at all");
    let written: Vec<_> = std::fs::read_dir(&f.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(written.len(), 2, "files appeared outside: {written:?}");
    assert_eq!(std::fs::read_to_string(f.outside.join("victim")).unwrap(), "CANARY-VICTIM\n");
}

/// Every entry of the one secret-store list, at the top of a workspace or
/// nested, as a file, a folder or a symlink, is hidden by the workspace's
/// handle: not listed, not found, neither read nor written, and no reason
/// to refuse the folder. A workspace inside a store is still refused. (The
/// sandbox's side is clix-sandbox's `no_secret_store_under_a_home_is_ever_mounted`
/// and clix's `a_projects_secret_stores_are_hidden_not_refused`.)
#[test]
fn every_secret_store_in_a_workspace_is_hidden() {
    for store in clix_workspace::SECRET_STORES {
        for at in ["", "web/"] {
            for planted in ["file", "folder", "symlink"] {
                let tmp = tempfile::tempdir().unwrap();
                let ws = tmp.path().join("ws");
                std::fs::create_dir_all(ws.join("web")).unwrap();
                std::fs::write(ws.join("web/app.js"), "ok").unwrap();
                std::fs::write(ws.join("secret.txt"), "CANARY").unwrap();
                let rel = format!("{at}{store}");
                let path = ws.join(&rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let inside = match planted {
                    "file" => {
                        std::fs::write(&path, "CANARY").unwrap();
                        None
                    }
                    "folder" => {
                        std::fs::create_dir(&path).unwrap();
                        std::fs::write(path.join("config"), "CANARY").unwrap();
                        Some(format!("{rel}/config"))
                    }
                    _ => {
                        symlink("../secret.txt", &path).unwrap();
                        None
                    }
                };
                let what = format!("{rel} as a {planted}");
                let ws_handle = clix_workspace::Workspace::open(&ws).unwrap_or_else(|e| panic!("{what}: {e}"));
                if at.is_empty() {
                    assert_eq!(ws_handle.hidden_at_top(), [*store], "{what}");
                }
                let listing_of = |dir: &Path| -> Vec<String> {
                    ws_handle.read_dir(dir).unwrap().into_iter().map(|(name, _)| name).collect()
                };
                let parent = Path::new(&rel).parent().unwrap().to_path_buf();
                let name = Path::new(&rel).file_name().unwrap().to_string_lossy().into_owned();
                if ws_handle.symlink_metadata(&parent).is_ok() {
                    assert!(!listing_of(&parent).contains(&name), "{what} is listed");
                }
                for hidden in std::iter::once(rel.clone()).chain(inside) {
                    let hidden = Path::new(&hidden);
                    let read = ws_handle.read(hidden, 1 << 20).err().unwrap_or_else(|| panic!("{what} was read"));
                    assert!(read.to_string().contains("hidden from agents"), "{what}: {read}");
                    assert!(!ws_handle.exists(hidden).unwrap(), "{what} exists");
                    assert!(ws_handle.write(hidden, b"x").is_err(), "{what} was written");
                    assert!(ws_handle.remove(hidden, true).is_err(), "{what} was removed");
                    assert!(ws_handle.rename(hidden, Path::new("moved")).is_err(), "{what} was moved");
                }
                assert!(path.symlink_metadata().is_ok(), "{what} is gone from the disk");
                // The rest of the project is served as ever.
                assert_eq!(ws_handle.read(Path::new("web/app.js"), 10).unwrap(), b"ok");
            }
        }
        // A workspace inside a store is refused.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(store);
        std::fs::create_dir_all(&path).unwrap();
        let err = clix_workspace::Workspace::open(&path).err().unwrap_or_else(|| panic!("inside {store} was accepted"));
        assert!(err.reason.contains("secret store"), "{store}: {err}");
    }
}

/// A handle opened on a folder below the top still knows where it lies: the
/// `gh` inside `.config` is `.config/gh`.
#[test]
fn a_handle_below_the_top_hides_what_the_top_hides() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".config/gh")).unwrap();
    std::fs::write(tmp.path().join(".config/gh/hosts.yml"), "oauth_token: CANARY").unwrap();
    std::fs::write(tmp.path().join(".config/app.toml"), "ok").unwrap();
    let ws = clix_workspace::Workspace::open(tmp.path()).unwrap();
    let config = ws.open_dir(Path::new(".config")).unwrap();
    let names: Vec<String> = config.read_dir(Path::new(".")).unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["app.toml"]);
    assert!(config.read(Path::new("gh/hosts.yml"), 100).is_err());
    assert!(config.open_dir(Path::new("gh")).is_err());
    // A confined handle's writable place is a handle below the top too.
    let confined = ws.confined(&[PathBuf::from(".config")]).unwrap();
    assert!(confined.write(Path::new(".config/gh/hosts.yml"), b"x").is_err());
    assert!(confined.write(Path::new(".config/new.toml"), b"x").is_ok());
}

/// A plan agent's namespace: the folder it may write, its inputs and the
/// rest readable, every escape refused by the handle.
#[test]
fn a_confined_folder_writes_only_in_its_places() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["agents/a", "agents/b", "shared", "out/gen"] {
        std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
    }
    std::fs::write(tmp.path().join("shared/data.txt"), "shared").unwrap();
    std::fs::write(tmp.path().join("agents/b/b.txt"), "b's").unwrap();
    let ws = Folder::open(tmp.path()).unwrap();
    let a = ws.confined(&[PathBuf::from("agents/a"), PathBuf::from("out/gen")]).unwrap();
    a.write(Path::new("agents/a/x.txt"), b"mine").unwrap();
    a.create_dir(Path::new("agents/a/sub/deeper"), true).unwrap();
    a.write(Path::new("out/gen/g.txt"), b"gen").unwrap();
    assert_eq!(a.read(Path::new("shared/data.txt"), 100).unwrap(), b"shared");
    assert_eq!(a.read(Path::new("agents/b/b.txt"), 100).unwrap(), b"b's");
    // A symlink in its own folder that leads into a sibling's.
    symlink("../b", tmp.path().join("agents/a/to-b")).unwrap();
    let refused: [(&str, io::Result<()>); 9] = [
        ("another agent's folder", a.write(Path::new("agents/b/evil.txt"), b"x")),
        ("shared", a.write(Path::new("shared/data.txt"), b"x")),
        ("the root", a.write(Path::new("top.txt"), b"x")),
        ("dot-dot out of its folder", a.write(Path::new("agents/a/../b/evil.txt"), b"x")),
        ("through a symlink", a.write(Path::new("agents/a/to-b/evil.txt"), b"x")),
        ("remove a shared file", a.remove(Path::new("shared/data.txt"), false)),
        ("rename out", a.rename(Path::new("agents/a/x.txt"), Path::new("shared/x.txt"))),
        ("mkdir outside", a.create_dir(Path::new("agents/c"), false)),
        ("chmod outside", a.chmod(Path::new("shared/data.txt"), 0o777)),
    ];
    for (case, outcome) in refused {
        assert!(outcome.is_err(), "{case}: allowed");
    }
    assert_eq!(std::fs::read_to_string(tmp.path().join("shared/data.txt")).unwrap(), "shared");
    assert_eq!(std::fs::read_to_string(tmp.path().join("agents/b/b.txt")).unwrap(), "b's");
    assert!(!tmp.path().join("agents/b/evil.txt").exists() && !tmp.path().join("top.txt").exists());
    let err = a.write(Path::new("shared/new.txt"), b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ReadOnlyFilesystem);
    assert!(err.to_string().contains("may write only in agents/a/, out/gen/"), "{err}");
    // A subfolder opened from it keeps the same places.
    let agents = a.open_dir(Path::new("agents")).unwrap();
    agents.write(Path::new("a/y.txt"), b"y").unwrap();
    assert!(agents.write(Path::new("b/y.txt"), b"y").is_err());
    // A writable place must be a real folder, reached without symlinks.
    symlink("shared", tmp.path().join("link")).unwrap();
    assert!(ws.confined(&[PathBuf::from("link")]).is_err());
    assert!(ws.confined(&[PathBuf::from("shared/data.txt")]).is_err());
    // The whole folder is no place: "confined" to it would mean nothing.
    assert!(ws.confined(&[PathBuf::from(".")]).is_err());
    assert_eq!(a.writable(), Some(vec![PathBuf::from("agents/a"), PathBuf::from("out/gen")]));
}

/// The tree-size probe counts what is inside only: a symlink to a big
/// folder outside is one entry, and a path outside holds nothing.
#[test]
fn the_tree_probe_counts_inside_only() {
    let f = fixture();
    let root = f.folder.root().to_path_buf();
    for i in 0..20 {
        std::fs::write(f.outside.join(format!("o{i}")), "x").unwrap();
    }
    std::fs::create_dir_all(root.join("d/e")).unwrap();
    for i in 0..5 {
        std::fs::write(root.join(format!("d/e/f{i}")), "x").unwrap();
    }
    symlink(&f.outside, root.join("d/out")).unwrap();
    // d holds e, e's five files and the link: 7 entries.
    assert!(f.folder.holds_at_least(&root.join("d"), 7));
    assert!(!f.folder.holds_at_least(&root.join("d"), 8));
    assert!(!f.folder.holds_at_least(&root.join("d/out"), 1), "followed a symlink out");
    assert!(!f.folder.holds_at_least(&f.outside, 1), "counted a folder outside");
    assert!(!f.folder.holds_at_least(&root.join("d/../../outside"), 1));
}

/// What git runs on the host from a repository (config, hooks, info,
/// submodules, worktrees) is never written through the handle, by any
/// write, wherever the repository sits; the rest of `.git` and every
/// other path are written as before.
#[test]
fn what_git_runs_on_the_host_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    for d in [".git/hooks", ".git/info", ".git/objects", "sub/.git/hooks", ".github", "git", "hooks"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let f = Folder::open(dir.path()).unwrap();
    for (path, refused) in [
        (".git/config", true),
        (".git/config.worktree", true),
        (".git/hooks/pre-commit", true),
        (".git/info/attributes", true),
        (".git/modules/lib/config", true),
        (".git/worktrees/w/config.worktree", true),
        ("sub/.git/hooks/post-checkout", true),
        ("./sub/../.git/config", true),
        (".git/objects/ab", false),
        (".git/COMMIT_EDITMSG", false),
        (".github/workflow.yml", false),
        (".gitignore", false),
        ("git/config", false),
        ("hooks/pre-commit", false),
    ] {
        let path = Path::new(path);
        let written = f.write(path, b"x");
        assert_eq!(written.is_err(), refused, "write {path:?}: {written:?}");
        if refused {
            let e = written.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{path:?}");
            assert!(e.to_string().contains("git runs on the host"), "{e}");
            assert!(f.append(path, b"x").is_err() && f.create_dir(path, true).is_err(), "{path:?}");
            assert!(f.symlink(Path::new("x"), path).is_err(), "{path:?}");
        }
    }
    assert!(f.remove(Path::new(".git/config"), false).is_err(), "removing the config to write another");
    assert!(f.chmod(Path::new(".git/hooks"), 0o777).is_err());
    assert!(f.rename(Path::new("x.git"), Path::new(".git/hooks/pre-push")).is_err());
    // `.git` itself is never moved away (to be replaced) nor put in place.
    assert!(f.rename(Path::new(".git"), Path::new("old")).is_err());
    f.create_dir(Path::new("other"), false).unwrap();
    assert!(f.rename(Path::new("other"), Path::new("sub/.git")).is_err());
    // Nor reached by another name.
    assert!(f.symlink(Path::new(".git"), Path::new("g")).is_err());
    assert!(f.symlink(Path::new("../.git/hooks"), Path::new("sub/h")).is_err());
    assert!(f.symlink(Path::new("x"), Path::new(".git")).is_err());
    assert_eq!(std::fs::read_to_string(dir.path().join(".git/config")).unwrap(), "[core]\n");
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
}

/// What a sandbox mounts read-only: the repository's `.git` first, then
/// each of what git runs that is a real file or folder; a missing hooks
/// folder is made; a symlink or no repository gives nothing to mount.
#[test]
fn the_git_paths_a_sandbox_protects() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let f = Folder::open(&root).unwrap();
    assert!(f.git_protected().is_empty(), "no repository");
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    std::fs::write(root.join(".git/config"), "").unwrap();
    std::os::unix::fs::symlink("/etc", root.join(".git/modules")).unwrap();
    let got = f.git_protected();
    let want: Vec<std::path::PathBuf> =
        [".git", ".git/config", ".git/hooks", ".git/info"].iter().map(|p| root.join(p)).collect();
    assert_eq!(got, want, "a symlinked modules is not mounted (it would expose what it points at)");
    assert!(root.join(".git/hooks").is_dir(), "the missing hooks folder was made");
    std::fs::remove_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git"), "gitdir: /elsewhere\n").unwrap();
    assert!(f.git_protected().is_empty(), "a worktree's .git file");
}
