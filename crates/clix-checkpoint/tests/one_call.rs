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
