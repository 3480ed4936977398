//! A process that makes one call (`clix run`) sets up no inotify instance:
//! tearing down its watches costs the kernel some 16 ms at exit, more than
//! the listing it saves. A session of many calls sets one up at its second.
//! (A file of its own: the test counts this process's descriptors.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed

use clix_checkpoint::{CheckpointSettings, Checkpoints};
use clix_workspace::Folder;

/// This process's open inotify instances.
fn inotify_instances() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy() == "anon_inode:inotify")
        .count()
}

#[test]
fn inotify_starts_at_the_second_call_and_sees_its_changes() {
    let (state, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir(ws.path().join("src")).unwrap();
    let folder = Folder::open(ws.path()).unwrap();
    let mut cp = Checkpoints::open(state.path(), folder, "r", CheckpointSettings::default()).unwrap();
    cp.before_call().unwrap();
    std::fs::write(ws.path().join("src/a.txt"), "a\n").unwrap();
    assert_eq!(cp.after_call("one").unwrap().counts(), (1, 0, 0));
    assert_eq!(inotify_instances(), 0, "one call, no inotify");
    for (n, name) in ["b", "c"].into_iter().enumerate() {
        cp.before_call().unwrap();
        assert_eq!(inotify_instances(), 1, "from the second call on");
        std::fs::write(ws.path().join(format!("src/{name}.txt")), "x\n").unwrap();
        assert_eq!(cp.after_call(name).unwrap().counts(), (1, 0, 0), "call {}", n + 2);
    }
}

/// The kept tree (`tree.json`, for the next clix) is written when it
/// changes, not again around a call that changed nothing.
#[test]
fn the_kept_tree_is_written_only_when_it_changes() {
    let (state, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let written = |state: &std::path::Path| {
        let store = std::fs::read_dir(state.join("checkpoints")).unwrap().next().unwrap().unwrap().path();
        std::fs::metadata(store.join("tree.json")).unwrap().modified().unwrap()
    };
    let open = || {
        let folder = Folder::open(ws.path()).unwrap();
        Checkpoints::open(state.path(), folder, "r", CheckpointSettings::default()).unwrap()
    };
    let mut cp = open();
    cp.before_call().unwrap();
    let first = written(state.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(cp.after_call("true").unwrap().counts(), (0, 0, 0));
    drop(cp);
    assert_eq!(written(state.path()), first, "a call that changed nothing");
    // A later clix, no edits meanwhile: the same.
    let mut cp = open();
    cp.before_call().unwrap();
    assert_eq!(written(state.path()), first, "a start after no edits");
    std::fs::write(ws.path().join("b.txt"), "b\n").unwrap();
    assert_eq!(cp.after_call("touch b").unwrap().counts(), (1, 0, 0));
    assert_ne!(written(state.path()), first, "a change is kept");
}
